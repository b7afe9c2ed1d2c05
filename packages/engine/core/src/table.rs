//! Tables, and how a write operation changes them. A table's documents live in a [`Tree`].

use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, RwLock};

use crate::cache::BlockCache;

use crate::doc::{Doc, PreparedDoc, PreparedDocs};
use crate::error::{Error, ErrorCode, Result};
use crate::feed::{Feed, FeedChange};
use crate::key::Key;
use crate::mutation::{self, GroupEncoder, Mutation};
use crate::options::Conflict;
use crate::run::{Fetch, Probe};
use crate::stats::Counters;
use crate::tree::{get_in_runs, RunTotals, Tree};

/// One document that could not be written, by its position in the batch.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct DocumentError {
    /// 0-based line (NDJSON, blank lines included) or array element.
    pub index: u64,
    pub message: String,
}

/// The outcome of a write, in RethinkDB's shape plus `document_errors`.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct WriteResult {
    pub inserted: u64,
    pub replaced: u64,
    pub unchanged: u64,
    pub deleted: u64,
    pub skipped: u64,
    pub errors: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub generated_keys: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub document_errors: Vec<DocumentError>,
}

impl WriteResult {
    fn fail(&mut self, index: u64, message: String) {
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(message.clone());
        }
        self.document_errors.push(DocumentError { index, message });
    }

    /// Documents this write changed.
    pub(crate) fn written(&self) -> u64 {
        self.inserted + self.replaced + self.deleted
    }
}

/// What every table shares: the block cache, and the counters its memtable sizes add to.
#[derive(Clone)]
pub(crate) struct Env {
    pub cache: Arc<BlockCache>,
    pub counters: Arc<Counters>,
}

/// Documents a write applies between two chances for readers to take the table's lock (about
/// 100 µs of work): a read from memory waits for the lock at most `READ_LOCK_PATIENCE`.
const YIELD_EVERY: usize = 64;

/// How long a read that must not wait on the disk (`Fetch::IfCached`, on Node's thread) waits
/// for the table's lock while the committer applies a batch, before it leaves the read to the
/// thread pool: longer than one `YIELD_EVERY` stretch of an apply, far shorter than a trip
/// to the pool on a busy machine.
const READ_LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_micros(250);

pub(crate) struct Table {
    pub id: u32,
    pub name: String,
    pub primary_key: String,
    /// parking_lot's lock, for `bump`: a long insert yields it to waiting readers.
    pub data: parking_lot::RwLock<Tree>,
    /// The tree's `run_totals`, read without its lock.
    pub run_totals: Arc<RunTotals>,
    pub env: Env,
    /// Secondary indexes on this table (empty for an index's own hidden tree).
    pub indexes: RwLock<Vec<Arc<Index>>>,
    /// Change feeds subscribed to this table: every change applied is pushed to each.
    pub feeds: RwLock<Vec<Arc<Feed>>>,
}

impl Table {
    pub fn new(id: u32, name: String, primary_key: String, env: &Env) -> Arc<Table> {
        let tree = Tree::default();
        Arc::new(Table {
            id,
            name,
            primary_key,
            run_totals: tree.run_totals.clone(),
            data: parking_lot::RwLock::new(tree),
            env: env.clone(),
            indexes: RwLock::default(),
            feeds: RwLock::default(),
        })
    }

    /// The current document for `key`.
    pub fn get(&self, key: &Key) -> Result<Option<Doc>> {
        Ok(self.get_many(std::slice::from_ref(key), Fetch::Wait)?.and_then(|mut docs| docs.pop()).flatten())
    }

    /// The documents for `keys`, in order; `None` if `fetch` is `IfCached` and they could only
    /// be read by waiting: on the disk, or longer than `READ_LOCK_PATIENCE` for the table's
    /// lock while the committer applies a batch. Memtables are read under that lock; runs after
    /// it is released, from a snapshot of the list, so a read that waits on the disk never holds
    /// up the committer. (A run a merge deletes stays readable through the handle the snapshot
    /// holds.)
    pub fn get_many(&self, keys: &[Key], fetch: Fetch) -> Result<Option<Vec<Option<Doc>>>> {
        let (found, runs) = {
            let tree = match fetch {
                Fetch::Wait => self.data.read(),
                Fetch::IfCached => match self.data.try_read_for(READ_LOCK_PATIENCE) {
                    Some(tree) => tree,
                    None => return Ok(None),
                },
            };
            (keys.iter().map(|k| tree.get_in_memory(k)).collect::<Vec<_>>(), tree.runs.clone())
        };
        let mut docs = Vec::with_capacity(keys.len());
        for (key, found) in keys.iter().zip(found) {
            docs.push(match found {
                Some(entry) => entry,
                None => match get_in_runs(&runs, key, &self.env.cache, fetch)? {
                    Probe::NotInMemory => return Ok(None),
                    probe => probe.into_doc(),
                },
            });
        }
        Ok(Some(docs))
    }

