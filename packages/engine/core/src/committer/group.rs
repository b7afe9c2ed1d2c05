//! What a group does to its requests: applies them in memory in arrival order, queues their
//! answers, and commits: soft answers, one journal write, at most one fdatasync, durable answers.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

use super::{fail, Callback, Committer, Request, SyncPoint};
use crate::error::{Error, ErrorCode, Result};
use crate::index::Change;
use crate::mutation::{self, GroupEncoder};
use crate::options::Durability;
use crate::table::{check_name, Table, WriteResult};
use crate::tree::ENTRY_OVERHEAD;

/// A smaller group shrinks the remembered cohort by this fraction of it, so one late writer
/// does not halve the next gathering's target, yet a cohort that left is forgotten.
const COHORT_DECAY: usize = 16;

/// Memtable bytes a request adds at most (a replace or a delete of a present key adds less).
pub(super) fn memtable_bytes_at_most(request: &Request) -> u64 {
    match request {
        Request::Insert { docs, .. } | Request::InsertEach { docs, .. } => {
            docs.docs.iter().map(|d| ENTRY_OVERHEAD + d.json_len() as u64).sum()
        }
        Request::Delete { keys, .. } => keys.len() as u64 * ENTRY_OVERHEAD,
        _ => 0,
    }
}

type Ack = Box<dyn FnOnce() + Send>;

/// What a request's result adds to the stats: the writes it answers (`commits`) and the
/// documents they wrote.
trait Written {
    fn counts(&self) -> (u64, u64);
}

impl Written for WriteResult {
    fn counts(&self) -> (u64, u64) {
        (1, self.written())
    }
}

impl Written for Vec<WriteResult> {
    fn counts(&self) -> (u64, u64) {
        (self.len() as u64, self.iter().map(WriteResult::written).sum())
    }
}

/// A request waiting for the group's fdatasync: completed with its value, or the failure.
trait Durable: Send {
    fn complete(self: Box<Self>, failure: Option<Error>);
}

impl<T: Send> Durable for (Callback<T>, T) {
    fn complete(self: Box<Self>, failure: Option<Error>) {
        let (done, value) = *self;
        done(match failure {
            None => Ok(value),
            Some(e) => Err(e),
        })
    }
}

/// A group being built: its requests applied so far, their mutations, and the answers they wait
/// to send.
pub(super) struct Group {
    /// When its first requests were taken.
    taken: Instant,
    enc: GroupEncoder,
    soft: Vec<Ack>,
    durable: Vec<Box<dyn Durable>>,
    /// The writes applied (`Request::writes` of each request): what gathering a cohort counts.
    pub(super) writes: usize,
    /// Those answered after the fdatasync: the next group's cohort.
    durable_writes: usize,
    /// Hard writes that succeeded (the write-commit latency they record).
    hard_writes: u64,
    want_sync: bool,
    pub(super) closing: Option<Callback<()>>,
    ops: u64,
    changes: Vec<Change>,
    new_index: bool,
    /// The table of the previous write: a group's writes mostly name the same one, and the
    /// catalog lookup (a lock and a hash of the name) was ~5% of the committer's time with
    /// 64 single-document writers.
    last_table: Option<Arc<Table>>,
    /// Set when the group began: a poisoned database applies nothing.
    pub(super) poisoned: Option<Error>,
}

impl Group {
    pub(super) fn new(enc: GroupEncoder, poisoned: Option<Error>, taken: Instant) -> Group {
        Group {
            taken,
            enc,
            soft: Vec::new(),
            durable: Vec::new(),
            writes: 0,
            durable_writes: 0,
            hard_writes: 0,
            want_sync: false,
            closing: None,
            ops: 0,
            changes: Vec::new(),
            new_index: false,
            last_table: None,
            poisoned,
        }
    }
}

impl Committer {
    /// fdatasync; on failure poisons the database. Never retried: after a failed fdatasync the
    /// kernel may have dropped the dirty pages, so a later success would prove nothing.
    pub(super) fn sync_or_poison(&mut self) -> Option<Error> {
        if let Some(e) = self.shared.poisoned() {
            return Some(e);
        }
        match self.journal.sync() {
            Ok(_) => {
                self.shared.counters.durable_seq.store(self.journal.position().next_seq - 1, Relaxed);
                None
            }
            Err(e) => Some(self.shared.poison_with(&e)),
        }
    }

