//! BASE secondary indexes: kept up to date in the background, in batches, never on
//! the write's critical path.
//!
//! An index is a hidden tree (a [`Table`] with no name in the catalog) whose keys are
//! `value ‖ primary key`, encoded so that byte order is RethinkDB's order of the values
//! (booleans < null < numbers < strings), and whose documents are the primary keys as JSON.
//!
//! The committer hands the index worker every change to an indexed table — key, old document,
//! new document — after applying the group and before making it visible. The worker turns each
//! batch of changes into index entries (delete the old values' entries, put the new ones'),
//! builds new indexes by scanning the table in key order (a change to a key the scan has not
//! reached yet is left to the scan), and wakes whoever waits for it to catch up: queries asking
//! for fresh results, `index_wait`, and writes made with `wait_for_indexes`.
//!
//! Index entries are not journaled. A checkpoint writes index trees out like tables, so they
//! need not fit in memory, but only the checkpoint a clean close makes is a point where every
//! index is exact; after a crash, indexes are rebuilt in the background from the tables.

use std::collections::{BTreeSet, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use crate::doc::Doc;
use crate::error::{Error, ErrorCode, Result};
use crate::key::{Key, KeyRange};
use crate::run::Fetch;
pub(crate) use crate::table::{index_not_found as not_found, Build, Change, Index};
use crate::table::{Catalog, Table};

/// An index's definition and state, as `list_indexes` reports it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct IndexInfo {
    pub name: String,
    /// Dotted field path, e.g. `address.city`.
    pub field: String,
    /// Each element of an array value is indexed.
    pub multi: bool,
    /// Built: every document of the table is in it (queries may still wait to be fresh).
    pub ready: bool,
    /// Documents the build has indexed so far (all of them once ready).
    pub indexed: u64,
}

/// Longest encoded value kept in an entry; longer strings are cut (queries re-check documents).
const MAX_VALUE_BYTES: usize = 512;

impl Index {
    /// `documents`: the table's, which a built index holds.
    pub fn info(&self, documents: u64) -> IndexInfo {
        let (ready, indexed) = match &*self.build.lock().unwrap() {
            Build::Building { indexed, .. } => (false, *indexed),
            Build::Ready => (true, documents),
        };
        IndexInfo { name: self.name.clone(), field: self.field.clone(), multi: self.multi, ready, indexed }
    }

    pub fn ready(&self) -> bool {
        matches!(*self.build.lock().unwrap(), Build::Ready)
    }

    /// The values `doc` is indexed under, encoded.
    fn values(&self, doc: &Value) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        let Some(v) = self.path.iter().try_fold(doc, |v, f| v.get(f)) else { return out };
        match v {
            Value::Array(items) if self.multi => out.extend(items.iter().filter_map(encode_value)),
            v => out.extend(encode_value(v)),
        }
        out
    }

    /// True when `doc` has a value for which `matches` holds (queries re-check documents, since
    /// long values are cut in entries).
    fn doc_matches(&self, doc: &str, matches: impl Fn(&str) -> bool) -> bool {
        crate::doc::parse_value(doc).is_some_and(|d| self.values(&d).iter().any(|v| matches(v)))
    }
}

/// Encodes a value so that byte order is RethinkDB's order; `None` for arrays and objects.
pub(crate) fn encode_value(v: &Value) -> Option<String> {
    Some(match v {
        Value::Bool(b) => {
            if *b {
                "B1".into()
            } else {
                "B0".into()
            }
        }
        Value::Null => "C".into(),
        Value::Number(n) => encode_number(n.as_f64()?),
        Value::String(s) => encode_string(s),
        _ => return None,
    })
}

fn encode_number(n: f64) -> String {
    let n = if n == 0.0 { 0.0 } else { n };
    let bits = n.to_bits();
    let ordered = if bits >> 63 == 1 { !bits } else { bits | 1 << 63 };
    format!("N{ordered:016x}")
}

/// `S`, then the string with NUL escaped as NUL 0x01, cut to [`MAX_VALUE_BYTES`]. Entries put
/// NUL NUL after a value, which sorts before any escaped NUL or other byte, so a value's
/// entries sort together and before longer values it is a prefix of.
fn encode_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 1);
    out.push('S');
    for c in s.chars() {
        if out.len() + c.len_utf8() + 1 > MAX_VALUE_BYTES {
            break;
        }
        if c == '\0' {
            out.push_str("\0\u{1}");
        } else {
            out.push(c);
        }
    }
    out
}