    /// Records a change in the tree and the memtable-size counter.
    fn set(&self, tree: &mut Tree, key: Key, doc: Option<Doc>, old: Option<&Doc>) {
        let added = tree.set(key, doc, old);
        self.count_memtable(added);
    }

    /// Writes an index entry (no document counts: an index tree counts nothing).
    pub fn write_entry(&self, tree: &mut Tree, key: Key, doc: Option<Doc>) {
        let added = tree.write(key, doc);
        self.count_memtable(added);
    }

    fn count_memtable(&self, added: i64) {
        let c = &self.env.counters.memtable_bytes;
        if added >= 0 {
            c.fetch_add(added as u64, Relaxed);
        } else {
            c.fetch_sub((-added) as u64, Relaxed);
        }
    }

    /// The feeds to push this write's changes to (usually none: one uncontended read lock).
    fn feeds(&self) -> Vec<Arc<Feed>> {
        let feeds = self.feeds.read().unwrap();
        if feeds.is_empty() {
            Vec::new()
        } else {
            feeds.clone()
        }
    }

    /// Subscribes a feed to this table's changes.
    pub fn add_feed(&self, feed: Arc<Feed>) {
        self.feeds.write().unwrap().push(feed);
    }

    /// Ends every feed of the table (dropped, or its database closing).
    pub fn close_feeds(&self) {
        for feed in self.feeds.write().unwrap().drain(..) {
            feed.close();
        }
    }

    /// Unsubscribes a feed.
    pub fn remove_feed(&self, feed: &Arc<Feed>) {
        self.feeds.write().unwrap().retain(|f| !Arc::ptr_eq(f, feed));
    }

    /// Applies a mutation read back from the journal during recovery.
    pub fn replay(&self, key: Key, doc: Option<Doc>) -> Result<()> {
        let mut tree = self.data.write();
        let old = tree.get(&key, &self.env.cache)?;
        if old.is_some() || doc.is_some() {
            self.set(&mut tree, key, doc, old.as_ref());
        }
        Ok(())
    }

    /// Applies an insert, appending the mutations it makes to `journal`.
    /// Changes go to `changes` too when the table has indexes.
    pub fn insert(
        &self,
        docs: PreparedDocs,
        conflict: Conflict,
        journal: &mut GroupEncoder,
        changes: &mut Vec<Change>,
    ) -> Result<WriteResult> {
        Ok(self.insert_docs(docs, conflict, false, journal, changes)?.pop().unwrap_or_default())
    }

    /// Applies single-document inserts sent together, in order: document `i`'s outcome is
    /// element `i`, as if it had been inserted alone (its errors are its document 0).
    pub fn insert_each(
        &self,
        docs: PreparedDocs,
        conflict: Conflict,
        journal: &mut GroupEncoder,
        changes: &mut Vec<Change>,
    ) -> Result<Vec<WriteResult>> {
        self.insert_docs(docs, conflict, true, journal, changes)
    }

