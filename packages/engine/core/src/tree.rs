//! One table's documents as a log-structured merge tree: the *active* memtable takes writes;
//! at a checkpoint it is *frozen* and written out as a run file; runs are merged in the
//! background (see `merge.rs`). A read looks newest first: active, frozen, then runs newest to
//! oldest, and the first entry found for a key (a document or a delete) is the answer.

use std::ops::Bound;
use std::sync::Arc;

use crate::cache::BlockCache;
use crate::error::Result;
use crate::key::{Key, KeyRange};
pub(crate) use crate::memtable::Memtable;
use crate::run::{Fetch, Probe, Run};
use crate::table::Doc;

/// Rough memory one memtable entry costs beyond its document (B-tree slot, key, `Arc`).
pub(crate) const ENTRY_OVERHEAD: u64 = 64;

pub(crate) fn entry_size(doc: &Option<Doc>) -> u64 {
    ENTRY_OVERHEAD + doc.as_ref().map_or(0, |d| d.len() as u64)
}

#[derive(Default)]
pub(crate) struct Tree {
    pub active: Memtable,
    pub active_bytes: u64,
    /// The memtable a checkpoint is writing out, and its size.
    pub frozen: Option<(Arc<Memtable>, u64)>,
    /// Oldest first. Added to only through `add_run`, which keeps `runs_last_key`.
    pub runs: Vec<Arc<Run>>,
    /// No run holds a key above this. A write's key above it needs no look at the runs: an
    /// import's ascending ids would otherwise compare with every run's key range, and with a
    /// few hundred runs behind a long merge that cost more than the rest of the write. A merge
    /// keeps it an upper bound (it never adds keys), so only new runs move it.
    runs_last_key: Option<Key>,
    /// Live documents and their bytes (kept exact on every write, so `count` is O(1)).
    pub documents: u64,
    pub bytes: u64,
}

impl Tree {
    /// The current document for `key`.
    pub fn get(&self, key: &Key, cache: &BlockCache) -> Result<Option<Doc>> {
        match self.get_in_memory(key) {
            Some(entry) => Ok(entry),
            None if self.runs_last_key.as_ref().map_or(true, |last| key > last) => Ok(None),
            None => get_in_runs(&self.runs, key, cache, Fetch::Wait).map(Probe::into_doc),
        }
    }

    /// Adds the newest run.
    pub fn add_run(&mut self, run: Arc<Run>) {
        if let Some(last) = run.last_key() {
            if self.runs_last_key.as_ref().map_or(true, |l| last > l) {
                self.runs_last_key = Some(last.clone());
            }
        }
        self.runs.push(run);
    }

    /// The memtables' entry for `key` (a document or a delete), if they hold one; `None` means
    /// the answer is in the runs.
    pub fn get_in_memory(&self, key: &Key) -> Option<Option<Doc>> {
        if let Some(entry) = self.active.get(key) {
            return Some(entry.clone());
        }
        self.frozen.as_ref().and_then(|(m, _)| m.get(key)).cloned()
    }

    /// Records a change whose previous document was `old`; returns the memtable bytes added.
    pub fn set(&mut self, key: Key, doc: Option<Doc>, old: Option<&Doc>) -> i64 {
        match (&doc, old) {
            (Some(d), None) => {
                self.documents += 1;
                self.bytes += d.len() as u64;
            }
            (Some(d), Some(o)) => self.bytes = self.bytes + d.len() as u64 - o.len() as u64,
            (None, Some(o)) => {
                self.documents -= 1;
                self.bytes -= o.len() as u64;
            }
            (None, None) => {}
        }
        self.write(key, doc)
    }

    /// Puts an entry in the active memtable; returns the memtable bytes added.
    pub fn write(&mut self, key: Key, doc: Option<Doc>) -> i64 {
        let added = entry_size(&doc);
        let removed = self.active.insert(key, doc).map_or(0, |e| entry_size(&e));
        self.active_bytes = self.active_bytes + added - removed;
        added as i64 - removed as i64
    }

    /// Moves the active memtable to `frozen` for a checkpoint; `None` when it is empty.
    pub fn freeze(&mut self) -> Option<Arc<Memtable>> {
        if self.active.is_empty() || self.frozen.is_some() {
            return None;
        }
        let m = Arc::new(std::mem::take(&mut self.active));
        self.frozen = Some((m.clone(), std::mem::take(&mut self.active_bytes)));
        Some(m)
    }

    /// Memtable bytes still frozen (being written out).
    pub fn frozen_bytes(&self) -> u64 {
        self.frozen.as_ref().map_or(0, |(_, b)| *b)
    }