fn encode_key(k: &Key) -> String {
    match k {
        Key::Num(n) => encode_number(*n),
        Key::Str(s) => encode_string(s),
        // Hex keeps the entry key a string; entries of one value still sort by primary key.
        Key::Datum(b) => b.iter().fold(String::from("D"), |mut out, c| {
            out.push_str(&format!("{c:02x}"));
            out
        }),
    }
}

fn entry_key(value: &str, pk: &Key) -> Key {
    Key::Str(format!("{value}\0\0{}", encode_key(pk)).into())
}

/// Whether an entry key's value is whole (not cut at [`MAX_VALUE_BYTES`]) and within the
/// range, so the entry alone answers for its document.
fn whole_value(entry: &Key, within: impl Fn(&str) -> bool) -> bool {
    let Key::Str(entry) = entry else { return false };
    // The value ends at the first NUL NUL (a NUL inside a string value is NUL 0x01).
    let Some(end) = entry.find("\0\0") else { return false };
    let value = &entry[..end];
    // A cut string is at least MAX_VALUE_BYTES - 4 bytes long (a character is at most 4).
    !(value.starts_with('S') && value.len() + 4 >= MAX_VALUE_BYTES) && within(value)
}

/// All entries of one encoded value.
#[cfg(test)]
fn value_range(value: &str) -> (Bound<Key>, Bound<Key>) {
    (
        Bound::Included(Key::Str(format!("{value}\0\0").into())),
        Bound::Excluded(Key::Str(format!("{value}\0\u{1}").into())),
    )
}

/// One side of `between` over entry keys: the bound, and the encoded value with whether it is closed.
type EntryBound = (Bound<Key>, Option<(String, bool)>);

/// The entry-key bound for one side of `between`, and the encoded value with whether it is
/// closed (to re-check documents). A value's entries lie between `value NUL NUL` and
/// `value NUL 0x01`: a closed lower bound starts before them, an open one after them; a closed
/// upper bound ends after them, an open one before them.
fn entry_bound(bound: &ValueBound, lower: bool) -> Result<EntryBound> {
    let (v, closed) = match bound {
        ValueBound::Unbounded => return Ok((Bound::Unbounded, None)),
        ValueBound::Closed(v) => (v, true),
        ValueBound::Open(v) => (v, false),
    };
    let e = encode_value(v)
        .ok_or_else(|| Error::invalid(format!("index bounds are strings, numbers, booleans or null; got {v}")))?;
    let key = Key::Str(if closed == lower { format!("{e}\0\0") } else { format!("{e}\0\u{1}") }.into());
    Ok((if lower { Bound::Included(key) } else { Bound::Excluded(key) }, Some((e, closed))))
}

type Waiter = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Progress {
    changes: VecDeque<(u64, Vec<Change>)>,
    /// Newest sequence number queued, and the newest whose changes are all applied.
    queued_upto: u64,
    applied_upto: u64,
    /// The worker is applying a batch it took off the queue.
    busy: bool,
    /// Callbacks to run once everything queued before them is applied.
    waiters: Vec<(u64, Waiter)>,
    /// An index started building.
    build_pending: bool,
    stop: bool,
}

/// The index worker's queue and the waits on it.
#[derive(Default)]
pub(crate) struct IndexWorker {
    progress: Mutex<Progress>,
    wake: Condvar,
    advanced: Condvar,
}

/// Documents the build indexes per step, between batches of changes.
const BUILD_STEP: usize = 2000;

impl IndexWorker {
    /// Queues the changes of the group ending at `seq` (before it becomes visible).
    pub fn push(&self, seq: u64, changes: Vec<Change>) {
        let mut p = self.progress.lock().unwrap();
        p.queued_upto = seq;
        p.changes.push_back((seq, changes));
        drop(p);
        self.wake.notify_one();
    }

    pub fn start_build(&self) {
        self.progress.lock().unwrap().build_pending = true;
        self.wake.notify_one();
    }

    /// Runs `f` once every change queued so far is applied (now, if it is).
    pub fn after_pending(&self, f: Waiter) {
        let mut p = self.progress.lock().unwrap();
        if p.changes.is_empty() && !p.busy {
            drop(p);
            f();
        } else {
            let target = p.queued_upto;
            p.waiters.push((target, f));
        }
    }

