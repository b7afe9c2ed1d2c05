//! Group commit. One thread takes every request waiting at that moment as one group:
//!
//! 1. apply each write in memory, in arrival order, encoding its mutations (while a cohort of
//!    hard writers is still arriving, each request as it comes: see `gather`);
//! 2. acknowledge the `soft` writes (they are visible now);
//! 3. write the group to the journal with one write call;
//! 4. if the group holds a `hard` write or a `sync()`, issue one fdatasync;
//! 5. acknowledge the `hard` writes and `sync()` calls.
//!
//! While the fdatasync runs, new requests queue up and become the next group, so N concurrent
//! hard writers share one fdatasync per group. Soft writes left unsynced are synced after at most
//! `flush_interval`. The first failed write or fdatasync poisons the database.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Condvar, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use crate::checkpoint::{Background, CheckpointJob, MaintenanceState, TableCut, Task};
use crate::doc::PreparedDocs;
use crate::error::{Error, ErrorCode, Result};
use crate::index::{Change, IndexWorker};
use crate::journal::{Flusher, Journal};
use crate::key::Key;
use crate::manifest::IndexSpec;
use crate::mutation::{self, GroupEncoder};
use crate::options::{Durability, Options, WriteOptions};
use crate::pacing::{Debt, Decision, Pacer};
use crate::stats::Counters;
use crate::table::{check_name, Catalog, Table, WriteResult};
use crate::tree::ENTRY_OVERHEAD;

/// A callback run on the committer thread with the outcome of a request.
pub type Callback<T> = Box<dyn FnOnce(Result<T>) + Send + 'static>;

pub(crate) enum Request {
    Insert {
        table: String,
        docs: PreparedDocs,
        options: WriteOptions,
        done: Callback<WriteResult>,
        submitted: Instant,
    },
    /// Single-document inserts sent together: `done` gets document `i`'s result as element `i`.
    InsertEach {
        table: String,
        docs: PreparedDocs,
        options: WriteOptions,
        done: Callback<Vec<WriteResult>>,
        submitted: Instant,
    },
    Delete {
        table: String,
        keys: Vec<Key>,
        durability: Durability,
        done: Callback<WriteResult>,
        submitted: Instant,
    },
    CreateTable {
        name: String,
        primary_key: String,
        done: Callback<()>,
    },
    CreateIndex {
        table: String,
        name: String,
        field: String,
        multi: bool,
        done: Callback<()>,
    },
    DropIndex {
        table: String,
        name: String,
        done: Callback<()>,
    },
    DropTable {
        name: String,
        done: Callback<()>,
    },
    Sync {
        done: Callback<()>,
    },
    Close {
        done: Callback<()>,
    },
}

impl Request {
    /// The writes it holds, each answered on its own: what a cohort of hard writers counts.
    fn writes(&self) -> usize {
        match self {
            Request::InsertEach { docs, .. } => docs.len(),
            _ => 1,
        }
    }
}

/// Told by the committer before and after it sends a batch of acknowledgements: a group's soft
/// ones once it is applied, its durable ones after its fdatasync. So a caller polling for answers
/// can take a batch whole rather than its first answer alone, and wake a sleeping caller once per
/// batch, after the last answer rather than before the first.
pub trait AckListener: Send + Sync {
    fn acknowledging(&self);
    fn acknowledged(&self);
}

/// Memtable bytes a request adds at most (a replace or a delete of a present key adds less).
fn memtable_bytes_at_most(request: &Request) -> u64 {
    match request {
        Request::Insert { docs, .. } | Request::InsertEach { docs, .. } => {
            docs.docs.iter().map(|d| ENTRY_OVERHEAD + d.json_len() as u64).sum()
        }
        Request::Delete { keys, .. } => keys.len() as u64 * ENTRY_OVERHEAD,
        _ => 0,
    }
}