    /// Documents in key order (or reverse) within `range`, at most `limit`.
    pub fn scan(&self, range: &KeyRange, limit: usize, reverse: bool) -> Result<Vec<(Key, Doc)>> {
        fn memtable<'a>(m: &'a Memtable, range: &KeyRange, reverse: bool) -> Source<'a> {
            Box::new(m.range(range, reverse).map(|(k, v)| Ok((k.clone(), v.clone()))))
        }
        let start = match if reverse { &range.upper } else { &range.lower } {
            Bound::Included(k) | Bound::Excluded(k) => Some(k),
            Bound::Unbounded => None,
        };
        let mut sources: Vec<Source<'_>> = vec![memtable(&self.active, range, reverse)];
        if let Some((m, _)) = &self.frozen {
            sources.push(memtable(m, range, reverse));
        }
        for run in self.runs.iter().rev() {
            // A run starts at the block holding the bound: skip what precedes the range.
            let it = run.iter(start, reverse);
            sources.push(Box::new(it.skip_while(move |e| e.as_ref().is_ok_and(|(k, _)| before_start(range, k, reverse)))));
        }
        let mut out = Vec::new();
        for entry in MergingIter::new(sources, reverse)? {
            let (key, doc) = entry?;
            if !range_contains(range, &key) || out.len() >= limit {
                break;
            }
            if let Some(doc) = doc {
                out.push((key, doc));
            }
        }
        Ok(out)
    }
}

/// The entry for `key` in `runs` (oldest first), newest run first. Runs are immutable, so a
/// reader may search a snapshot of them without the table's lock.
pub(crate) fn get_in_runs(runs: &[Arc<Run>], key: &Key, cache: &BlockCache, fetch: Fetch) -> Result<Probe> {
    if runs.is_empty() {
        return Ok(Probe::Absent);
    }
    let mut encoded = Vec::new(); // for the bloom filters; not made when no run spans `key`
    for run in runs.iter().rev() {
        if !run.spans(key) {
            continue;
        }
        if encoded.is_empty() {
            key.encode(&mut encoded);
        }
        match run.get(key, &encoded, cache, fetch)? {
            Probe::Absent => continue,
            found => return Ok(found),
        }
    }
    Ok(Probe::Absent)
}

/// True when `k` comes before the range in scan order (so a scan has not reached it yet).
fn before_start(range: &KeyRange, k: &Key, reverse: bool) -> bool {
    match (reverse, &range.lower, &range.upper) {
        (false, Bound::Included(l), _) => k < l,
        (false, Bound::Excluded(l), _) => k <= l,
        (true, _, Bound::Included(u)) => k > u,
        (true, _, Bound::Excluded(u)) => k >= u,
        _ => false,
    }
}

pub(crate) fn range_contains(range: &KeyRange, k: &Key) -> bool {
    let above = match &range.lower {
        Bound::Included(l) => k >= l,
        Bound::Excluded(l) => k > l,
        Bound::Unbounded => true,
    };
    let below = match &range.upper {
        Bound::Included(u) => k <= u,
        Bound::Excluded(u) => k < u,
        Bound::Unbounded => true,
    };
    above && below
}

pub(crate) type Source<'a> = Box<dyn Iterator<Item = Result<(Key, Option<Doc>)>> + 'a>;

/// Merges sorted sources, given newest first, into one sorted stream with one entry per key:
/// the newest source's (deletes included; the caller decides what they mean).
pub(crate) struct MergingIter<'a> {
    sources: Vec<Source<'a>>,
    heads: Vec<Option<(Key, Option<Doc>)>>,
    reverse: bool,
}

impl<'a> MergingIter<'a> {
    pub fn new(mut sources: Vec<Source<'a>>, reverse: bool) -> Result<Self> {
        let heads = sources.iter_mut().map(|s| s.next().transpose()).collect::<Result<_>>()?;
        Ok(MergingIter { sources, heads, reverse })
    }

    fn step(&mut self) -> Result<Option<(Key, Option<Doc>)>> {
        let mut best: Option<usize> = None;
        for (i, h) in self.heads.iter().enumerate() {
            let Some((k, _)) = h else { continue };
            let better = match best.and_then(|b| self.heads[b].as_ref()) {
                None => true,
                Some((bk, _)) => if self.reverse { k > bk } else { k < bk },
            };
            if better {
                best = Some(i);
            }
        }
        let Some(best) = best else { return Ok(None) };
        let key = self.heads[best].as_ref().unwrap().0.clone();
        let mut winner = None;
        for i in best..self.heads.len() {
            if self.heads[i].as_ref().is_some_and(|(k, _)| *k == key) {
                let next = self.sources[i].next().transpose()?;
                let (_, doc) = std::mem::replace(&mut self.heads[i], next).unwrap();
                winner.get_or_insert(doc);
            }
        }
        Ok(Some((key, winner.unwrap())))
    }
}

impl Iterator for MergingIter<'_> {
    type Item = Result<(Key, Option<Doc>)>;
    fn next(&mut self) -> Option<Self::Item> {
        self.step().transpose()
    }
}