    /// Blocks until changes up to `seq` are applied and `ready()` holds, or `deadline` passes.
    pub fn wait(&self, seq: u64, ready: impl Fn() -> bool, deadline: Instant) -> bool {
        let mut p = self.progress.lock().unwrap();
        loop {
            if p.changes.is_empty() && !p.busy && ready() || p.applied_upto >= seq && ready() {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            // Builds advance without changes: poll readiness at least every 10 ms.
            p = self.advanced.wait_timeout(p, (deadline - now).min(Duration::from_millis(10))).unwrap().0;
        }
    }

    pub fn stop(&self) {
        self.progress.lock().unwrap().stop = true;
        self.wake.notify_one();
    }

    /// Blocks until the queue is empty (before a clean close's checkpoint).
    pub fn drain(&self) {
        let mut p = self.progress.lock().unwrap();
        while !p.changes.is_empty() || p.busy {
            p = self.advanced.wait(p).unwrap();
        }
    }

    /// The worker thread.
    pub fn run(&self, catalog: Arc<RwLock<Catalog>>) {
        loop {
            let batch: Vec<(u64, Vec<Change>)> = {
                let mut p = self.progress.lock().unwrap();
                while p.changes.is_empty() && !p.build_pending && !p.stop {
                    p = self.wake.wait(p).unwrap();
                }
                if p.stop {
                    return;
                }
                p.busy = true;
                p.build_pending = false;
                p.changes.drain(..).collect()
            };
            let upto = batch.last().map(|(s, _)| *s);
            let changes: Vec<Change> = batch.into_iter().flat_map(|(_, c)| c).collect();
            apply(&catalog, changes);
            let building = build_step(&catalog);
            let mut p = self.progress.lock().unwrap();
            p.busy = false;
            if let Some(upto) = upto {
                p.applied_upto = upto;
            }
            p.build_pending |= building;
            let done: Vec<Waiter> = {
                let applied = p.applied_upto;
                let (ready, waiting): (Vec<_>, Vec<_>) = p.waiters.drain(..).partition(|(s, _)| *s <= applied);
                p.waiters = waiting;
                ready.into_iter().map(|(_, f)| f).collect()
            };
            drop(p);
            self.advanced.notify_all();
            for f in done {
                f();
            }
        }
    }
}

/// Applies changes to the indexes of their tables.
fn apply(catalog: &RwLock<Catalog>, changes: Vec<Change>) {
    let catalog = catalog.read().unwrap();
    for change in changes {
        let Some(table) = catalog.by_id.get(&change.table_id) else { continue };
        let indexes = table.indexes.read().unwrap();
        if indexes.is_empty() {
            continue;
        }
        let parse = |d: &Option<Doc>| d.as_ref().and_then(|d| crate::doc::parse_value(d));
        let (old, new) = (parse(&change.old), parse(&change.new));
        for index in indexes.iter() {
            if let Build::Building { after, .. } = &*index.build.lock().unwrap() {
                if after.as_ref().is_none_or(|a| change.key > *a) {
                    continue; // the build will read this document as it is then
                }
            }
            let before = old.as_ref().map(|d| index.values(d)).unwrap_or_default();
            let after = new.as_ref().map(|d| index.values(d)).unwrap_or_default();
            let mut tree = index.tree.data.write();
            for v in before.difference(&after) {
                index.tree.write_entry(&mut tree, entry_key(v, &change.key), None);
            }
            let pk: Doc = change.key.to_json().into();
            for v in after.difference(&before) {
                index.tree.write_entry(&mut tree, entry_key(v, &change.key), Some(pk.clone()));
            }
        }
    }
}

/// Indexes the next documents of every index still building; true while some are.
fn build_step(catalog: &RwLock<Catalog>) -> bool {
    let tables: Vec<Arc<Table>> = catalog.read().unwrap().by_name.values().cloned().collect();
    let mut more = false;
    for table in tables {
        for index in table.indexes.read().unwrap().iter() {
            let Build::Building { after, indexed } = index.build.lock().unwrap().clone() else { continue };
            let range =
                KeyRange { lower: after.clone().map_or(Bound::Unbounded, Bound::Excluded), upper: Bound::Unbounded };
            let rows = {
                let data = table.data.read();
                match data.scan(&range, BUILD_STEP, false) {
                    Ok(rows) => rows,
                    Err(_) => continue, // a damaged run: reads report it; the build stays unready
                }
            };
            {
                let mut tree = index.tree.data.write();
                for (key, doc) in &rows {
                    let Some(doc) = crate::doc::parse_value(doc) else { continue };
                    let pk: Doc = key.to_json().into();
                    for v in index.values(&doc) {
                        index.tree.write_entry(&mut tree, entry_key(&v, key), Some(pk.clone()));
                    }
                }
            }
            let indexed = indexed + rows.len() as u64;
            *index.build.lock().unwrap() = match rows.last() {
                Some((last, _)) if rows.len() == BUILD_STEP => {
                    more = true;
                    Build::Building { after: Some(last.clone()), indexed }
                }
                _ => Build::Ready,
            };
        }
    }
    more
}

/// A bound on index values for `between`.
#[derive(Debug, Clone)]
pub enum ValueBound {
    Unbounded,
    Closed(Value),
    Open(Value),
}

impl Index {
    /// Documents whose field has one of `values` (each document once per matching value).
    pub fn get_all(&self, table: &Table, values: &[Value]) -> Result<Vec<(Key, Doc)>> {
        let mut ranges = Vec::with_capacity(values.len());
        for value in values {
            if encode_value(value).is_none() {
                return Err(Error::invalid(format!(
                    "index values are strings, numbers, booleans or null; got {value}"
                )));
            }
            ranges.push((ValueBound::Closed(value.clone()), ValueBound::Closed(value.clone())));
        }
        let mut out = Vec::new();
        self.walk(table, &ranges, None, false, 1024, &mut |key, doc| {
            out.push((key, doc));
            true
        })?;
        Ok(out)
    }