    /// One result for the batch, or with `each` one per document.
    fn insert_docs(
        &self,
        docs: PreparedDocs,
        conflict: Conflict,
        each: bool,
        journal: &mut GroupEncoder,
        changes: &mut Vec<Change>,
    ) -> Result<Vec<WriteResult>> {
        if docs.primary_key != self.primary_key {
            return Err(Error::invalid(format!(
                "documents were prepared for primary key `{}` but table `{}` uses `{}`",
                docs.primary_key, self.name, self.primary_key
            )));
        }
        let mut results = vec![WriteResult::default(); if each { docs.docs.len() } else { 1 }];
        let indexed = !self.indexes.read().unwrap().is_empty();
        // Phase 1, under the read lock, so readers go on meanwhile: decide each document against
        // its current version and encode its journal record. Only the committer (this thread)
        // changes memtables, and checkpoints and merges move documents without changing them,
        // so what phase 1 sees is still current in phase 2.
        let mut puts: Vec<(Key, Doc, Option<Doc>)> = Vec::with_capacity(docs.docs.len());
        let mut batch = BatchKeys::default();
        {
            let tree = self.data.read();
            // A document's error names its line, or with `each` its own document 0.
            let position = |index: u64| if each { 0 } else { index };
            for (i, doc) in docs.docs.into_iter().enumerate() {
                let result = &mut results[if each { i } else { 0 }];
                let (index, key, json, generated) = match doc {
                    PreparedDoc::Err { index, message } => {
                        result.fail(position(index), message);
                        continue;
                    }
                    PreparedDoc::Ok { index, key, json, .. } if json.len() > journal.max_document() => {
                        let limit = journal.max_document();
                        result.fail(
                            position(index),
                            format!(
                                "document `{}` is {} bytes, over the limit of {limit} bytes",
                                key.to_json(),
                                json.len()
                            ),
                        );
                        continue;
                    }
                    PreparedDoc::Ok { index, key, json, generated } => (index, key, json, generated),
                };
                // A key written earlier in this batch: its version is that write. A key generated
                // just now (a random UUID v4) has none: looking it up would probe the filter of
                // every run it falls in, against odds of a collision near 10^-13 in 10^12 documents.
                let old = if generated {
                    None
                } else {
                    match batch.earlier(&key, &puts) {
                        Some(i) => Some(puts[i].1.clone()),
                        None => tree.get(&key, &self.env.cache)?,
                    }
                };
                let json: Doc = match &old {
                    None => {
                        result.inserted += 1;
                        json
                    }
                    Some(old) => {
                        let json: Doc = match conflict {
                            Conflict::Error => {
                                result.fail(
                                    position(index),
                                    format!("Duplicate primary key `{}`: {}", self.primary_key, key.to_json()),
                                );
                                continue;
                            }
                            Conflict::Replace if same_document(old, &json) => {
                                result.unchanged += 1;
                                continue;
                            }
                            Conflict::Replace => json,
                            Conflict::Update => match merge_documents(old, &json) {
                                None => {
                                    result.unchanged += 1;
                                    continue;
                                }
                                Some(merged) => merged.into(),
                            },
                        };
                        result.replaced += 1;
                        json
                    }
                };
                if generated {
                    if let Key::Str(s) = &key {
                        result.generated_keys.push(s.to_string());
                    }
                }
                mutation::encode_put(journal.buf(), self.id, &key, &json);
                journal.boundary();
                if indexed {
                    changes.push(Change {
                        table_id: self.id,
                        key: key.clone(),
                        old: old.clone(),
                        new: Some(json.clone()),
                    });
                }
                batch.wrote(&key, puts.len());
                puts.push((key, json, old));
            }
        }
        // Phase 2: the write lock only to put the documents in the memtable (a few µs per hundred),
        // so a read from the JS thread rarely finds the lock taken.
        let loaded: usize = puts.iter().map(|(_, json, _)| json.len()).sum();
        self.env.counters.bytes_loaded.fetch_add(loaded as u64, Relaxed);
        let feeds = self.feeds();
        let mut tree = self.data.write();
        for (i, (key, json, old)) in puts.into_iter().enumerate() {
            // Let readers in every so often (fair handover: the committer cannot take it straight back).
            if i % YIELD_EVERY == YIELD_EVERY - 1 {
                parking_lot::RwLockWriteGuard::bump(&mut tree);
            }
            for feed in &feeds {
                feed.push(FeedChange { key: key.clone(), old: old.clone(), new: Some(json.clone()) });
            }
            self.set(&mut tree, key, Some(json), old.as_ref());
        }
        Ok(results)
    }