    /// Applies requests to the group in order: writes in memory (visible once the group's
    /// soft writes are acknowledged), their mutations encoded for the journal.
    pub(super) fn apply(&mut self, group: &mut Group, batch: Vec<Request>) {
        self.make_room(batch.iter().map(memtable_bytes_at_most).sum());
        let taken = self.now();
        for request in batch {
            let writes = request.writes();
            let durable = group.durable.len();
            match request {
                Request::Sync { done } => {
                    group.want_sync = true;
                    group.durable.push(Box::new((done, ())));
                }
                Request::Close { done } => group.closing = Some(done),
                _ if group.poisoned.is_some() => fail(request, group.poisoned.clone().unwrap()),
                Request::Insert { table, docs, options, done, submitted } => {
                    self.shared.counters.write_queue.record(taken.saturating_duration_since(submitted));
                    let result = self
                        .table(&table, &mut group.last_table)
                        .and_then(|t| t.insert(docs, options.conflict, &mut group.enc, &mut group.changes));
                    group.ops += 1;
                    let done = self.after_indexes_if(options.wait_for_indexes, done);
                    group.hard_writes +=
                        self.ack(result, options.durability, done, &mut group.soft, &mut group.durable);
                }
                Request::InsertEach { table, docs, options, done, submitted } => {
                    self.shared
                        .counters
                        .write_queue
                        .record_n(taken.saturating_duration_since(submitted), writes as u64);
                    let results = self
                        .table(&table, &mut group.last_table)
                        .and_then(|t| t.insert_each(docs, options.conflict, &mut group.enc, &mut group.changes));
                    group.ops += writes as u64;
                    let done = self.after_indexes_if(options.wait_for_indexes, done);
                    group.hard_writes +=
                        self.ack(results, options.durability, done, &mut group.soft, &mut group.durable);
                }
                Request::Delete { table, keys, durability, done, submitted } => {
                    self.shared.counters.write_queue.record(taken.saturating_duration_since(submitted));
                    let result = self
                        .table(&table, &mut group.last_table)
                        .and_then(|t| t.delete(keys, &mut group.enc, &mut group.changes));
                    group.ops += 1;
                    group.hard_writes += self.ack(result, durability, done, &mut group.soft, &mut group.durable);
                }
                Request::CreateTable { name, primary_key, done } => {
                    match self.create_table(&name, &primary_key, &mut group.enc) {
                        Ok(()) => {
                            group.ops += 1;
                            group.durable.push(Box::new((done, ())));
                        }
                        Err(e) => done(Err(e)),
                    }
                }
                Request::CreateIndex { table, name, field, multi, done } => {
                    match self.create_index(&table, &name, &field, multi, &mut group.enc) {
                        Ok(()) => {
                            group.ops += 1;
                            group.new_index = true;
                            group.durable.push(Box::new((done, ())));
                        }
                        Err(e) => done(Err(e)),
                    }
                }
                Request::DropIndex { table, name, done } => match self.drop_index(&table, &name, &mut group.enc) {
                    Ok(()) => {
                        group.ops += 1;
                        group.durable.push(Box::new((done, ())));
                    }
                    Err(e) => done(Err(e)),
                },
                Request::DropTable { name, done } => {
                    match self.drop_table(&name, &mut group.last_table, &mut group.enc) {
                        Ok(()) => {
                            group.ops += 1;
                            group.durable.push(Box::new((done, ())));
                        }
                        Err(e) => done(Err(e)),
                    }
                }
            }
            group.writes += writes;
            if group.durable.len() > durable {
                group.durable_writes += writes;
            }
        }
    }

    /// Commits the group: acknowledges its soft writes, writes it to the journal, fdatasyncs if
    /// a write waits for that, and acknowledges the rest. Returns the close callback if a close
    /// request was in it.
    pub(super) fn commit(&mut self, group: Group) -> Option<Callback<()>> {
        let Group {
            taken,
            mut enc,
            soft,
            durable,
            durable_writes,
            want_sync,
            closing,
            ops,
            changes,
            new_index,
            hard_writes,
            ..
        } = group;
        // Visible now: soft writes are acknowledged before any disk work, and `applied_seq`
        // (visible) covers them before they are acknowledged.
        enc.finish();
        if !enc.payloads.is_empty() {
            let last_seq = self.journal.position().next_seq + enc.payloads.len() as u64 - 1;
            // Queued for the indexes before visible, so a fresh index query waits for them.
            if !changes.is_empty() {
                self.shared.index_worker.push(last_seq, changes);
            }
            self.shared.counters.applied_seq.store(last_seq, Relaxed);
        }
        if new_index {
            self.shared.index_worker.start_build();
        }
        if !soft.is_empty() {
            self.shared.counters.write_commit.record_n(self.now().saturating_duration_since(taken), soft.len() as u64);
            self.shared.acknowledge(|| soft.into_iter().for_each(|ack| ack()));
        }
        let mut failure = None;
        self.recent.group_bytes = enc.payloads.iter().map(|p| p.len() as u64).sum();
        self.shared.sync_point(SyncPoint::Writing);
        if !enc.payloads.is_empty() {
            match self.journal.append(&enc.payloads) {
                Ok(_) => self.shared.counters.record_group(ops),
                Err(e) => failure = Some(self.shared.poison_with(&e)),
            }
        }
        let recent = &mut self.recent;
        recent.durable_writes = durable_writes;
        recent.cohort = durable_writes.max(recent.cohort - recent.cohort / COHORT_DECAY);
        if failure.is_none() && (want_sync || !durable.is_empty()) {
            self.shared.sync_point(SyncPoint::Syncing);
            let started = self.now();
            failure = self.sync_or_poison();
            let synced_at = self.now();
            self.recent.synced_at = synced_at;
            self.recent.sync_time = synced_at.saturating_duration_since(started);
            self.shared.counters.commit_latency.record(synced_at.saturating_duration_since(taken));
        }
        if hard_writes > 0 {
            self.shared.counters.write_commit.record_n(self.now().saturating_duration_since(taken), hard_writes);
        }
        if !durable.is_empty() {
            self.shared.acknowledge(|| durable.into_iter().for_each(|request| request.complete(failure.clone())));
        }
        self.shared.sync_point(SyncPoint::Committed);
        enc.clear();
        self.encoder = enc;
        closing
    }