    /// Documents whose field value lies between the bounds, in index order.
    pub fn between(
        &self,
        table: &Table,
        lower: &ValueBound,
        upper: &ValueBound,
        limit: usize,
        reverse: bool,
    ) -> Result<Vec<(Key, Doc)>> {
        let mut out = Vec::new();
        if limit == 0 {
            return Ok(out);
        }
        let ranges = [(lower.clone(), upper.clone())];
        self.walk(table, &ranges, None, reverse, limit.min(1024), &mut |key, doc| {
            out.push((key, doc));
            out.len() < limit
        })?;
        Ok(out)
    }

    /// Walks the entries of `ranges` (lower, upper), one range after the other, each in index
    /// order (reversed if asked), from just after `after` (a range's position and an entry key,
    /// as returned before), fetching each entry's document and calling `visit` with those whose
    /// value is really in range (entries cut long values). `visit` returns whether to go on.
    /// Returns where to resume — the last entry visited — when `visit` stopped the walk, and
    /// `None` when the ranges are exhausted. `chunk` is how many entries to read at a time at
    /// first (the caller's expected need; it grows to 1024).
    pub fn walk(
        &self,
        table: &Table,
        ranges: &[(ValueBound, ValueBound)],
        after: Option<(usize, Key)>,
        reverse: bool,
        chunk: usize,
        visit: &mut dyn FnMut(Key, Doc) -> bool,
    ) -> Result<Option<(usize, Key)>> {
        self.walk_entries(table, ranges, after, reverse, chunk, true, &mut |key, doc| {
            visit(key, doc.expect("documents are fetched"))
        })
    }