/// State shared by the committer, the maintenance thread and readers.
pub(crate) struct Shared {
    pub catalog: Arc<RwLock<Catalog>>,
    pub counters: Arc<Counters>,
    pub queue: Mutex<Queue>,
    pub wake: Condvar,
    /// Requests pushed since the committer last drained the queue; read while it spins.
    pub queued: AtomicUsize,
    pub poison: Mutex<Option<Error>>,
    pub maintenance: Arc<Mutex<MaintenanceState>>,
    pub index_worker: Arc<IndexWorker>,
    pub ack_listener: OnceLock<Box<dyn AckListener>>,
}

/// Requests waiting for the committer.
#[derive(Default)]
pub(crate) struct Queue {
    pub requests: VecDeque<Request>,
    /// The writes in `requests` (`Request::writes`).
    pub writes: usize,
    /// The flusher finished a background sync: the committer should take its outcome.
    pub synced_in_background: bool,
    /// While the committer waits on the condvar: the queued writes that should wake it (1: any
    /// request; the cohort size while it gathers one). 0: it is not waiting. Each wake-up costs
    /// the submitting thread a syscall and the committer a context switch, so only then.
    pub wake_at: usize,
}

impl Shared {
    /// Queues requests in order, under one lock.
    pub fn submit(&self, requests: impl IntoIterator<Item = Request>) {
        let mut queue = self.queue.lock().unwrap();
        let mut n = 0;
        for request in requests {
            queue.writes += request.writes();
            queue.requests.push_back(request);
            n += 1;
        }
        let wake = queue.wake_at != 0 && queue.writes >= queue.wake_at;
        self.queued.fetch_add(n, Release);
        drop(queue);
        if wake {
            self.wake.notify_one();
        }
    }

    /// Runs `send`, which sends acknowledgements, between the listener's two calls.
    fn acknowledge(&self, send: impl FnOnce()) {
        let listener = self.ack_listener.get();
        if let Some(l) = listener {
            l.acknowledging();
        }
        send();
        if let Some(l) = listener {
            l.acknowledged();
        }
    }

    fn poisoned(&self) -> Option<Error> {
        self.poison.lock().unwrap().clone()
    }

    fn poison_with(&self, cause: &Error) -> Error {
        let mut p = self.poison.lock().unwrap();
        let e = p.get_or_insert_with(|| Error::poisoned(&cause.to_string())).clone();
        self.counters.poisoned.store(true, Relaxed);
        e
    }
}

pub(crate) struct Committer {
    pub shared: Arc<Shared>,
    pub journal: Journal,
    pub flusher: Arc<Flusher>,
    pub pacer: Pacer,
    pub background: Arc<Background>,
    pub options: Options,
    pub tasks: Sender<Task>,
    /// Writes the last group answered after its fdatasync, and how long that took: see `gather`.
    pub last_durable_writes: usize,
    /// The cohort of hard writes recently seen: the largest recent group's, decaying by 1/16
    /// per smaller group, so that a group that waits can grow back to it.
    pub cohort: usize,
    pub last_sync: Duration,
    /// Recent time from a group's end to the next request (see `spin_for_requests`).
    pub return_gap: Duration,
    /// Journal payload bytes of the last group (what pacing meters).
    pub last_group_bytes: u64,
    /// When the last checkpoint started (pacing estimates how long its flush has left).
    pub checkpoint_started: Instant,
    /// Encodes each group's mutations; reused, so its buffer is too.
    pub encoder: GroupEncoder,
}

/// Unsynced journal bytes that start a background sync before `flush_interval` runs out, so no
/// later fdatasync (a rotation's, a hard write's) has much to flush.
const BYTES_PER_SYNC: u64 = 4 << 20;