    /// Applies a delete of `keys`, appending the mutations it makes to `journal`.
    pub fn delete(&self, keys: Vec<Key>, journal: &mut GroupEncoder, changes: &mut Vec<Change>) -> Result<WriteResult> {
        let mut result = WriteResult::default();
        let indexed = !self.indexes.read().unwrap().is_empty();
        let feeds = self.feeds();
        let mut tree = self.data.write();
        for (i, key) in keys.into_iter().enumerate() {
            if i % YIELD_EVERY == YIELD_EVERY - 1 {
                parking_lot::RwLockWriteGuard::bump(&mut tree);
            }
            match tree.get(&key, &self.env.cache)? {
                Some(old) => {
                    result.deleted += 1;
                    mutation::encode_delete(journal.buf(), self.id, &key);
                    journal.boundary();
                    if indexed {
                        changes.push(Change { table_id: self.id, key: key.clone(), old: Some(old.clone()), new: None });
                    }
                    for feed in &feeds {
                        feed.push(FeedChange { key: key.clone(), old: Some(old.clone()), new: None });
                    }
                    self.set(&mut tree, key, None, Some(&old));
                }
                None => result.skipped += 1,
            }
        }
        Ok(result)
    }
}

/// A change to an indexed table, as the committer saw it.
pub(crate) struct Change {
    pub table_id: u32,
    pub key: Key,
    pub old: Option<Doc>,
    pub new: Option<Doc>,
}

/// A secondary index on a table: its definition, build state and hidden tree. Defined here, with
/// the table that lists it, since each holds the other (the entries live in a [`Table`]); its
/// maintenance and queries are `index.rs`'s.
pub(crate) struct Index {
    pub name: String,
    pub field: String,
    /// `field` split at its dots.
    pub path: Vec<String>,
    pub multi: bool,
    /// The hidden tree holding the entries.
    pub tree: Arc<Table>,
    pub build: Mutex<Build>,
}

#[derive(Clone)]
pub(crate) enum Build {
    /// Documents with keys up to `after` are indexed.
    Building {
        after: Option<Key>,
        indexed: u64,
    },
    Ready,
}

impl Index {
    pub fn new(name: String, field: String, multi: bool, tree: Arc<Table>, ready: bool) -> Result<Index> {
        let path = parse_path(&field)?;
        let build = if ready { Build::Ready } else { Build::Building { after: None, indexed: 0 } };
        Ok(Index { name, field, path, multi, tree, build: Mutex::new(build) })
    }
}

/// Splits an index's dotted field path, refusing an empty or overlong one.
fn parse_path(field: &str) -> Result<Vec<String>> {
    let path: Vec<String> = field.split('.').map(str::to_string).collect();
    if field.is_empty() || field.len() > 255 || path.iter().any(|p| p.is_empty()) {
        return Err(Error::invalid(format!(
            "index field `{field}` is not valid: give a field name or a dotted path such as `address.city`"
        )));
    }
    Ok(path)
}

/// The error for an index `name` that `table` does not have.
pub(crate) fn index_not_found(table: &str, name: &str) -> Error {
    Error::new(ErrorCode::IndexNotFound, format!("index `{name}` does not exist on table `{table}`"))
        .with_table(table)
        .with_index(name)
}

fn same_document(old: &str, new: &str) -> bool {
    old == new
        || matches!(
            (crate::doc::parse_value(old), crate::doc::parse_value(new)),
            (Some(a), Some(b)) if a == b
        )
}

/// `old` with `new`'s fields merged in (objects recursively, as ReQL's `merge`);
/// `None` when that changes nothing.
fn merge_documents(old: &str, new: &str) -> Option<String> {
    fn merge(into: &mut serde_json::Value, from: serde_json::Value) {
        match (into, from) {
            (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
                for (k, v) in b {
                    match a.get_mut(&k) {
                        Some(slot) if slot.is_object() && v.is_object() => merge(slot, v),
                        _ => {
                            a.insert(k, v);
                        }
                    }
                }
            }
            (into, from) => *into = from,
        }
    }
    let before = crate::doc::parse_value(old)?;
    let mut after = before.clone();
    merge(&mut after, crate::doc::parse_value(new)?);
    (after != before).then(|| after.to_string())
}

/// The set of tables, by name and by id.
pub(crate) struct Catalog {
    pub env: Env,
    pub by_name: HashMap<String, Arc<Table>>,
    pub by_id: HashMap<u32, Arc<Table>>,
    pub next_table_id: u32,
    pub next_index_tree_id: u32,
}

/// Index trees take ids from here up, so they never collide with table ids in the journal.
pub(crate) const FIRST_INDEX_TREE_ID: u32 = 1 << 31;

impl Catalog {
    pub fn new(env: Env) -> Self {
        Catalog {
            env,
            by_name: HashMap::new(),
            by_id: HashMap::new(),
            next_table_id: 1,
            next_index_tree_id: FIRST_INDEX_TREE_ID,
        }
    }