    /// `walk`, where `visit` gets `None` instead of the document for an entry whose value is
    /// whole in its key (not cut), unless `fetch_all`: counting a fresh index range needs no
    /// document then (entries of a fresh index are exactly its table's values).
    #[allow(clippy::too_many_arguments)]
    pub fn walk_entries(
        &self,
        table: &Table,
        ranges: &[(ValueBound, ValueBound)],
        after: Option<(usize, Key)>,
        reverse: bool,
        chunk: usize,
        fetch_all: bool,
        visit: &mut dyn FnMut(Key, Option<Doc>) -> bool,
    ) -> Result<Option<(usize, Key)>> {
        let first = after.as_ref().map_or(0, |(i, _)| *i);
        let mut chunk = chunk.clamp(1, 1024);
        for (at, (lower, upper)) in ranges.iter().enumerate().skip(first) {
            let (lower, lo) = entry_bound(lower, true)?;
            let (upper, hi) = entry_bound(upper, false)?;
            let within = |v: &str| {
                lo.as_ref().is_none_or(|(l, closed)| if *closed { v >= l.as_str() } else { v > l.as_str() })
                    && hi.as_ref().is_none_or(|(h, closed)| if *closed { v <= h.as_str() } else { v < h.as_str() })
            };
            let mut range = KeyRange { lower, upper };
            if let Some((i, entry)) = &after {
                if *i == at {
                    if reverse {
                        range.upper = Bound::Excluded(entry.clone());
                    } else {
                        range.lower = Bound::Excluded(entry.clone());
                    }
                }
            }
            loop {
                let entries = self.tree.data.read().scan(&range, chunk, reverse)?;
                let keys = entries.iter().map(|(_, pk)| self.primary_key(pk)).collect::<Result<Vec<_>>>()?;
                // The entries whose value is whole need no document (when the caller allows).
                let whole: Vec<bool> = entries.iter().map(|(e, _)| !fetch_all && whole_value(e, within)).collect();
                let wanted: Vec<Key> = keys.iter().zip(&whole).filter(|(_, w)| !**w).map(|(k, _)| k.clone()).collect();
                let mut docs = table.get_many(&wanted, Fetch::Wait)?.unwrap_or_default().into_iter();
                for (((entry, _), key), whole) in entries.iter().zip(keys).zip(whole) {
                    let doc = if whole {
                        None
                    } else {
                        match docs.next().flatten() {
                            Some(doc) if self.doc_matches(&doc, within) => Some(doc),
                            _ => continue,
                        }
                    };
                    if !visit(key, doc) {
                        return Ok(Some((at, entry.clone())));
                    }
                }
                match entries.last() {
                    Some((last, _)) if entries.len() == chunk => {
                        if reverse {
                            range.upper = Bound::Excluded(last.clone());
                        } else {
                            range.lower = Bound::Excluded(last.clone());
                        }
                        chunk = (chunk * 2).min(1024);
                    }
                    _ => break,
                }
            }
        }
        Ok(None)
    }

    /// The primary key an entry holds (as JSON text).
    fn primary_key(&self, pk: &str) -> Result<Key> {
        match serde_json::from_str::<Value>(pk).map(|v| Key::from_value(&v)) {
            Ok(Ok(key)) => Ok(key),
            _ => Err(Error::corrupt_checkpoint(format!("index `{}` holds a bad primary key {pk}", self.name))),
        }
    }
}

pub(crate) fn not_ready(table: &str, info: &IndexInfo) -> Error {
    Error::new(
        ErrorCode::IndexNotReady,
        format!(
            "index `{}` on table `{table}` is still being built ({} documents indexed so far); wait for it (index_wait) or ask for fresh results",
            info.name, info.indexed
        ),
    )
    .with_table(table)
    .with_index(&info.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoded_values_sort_in_rethinkdb_order() {
        let values = [
            Value::Bool(false),
            Value::Bool(true),
            Value::Null,
            serde_json::json!(-1e300),
            serde_json::json!(-2.5),
            serde_json::json!(0),
            serde_json::json!(1),
            serde_json::json!(10),
            serde_json::json!(""),
            serde_json::json!("a"),
            serde_json::json!("a\u{0}b"),
            serde_json::json!("ab"),
            serde_json::json!("b"),
        ];
        let encoded: Vec<String> = values.iter().map(|v| encode_value(v).unwrap()).collect();
        let mut sorted = encoded.clone();
        sorted.sort();
        assert_eq!(encoded, sorted);
        // A value's entries sort together, before any longer value it is a prefix of.
        let (a1, a2, ab) = (
            entry_key(&encoded[9], &Key::from("zzz")),
            entry_key(&encoded[9], &Key::from(1.0)),
            entry_key(&encoded[10], &Key::from("0")),
        );
        let (lo, hi) = value_range(&encoded[9]);
        let r = KeyRange { lower: lo, upper: hi };
        assert!(
            crate::tree::range_contains(&r, &a1)
                && crate::tree::range_contains(&r, &a2)
                && !crate::tree::range_contains(&r, &ab)
        );
        assert!(a1 < ab && a2 < ab);
        assert_eq!(encode_value(&serde_json::json!([1])), None);
    }
}