/// How long an idle committer spins before it parks (see `spin_for_requests`): about one wake-up
/// of the caller's thread plus its turn-around, the gap after a lone hard write's acknowledgement.
const SPIN_BEFORE_PARKING: Duration = Duration::from_micros(300);

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
struct Group {
    /// When its first requests were taken.
    taken: Instant,
    enc: GroupEncoder,
    soft: Vec<Ack>,
    durable: Vec<Box<dyn Durable>>,
    /// The writes applied (`Request::writes` of each request): what gathering a cohort counts.
    writes: usize,
    /// Those answered after the fdatasync: the next group's cohort.
    durable_writes: usize,
    /// Hard writes that succeeded (the write-commit latency they record).
    hard_writes: u64,
    want_sync: bool,
    closing: Option<Callback<()>>,
    ops: u64,
    changes: Vec<Change>,
    new_index: bool,
    /// The table of the previous write: a group's writes mostly name the same one, and the
    /// catalog lookup (a lock and a hash of the name) was ~5% of the committer's time with
    /// 64 single-document writers.
    last_table: Option<Arc<Table>>,
    /// Set when the group began: a poisoned database applies nothing.
    poisoned: Option<Error>,
}

impl Group {
    fn new(enc: GroupEncoder, poisoned: Option<Error>) -> Group {
        Group {
            taken: Instant::now(),
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
    pub fn run(mut self) {
        let mut last_sync = Instant::now();
        loop {
            self.take_background_sync();
            let batch = self.next_batch(last_sync);
            if batch.is_empty() {
                // A background sync finished, or the flush window of soft writes ran out.
                if self.flush_due(last_sync) && self.flush_in_background() {
                    last_sync = Instant::now();
                }
                continue;
            }
            let mut group =
                Group::new(std::mem::replace(&mut self.encoder, GroupEncoder::new(0)), self.shared.poisoned());
            self.apply(&mut group, batch);
            self.gather(&mut group);
            let closing = self.commit(group, &mut last_sync);
            if (self.flush_due(last_sync) || self.journal.unsynced_bytes() >= BYTES_PER_SYNC)
                && self.flush_in_background()
            {
                last_sync = Instant::now();
            }
            self.after_group();
            if closing.is_none() {
                self.pace();
            }
            if let Some(done) = closing {
                let result = self.shut_down();
                done(result);
                return;
            }
        }
    }

    /// Waits for requests and takes every one queued; returns an empty batch when unsynced
    /// bytes reach the flush deadline.
    fn next_batch(&mut self, last_sync: Instant) -> Vec<Request> {
        let idle_from = Instant::now();
        let queue = self.wait_for_requests(last_sync);
        let came_back = idle_from.elapsed();
        let batch = self.take(queue);
        if !batch.is_empty() {
            // How soon callers come back (EWMA, 1/4): whether spinning for them pays. A gap counts
            // as at most twice the spin, so one late return (a caller's GC pause) does not stop
            // the spinning for the next few writes (each then paid a wake-up); three in a row do.
            self.return_gap = (self.return_gap * 3 + came_back.min(SPIN_BEFORE_PARKING * 2)) / 4;
        }
        batch
    }

    /// Every request queued.
    fn take(&self, mut queue: std::sync::MutexGuard<'_, Queue>) -> Vec<Request> {
        self.shared.queued.store(0, Relaxed);
        queue.writes = 0;
        queue.requests.drain(..).collect()
    }

    /// Keeps the group open for the rest of a cohort of hard writers.
    ///
    /// When the last group answered several writes after its fdatasync, their callers tend to
    /// come back together, but one by one (each after its own acknowledgement and round trip),
    /// or from one JS thread in a few calls as it resumes them: the first would otherwise make a
    /// group of its own and the rest the next one. So the committer takes requests into the group
    /// while they keep arriving — each within a gap of a quarter of the last fdatasync or an
    /// eighth of the window, whichever is longer — until the cohort is in, for at most
    /// `group_commit_window`. It applies each as it arrives: that overlaps the callers making the
    /// next ones (64 writers on one JS thread: ~20 µs of a group's ~100 µs of CPU). A lone writer
    /// never waits.
    fn gather(&mut self, group: &mut Group) {
        let window = self.options.group_commit_window;
        if self.last_durable_writes < 2 || window.is_zero() {
            return;
        }
        let give_up = Instant::now() + window;
        let gap = (self.last_sync / 4).max(window / 8);
        let spin = self.callers_come_back_quickly();
        while group.writes < self.cohort && group.closing.is_none() {
            let now = Instant::now();
            if now >= give_up {
                break;
            }
            let until = give_up.min(now + gap);
            if spin {
                self.spin_until_queued(until);
            }
            let mut queue = self.shared.queue.lock().unwrap();
            if queue.requests.is_empty() && !spin {
                queue.wake_at = self.cohort - group.writes;
                queue = self.shared.wake.wait_timeout(queue, until - now).unwrap().0;
                queue.wake_at = 0;
            }
            let batch = self.take(queue);
            if batch.is_empty() {
                break; // nobody came within the gap: the rest are not coming soon
            }
            self.apply(group, batch);
        }
    }

    /// Spins briefly before parking: a caller awaiting its last write often sends the next one
    /// within microseconds, and waking a parked thread costs far more (30–70 µs measured on a
    /// 2-vCPU VM, a quarter of an fdatasync). Only when callers have been coming back within
    /// the spin (a server's clients, a network round trip away, do not: the spin would only
    /// take a CPU from the threads serving them). That holds after a group of many hard
    /// writers too when they share one JS thread: the binding sends their next writes together,
    /// ~4 µs of JS each later (64 writers: +13–24% docs/s with the spin).
    fn spin_for_requests(&self) {
        if self.callers_come_back_quickly() {
            self.spin_until_queued(Instant::now() + SPIN_BEFORE_PARKING);
        }
    }

    /// Whether spinning for callers pays: they have been coming back within the spin.
    fn callers_come_back_quickly(&self) -> bool {
        self.return_gap <= SPIN_BEFORE_PARKING
    }

    /// Spins until a request is queued or `until`.
    fn spin_until_queued(&self, until: Instant) {
        while self.shared.queued.load(Acquire) == 0 && Instant::now() < until {
            // Yields rather than pauses: if the caller's thread waits for this CPU (on 2 vCPUs the
            // scheduler was seen to leave both on one for ms while the other idled), it runs now.
            std::thread::yield_now();
        }
    }

    /// Soft writes are due on disk: unsynced bytes older than `flush_interval`.
    fn flush_due(&self, last_sync: Instant) -> bool {
        // A poisoned journal is never synced again, so there is nothing to flush.
        self.journal.has_unsynced()
            && !self.journal.background_sync_pending()
            && self.shared.poisoned().is_none()
            && Instant::now() >= last_sync + self.options.flush_interval
    }

    /// Hands a sync of everything written so far to the flusher thread.
    fn flush_in_background(&mut self) -> bool {
        match self.journal.sync_ticket() {
            Some(ticket) => {
                self.flusher.request(ticket);
                true
            }
            None => false,
        }
    }

    /// Takes the outcome of a finished background sync; a failure poisons, as on the committer.
    fn take_background_sync(&mut self) {
        match self.flusher.take_done() {
            Some(Ok((segment_id, offset, sync_ns))) => self.journal.synced_in_background(segment_id, offset, sync_ns),
            Some(Err(e)) => {
                self.journal.synced_in_background(u64::MAX, 0, 0);
                self.shared.poison_with(&e);
            }
            None => {}
        }
    }

    fn wait_for_requests(&self, last_sync: Instant) -> std::sync::MutexGuard<'_, Queue> {
        self.spin_for_requests();
        let mut queue = self.shared.queue.lock().unwrap();
        while queue.requests.is_empty() {
            if std::mem::take(&mut queue.synced_in_background) {
                return queue;
            }
            if self.journal.has_unsynced()
                && !self.journal.background_sync_pending()
                && self.shared.poisoned().is_none()
            {
                let deadline = last_sync + self.options.flush_interval;
                let now = Instant::now();
                if now >= deadline {
                    return queue;
                }
                queue.wake_at = 1;
                queue = self.shared.wake.wait_timeout(queue, deadline - now).unwrap().0;
            } else {
                queue.wake_at = 1;
                queue = self.shared.wake.wait(queue).unwrap();
            }
            queue.wake_at = 0;
        }
        queue
    }

    /// fdatasync; on failure poisons the database. Never retried: after a failed fdatasync the
    /// kernel may have dropped the dirty pages, so a later success would prove nothing.
    fn sync_or_poison(&mut self) -> Option<Error> {
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
    fn apply(&mut self, group: &mut Group, batch: Vec<Request>) {
        self.make_room(batch.iter().map(memtable_bytes_at_most).sum());
        let taken = Instant::now();
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
    fn commit(&mut self, group: Group, last_sync: &mut Instant) -> Option<Callback<()>> {
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
            self.shared.counters.write_commit.record_n(taken.elapsed(), soft.len() as u64);
            self.shared.acknowledge(|| soft.into_iter().for_each(|ack| ack()));
        }
        let mut failure = None;
        self.last_group_bytes = enc.payloads.iter().map(|p| p.len() as u64).sum();
        if !enc.payloads.is_empty() {
            match self.journal.append(&enc.payloads) {
                Ok(_) => self.shared.counters.record_group(ops),
                Err(e) => failure = Some(self.shared.poison_with(&e)),
            }
        }
        self.last_durable_writes = durable_writes;
        self.cohort = durable_writes.max(self.cohort - self.cohort / 16);
        if failure.is_none() && (want_sync || !durable.is_empty()) {
            let started = Instant::now();
            failure = self.sync_or_poison();
            *last_sync = Instant::now();
            self.last_sync = *last_sync - started;
            self.shared.counters.commit_latency.record(*last_sync - taken);
        }
        if hard_writes > 0 {
            self.shared.counters.write_commit.record_n(taken.elapsed(), hard_writes);
        }
        if !durable.is_empty() {
            self.shared.acknowledge(|| durable.into_iter().for_each(|request| request.complete(failure.clone())));
        }
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

    /// Recycles segments a finished checkpoint released, and starts the next checkpoint when due.
    fn after_group(&mut self) {
        let (retire, failure) = {
            let mut state = self.shared.maintenance.lock().unwrap();
            (state.retire_before.take(), state.failure.take())
        };
        if let Some(e) = failure {
            self.shared.poison_with(&e);
        }
        if let Some(segment_id) = retire {
            if let Err(e) = self.journal.retire_before(segment_id) {
                self.shared.poison_with(&e);
            }
        }
        let c = &self.shared.counters;
        let due = c.journal_bytes_since_checkpoint.load(Relaxed) >= self.options.checkpoint_bytes
            || c.memtable_bytes.load(Relaxed) >= self.pacer.memtable_limit;
        if due && !self.shared.maintenance.lock().unwrap().in_flight {
            let _ = self.start_checkpoint(None, false);
        }
        if self.journal.pool_needs_spares() {
            let _ = self.tasks.send(Task::FillPool);
        }
    }

    /// Takes a consistent cut now (between groups) and hands it to the maintenance thread.
    /// `clean` marks the cut of a close, after the index worker drained: built indexes are exact.
    fn start_checkpoint(&mut self, reply: Option<mpsc::Sender<Result<()>>>, clean: bool) -> Result<()> {
        if let Some(e) = self.shared.poisoned() {
            return Err(e);
        }
        // The manifest will name this position, so everything before it must be on disk: the
        // maintenance thread syncs it first (not here, where it would hold every write).
        let position = self.journal.position();
        let catalog = self.shared.catalog.read().unwrap();
        let c = &self.shared.counters;
        let mut specs: HashMap<u32, IndexSpec> = HashMap::new();
        for t in catalog.by_name.values() {
            for i in t.indexes.read().unwrap().iter() {
                let spec = IndexSpec {
                    table_id: t.id,
                    name: i.name.clone(),
                    field: i.field.clone(),
                    multi: i.multi,
                    complete: clean && i.ready(),
                };
                specs.insert(i.tree.id, spec);
            }
        }
        let tables = catalog
            .by_id
            .values()
            .map(|t| {
                let mut data = t.data.write();
                let frozen = data.freeze();
                c.memtable_bytes.fetch_sub(data.frozen_bytes(), Relaxed);
                c.frozen_memtable_bytes.fetch_add(data.frozen_bytes(), Relaxed);
                TableCut {
                    table: t.clone(),
                    frozen,
                    documents: data.documents,
                    bytes: data.bytes,
                    index: specs.remove(&t.id),
                }
            })
            .collect();
        let job = CheckpointJob {
            position,
            sync: self.journal.cut_ticket(),
            next_table_id: catalog.next_table_id,
            next_index_tree_id: catalog.next_index_tree_id,
            tables,
        };
        drop(catalog);
        c.journal_bytes_since_checkpoint.store(0, Relaxed);
        self.shared.maintenance.lock().unwrap().in_flight = true;
        self.checkpoint_started = Instant::now();
        self.background.merges.checkpoint_started();
        self.tasks.send(Task::Checkpoint(job, reply)).map_err(|_| Error::closed())
    }

    fn wait_for_checkpoint(&self) {
        while self.shared.maintenance.lock().unwrap().in_flight {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Waits before the next group as pacing decides (see `pacing.rs`).
    fn pace(&mut self) {
        let c = self.shared.counters.clone();
        let debt = Debt {
            memtable_bytes: c.memtable_bytes.load(Relaxed),
            frozen_bytes: c.frozen_memtable_bytes.load(Relaxed),
            level0_runs: self.background.level0_runs.load(Relaxed) as usize,
            levels: self.background.levels.load(Relaxed) as u32,
            flush_elapsed: self.checkpoint_started.elapsed(),
        };
        match self.pacer.decide(self.last_group_bytes, &debt, &self.background.rates, &c) {
            Decision::Free => {}
            Decision::Wait(d) => {
                c.paced_groups.fetch_add(1, Relaxed);
                c.pacing_delay_us.fetch_add(d.as_micros() as u64, Relaxed);
                std::thread::sleep(d);
            }
            Decision::Stop => self.wait_for_flush(),
        }
    }

    /// Pacing keeps memtables below their limit; this makes the bound exact: a group that
    /// would take them past it while a flush runs waits for the flush. (Pacing's last group
    /// could cross it by its own size, 1 run in 40 of the larger-than-memory test under load.)
    fn make_room(&mut self, incoming: u64) {
        let c = &self.shared.counters;
        let frozen = c.frozen_memtable_bytes.load(Relaxed);
        if self.pacer.stops(c.memtable_bytes.load(Relaxed) + frozen + incoming, frozen) {
            self.wait_for_flush();
        }
    }

    /// The last resort: memtables are at their limit until the checkpoint ends.
    fn wait_for_flush(&mut self) {
        let c = self.shared.counters.clone();
        let started = Instant::now();
        c.write_stops.fetch_add(1, Relaxed);
        self.sync_or_poison();
        self.wait_for_checkpoint();
        c.write_stop_us.fetch_add(started.elapsed().as_micros() as u64, Relaxed);
    }

    /// Close: a final checkpoint (so the next open replays little), then stop maintenance.
    fn shut_down(&mut self) -> Result<()> {
        self.wait_for_checkpoint();
        self.shared.index_worker.drain();
        let (tx, rx) = mpsc::channel();
        let mut result = self.start_checkpoint(Some(tx), true);
        if result.is_ok() {
            result = rx.recv().unwrap_or_else(|_| Err(Error::closed()));
        }
        let _ = self.tasks.send(Task::Stop);
        // Fail whatever arrived after the close request.
        for request in self.shared.queue.lock().unwrap().requests.drain(..) {
            fail(request, Error::closed());
        }
        result
    }
}

pub(crate) fn fail(request: Request, error: Error) {
    match request {
        Request::Insert { done, .. } | Request::Delete { done, .. } => done(Err(error)),
        Request::InsertEach { done, .. } => done(Err(error)),
        Request::CreateTable { done, .. }
        | Request::DropTable { done, .. }
        | Request::CreateIndex { done, .. }
        | Request::DropIndex { done, .. }
        | Request::Sync { done }
        | Request::Close { done } => done(Err(error)),
    }
}