    /// `done`, run only once the indexes have caught up with the write when `wait` is set.
    fn after_indexes_if<T: Send + 'static>(&self, wait: bool, done: Callback<T>) -> Callback<T> {
        if !wait {
            return done;
        }
        let worker = self.shared.index_worker.clone();
        Box::new(move |r| worker.after_pending(Box::new(move || done(r))))
    }

    /// Queues the acknowledgement of a write (or of the writes of an `InsertEach`); returns the
    /// writes it holds that wait for the group's fdatasync.
    fn ack<T: Written + Send + 'static>(
        &self,
        result: Result<T>,
        durability: Durability,
        done: Callback<T>,
        soft: &mut Vec<Ack>,
        durable: &mut Vec<Box<dyn Durable>>,
    ) -> u64 {
        match result {
            Err(e) => {
                done(Err(e));
                0
            }
            Ok(r) => {
                let (writes, documents) = r.counts();
                let c = &self.shared.counters;
                c.commits.fetch_add(writes, Relaxed);
                c.documents_written.fetch_add(documents, Relaxed);
                match durability {
                    Durability::Soft => {
                        soft.push(Box::new(move || done(Ok(r))));
                        0
                    }
                    Durability::Hard => {
                        durable.push(Box::new((done, r)));
                        writes
                    }
                }
            }
        }
    }

    /// The table named `name`: `last`, if that is it, else from the catalog (and kept in `last`).
    fn table(&self, name: &str, last: &mut Option<Arc<Table>>) -> Result<Arc<Table>> {
        if let Some(t) = last.as_ref().filter(|t| t.name == name) {
            return Ok(t.clone());
        }
        let t = self.shared.catalog.read().unwrap().get(name).cloned()?;
        *last = Some(t.clone());
        Ok(t)
    }

    fn create_index(&self, table: &str, name: &str, field: &str, multi: bool, enc: &mut GroupEncoder) -> Result<()> {
        check_name("index name", name)?;
        let mut catalog = self.shared.catalog.write().unwrap();
        let t = catalog.get(table)?.clone();
        catalog.add_index(&t, name, field, multi)?;
        mutation::encode_create_index(enc.buf(), t.id, name, field, multi);
        enc.boundary();
        Ok(())
    }

    fn drop_index(&self, table: &str, name: &str, enc: &mut GroupEncoder) -> Result<()> {
        let mut catalog = self.shared.catalog.write().unwrap();
        let t = catalog.get(table)?.clone();
        catalog.remove_index(&t, name)?;
        mutation::encode_drop_index(enc.buf(), t.id, name);
        enc.boundary();
        Ok(())
    }

    fn create_table(&self, name: &str, primary_key: &str, enc: &mut GroupEncoder) -> Result<()> {
        check_name("table name", name)?;
        check_name("primary key", primary_key)?;
        let mut catalog = self.shared.catalog.write().unwrap();
        if catalog.by_name.contains_key(name) {
            return Err(Error::new(ErrorCode::TableExists, format!("table `{name}` already exists")).with_table(name));
        }
        let id = catalog.next_table_id.max(1);
        mutation::encode_create_table(enc.buf(), id, name, primary_key);
        enc.boundary();
        let table = Table::new(id, name.to_string(), primary_key.to_string(), &catalog.env);
        catalog.add(table);
        Ok(())
    }

    fn drop_table(&self, name: &str, last: &mut Option<Arc<Table>>, enc: &mut GroupEncoder) -> Result<()> {
        *last = None; // later writes in the group must not find it
        let mut catalog = self.shared.catalog.write().unwrap();
        let id = catalog.get(name)?.id;
        mutation::encode_drop_table(enc.buf(), id);
        enc.boundary();
        catalog.remove(id);
        Ok(())
    }
}