    pub fn get(&self, name: &str) -> Result<&Arc<Table>> {
        self.by_name.get(name).ok_or_else(|| Error::table_not_found(name))
    }

    /// The user tables (not index trees).
    pub fn tables(&self) -> Vec<Arc<Table>> {
        self.by_name.values().cloned().collect()
    }

    pub fn add(&mut self, table: Arc<Table>) {
        // Saturating: an id from a damaged manifest must not overflow (tables stay below 2^31).
        self.next_table_id = self.next_table_id.max(table.id.saturating_add(1));
        self.by_id.insert(table.id, table.clone());
        self.by_name.insert(table.name.clone(), table);
    }

    /// Creates an index on `table` with a new, empty tree that the index worker will build.
    pub fn add_index(&mut self, table: &Arc<Table>, name: &str, field: &str, multi: bool) -> Result<()> {
        if table.indexes.read().unwrap().iter().any(|i| i.name == name) {
            return Err(Error::new(
                ErrorCode::IndexExists,
                format!("index `{name}` already exists on table `{}`", table.name),
            )
            .with_table(&table.name)
            .with_index(name));
        }
        let id = self.next_index_tree_id;
        self.next_index_tree_id += 1;
        let tree = Table::new(id, format!("#index:{}:{name}", table.id), String::new(), &self.env);
        let index = Index::new(name.to_string(), field.to_string(), multi, tree.clone(), false)?;
        self.by_id.insert(id, tree);
        table.indexes.write().unwrap().push(Arc::new(index));
        Ok(())
    }

    pub fn remove_index(&mut self, table: &Table, name: &str) -> Result<()> {
        let mut indexes = table.indexes.write().unwrap();
        let at = indexes.iter().position(|i| i.name == name).ok_or_else(|| index_not_found(&table.name, name))?;
        let index = indexes.remove(at);
        self.forget(index.tree.id);
        Ok(())
    }

    /// Takes a tree out of the catalog; the next checkpoint leaves its runs out of the manifest
    /// and deletes them.
    fn forget(&mut self, id: u32) {
        if let Some(t) = self.by_id.remove(&id) {
            self.env.counters.memtable_bytes.fetch_sub(t.data.read().active_bytes, Relaxed);
        }
    }

    /// Drops a table and its indexes' trees.
    pub fn remove(&mut self, table_id: u32) {
        let Some(t) = self.by_id.get(&table_id).cloned() else { return };
        self.by_name.remove(&t.name);
        t.close_feeds();
        for index in t.indexes.read().unwrap().iter() {
            self.forget(index.tree.id);
        }
        self.forget(table_id);
    }

    /// Applies a mutation read back from the journal during recovery.
    pub fn replay(&mut self, m: Mutation) -> Result<()> {
        let missing = |id| Error::corrupt_journal(format!("journal names table id {id}, which does not exist"));
        match m {
            Mutation::Put { table_id, key, doc } => {
                self.by_id.get(&table_id).ok_or_else(|| missing(table_id))?.replay(key, Some(doc))?
            }
            Mutation::Delete { table_id, key } => {
                self.by_id.get(&table_id).ok_or_else(|| missing(table_id))?.replay(key, None)?
            }
            Mutation::CreateTable { table_id, .. } if table_id >= FIRST_INDEX_TREE_ID => {
                return Err(Error::corrupt_journal(format!(
                    "journal creates table id {table_id}, in the range of index trees (from {FIRST_INDEX_TREE_ID})"
                )));
            }
            Mutation::CreateTable { table_id, name, primary_key } => {
                let table = Table::new(table_id, name, primary_key, &self.env);
                self.add(table)
            }
            Mutation::DropTable { table_id } => self.remove(table_id),
            Mutation::CreateIndex { table_id, name, field, multi } => {
                let table = self.by_id.get(&table_id).ok_or_else(|| missing(table_id))?.clone();
                self.add_index(&table, &name, &field, multi)?
            }
            Mutation::DropIndex { table_id, name } => {
                let table = self.by_id.get(&table_id).ok_or_else(|| missing(table_id))?.clone();
                self.remove_index(&table, &name)?
            }
        }
        Ok(())
    }
}

/// Checks a table or field name: 1–127 bytes of letters, digits, `_`, `-` and `.`.
pub(crate) fn check_name(what: &str, name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 127
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.');
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(format!("{what} `{name}` is not valid: use 1 to 127 letters, digits, `_`, `-` or `.`")))
    }
}

/// The keys an insert has written so far in its batch, to find a key written twice. Bulk loads
/// mostly send keys in increasing order, where no key can repeat: that is checked with one
/// comparison per document, and a map is built only once the order breaks.
#[derive(Default)]
struct BatchKeys {
    /// Index in `puts` of each key written, once the batch stopped being in increasing order.
    map: Option<BTreeMap<Key, usize>>,
    /// Still increasing: the index of the last key written.
    last: Option<usize>,
}

impl BatchKeys {
    /// The index in `puts` of the latest write of `key` in this batch, if any.
    fn earlier(&mut self, key: &Key, puts: &[(Key, Doc, Option<Doc>)]) -> Option<usize> {
        if self.map.is_none() {
            match self.last {
                Some(last) if puts[last].0 >= *key => {
                    self.map = Some(puts.iter().enumerate().map(|(i, p)| (p.0.clone(), i)).collect());
                }
                _ => return None,
            }
        }
        self.map.as_ref().and_then(|m| m.get(key).copied())
    }

    fn wrote(&mut self, key: &Key, at: usize) {
        match &mut self.map {
            Some(m) => {
                m.insert(key.clone(), at);
            }
            None => self.last = Some(at),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::DocFormat;

    fn prepared(text: &str) -> PreparedDocs {
        PreparedDocs::parse(text.as_bytes(), DocFormat::Ndjson, "id").unwrap()
    }

    /// Found by the `journal_record` fuzz target (`fuzz/corpus/journal_record/regression-table-id-overflow`):
    /// replaying the creation of table id 2^32-1 overflowed `next_table_id` (a panic with overflow
    /// checks, a wrap to 0 without). Table ids stay below the index trees' 2^31.
    #[test]
    fn replaying_a_table_id_in_the_index_tree_range_is_corruption() {
        let env = Env { cache: Arc::new(BlockCache::new(1 << 20)), counters: Default::default() };
        let mut catalog = Catalog::new(env);
        let create =
            |table_id| Mutation::CreateTable { table_id, name: format!("t{table_id}"), primary_key: "id".into() };
        for id in [u32::MAX, FIRST_INDEX_TREE_ID] {
            let err = catalog.replay(create(id)).unwrap_err();
            assert_eq!(err.code, crate::ErrorCode::CorruptJournal);
            assert!(err.message.contains(&format!("table id {id}")), "{}", err.message);
        }
        catalog.replay(create(FIRST_INDEX_TREE_ID - 1)).unwrap();
        assert_eq!(catalog.next_table_id, FIRST_INDEX_TREE_ID);
    }

    #[test]
    fn conflicts_error_replace_update_and_unchanged() {
        let env = Env { cache: Arc::new(BlockCache::new(1 << 20)), counters: Arc::default() };
        let t = Table::new(1, "t".into(), "id".into(), &env);
        let mut j = GroupEncoder::new(1 << 20);
        let r = t
            .insert(prepared("{\"id\":1,\"a\":{\"x\":1}}\n{\"id\":2}"), Conflict::Error, &mut j, &mut Vec::new())
            .unwrap();
        assert_eq!((r.inserted, r.errors), (2, 0));
        let r = t.insert(prepared("{\"id\":1}"), Conflict::Error, &mut j, &mut Vec::new()).unwrap();
        assert_eq!(r.first_error.as_deref(), Some("Duplicate primary key `id`: 1"));
        let r = t.insert(prepared("{\"id\":1,\"a\":{\"y\":2}}"), Conflict::Update, &mut j, &mut Vec::new()).unwrap();
        assert_eq!(r.replaced, 1);
        let merged: serde_json::Value = serde_json::from_str(&t.get(&Key::from(1.0)).unwrap().unwrap()).unwrap();
        assert_eq!(merged, serde_json::json!({"id":1,"a":{"x":1,"y":2}}));
        let r = t.insert(prepared("{\"id\":2}"), Conflict::Replace, &mut j, &mut Vec::new()).unwrap();
        assert_eq!(r.unchanged, 1);
        let r = t.insert(prepared("{ \"id\" : 2 }"), Conflict::Replace, &mut j, &mut Vec::new()).unwrap();
        assert_eq!(r.unchanged, 1, "same value, other spacing");
    }
}
