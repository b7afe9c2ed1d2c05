//! Group commit: one thread, the committer, turns queued write requests into groups, each
//! applied in memory, written to the journal with one write call and made durable with at most
//! one fdatasync. The protocol (actors, states, invariants, who owns what) is
//! `docs/design/write-path.md`; this module follows it: [`State`] is its state machine and
//! [`Committer::step`] its only transition function.
//!
//! - `clock`: the only source of time ([`Clock`]; tests use [`ManualClock`]).
//! - `hooks`: sync points where a test observes or holds the committer.
//! - `group`: what a group does to its requests (apply, answer, commit).
//! - `maintenance`: what happens between groups (background flush, checkpoints, pacing, close).

mod clock;
mod group;
mod hooks;
mod maintenance;

pub use clock::{Clock, ManualClock, SystemClock};
pub use hooks::{CommitterHooks, SyncPoint};

use std::collections::VecDeque;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, RwLock};
use std::time::{Duration, Instant};

use crate::checkpoint::{Background, MaintenanceState, Task};
use crate::doc::PreparedDocs;
use crate::error::{Error, Result};
use crate::index::IndexWorker;
use crate::journal::{Flusher, Journal};
use crate::key::Key;
use crate::mutation::GroupEncoder;
use crate::options::{Durability, Options, WriteOptions};
use crate::pacing::Pacer;
use crate::stats::Counters;
use crate::table::{Catalog, WriteResult};

use group::Group;

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

/// State shared by the committer, the callers, the flusher, the maintenance thread and readers.
pub(crate) struct Shared {
    pub catalog: Arc<RwLock<Catalog>>,
    pub counters: Arc<Counters>,
    /// Callers push, the committer drains: the only way a request reaches the committer.
    pub queue: Mutex<Queue>,
    /// The committer parks on it; `submit` and the flusher notify it.
    pub wake: Condvar,
    /// Requests pushed since the committer last drained the queue; read without the lock while
    /// the committer spins.
    pub queued: AtomicUsize,
    /// Set once, by the committer or a background failure; never cleared.
    pub poison: Mutex<Option<Error>>,
    pub maintenance: Arc<Mutex<MaintenanceState>>,
    pub index_worker: Arc<IndexWorker>,
    pub ack_listener: OnceLock<Box<dyn AckListener>>,
    /// Time, for every decision of the committer and the stats' timestamps.
    pub clock: Arc<dyn Clock>,
    /// Tests only: told at each [`SyncPoint`].
    pub sync_point: Option<Arc<dyn Fn(SyncPoint) + Send + Sync>>,
}

/// Requests waiting for the committer.
#[derive(Default)]
pub(crate) struct Queue {
    pub requests: VecDeque<Request>,
    /// The writes in `requests` (`Request::writes`).
    pub writes: usize,
    /// The flusher finished a background sync: the committer should take its outcome.
    pub synced_in_background: bool,
    /// While the committer is parked: the queued writes that should wake it (1: any request;
    /// the rest of a cohort while it gathers one). 0: it is not parked. Each wake-up costs the
    /// submitting thread a syscall and the committer a context switch, so only then.
    pub wake_at: usize,
}

impl Shared {
    /// Queues requests in order, under one lock, and wakes the committer if it waits for them.
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

    /// Wakes the committer whatever it waits for (its clock moved, or the flusher finished).
    pub fn wake_committer(&self) {
        let _queue = self.queue.lock().unwrap();
        self.wake.notify_all();
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

    fn sync_point(&self, point: SyncPoint) {
        if let Some(hook) = &self.sync_point {
            hook(point);
        }
    }
}

/// The committer's states (`docs/design/write-path.md`, "States of the committer").
enum State {
    /// No group open: waits for a request, a background sync's outcome, or soft writes falling
    /// due on disk.
    Idle,
    /// A group is open and takes requests as the rest of a cohort of hard writers arrives,
    /// until the cohort is in, nobody came within a gap, or `give_up`.
    Gathering {
        group: Group,
        give_up: Instant,
    },
    /// The group takes no more requests: answer its soft writes, write it, fdatasync if a
    /// request waits for that, answer the rest.
    Committing(Group),
    /// Between groups: background flush, checkpoint and segment recycling, pacing. `closing`:
    /// the group held a close request.
    Maintaining {
        closing: Option<Callback<()>>,
    },
    /// Final checkpoint, then every request still queued fails as closed.
    Closing(Callback<()>),
    Closed,
}

/// The committer thread's state: everything here is owned by that thread alone.
pub(crate) struct Committer {
    pub shared: Arc<Shared>,
    pub journal: Journal,
    pub flusher: Arc<Flusher>,
    pub pacer: Pacer,
    pub background: Arc<Background>,
    pub options: Options,
    pub tasks: Sender<Task>,
    /// Encodes each group's mutations; reused, so its buffer is too.
    pub encoder: GroupEncoder,
    pub recent: Recent,
}

/// What the committer remembers of recent groups, for its next decisions.
pub(crate) struct Recent {
    /// Writes the last group answered after its fdatasync: gathering starts only after two.
    pub durable_writes: usize,
    /// The cohort of hard writes recently seen: the largest recent group's, decaying by 1/16
    /// per smaller group, so that a group that waits can grow back to it.
    pub cohort: usize,
    /// How long the last fdatasync took (a gathering's gap is a quarter of it).
    pub sync_time: Duration,
    /// When the journal was last synced (soft writes are due `flush_interval` after).
    pub synced_at: Instant,
    /// Time from a group's end to the next request, as a moving average: whether spinning for
    /// callers pays.
    pub return_gap: Duration,
    /// Journal payload bytes of the last group (what pacing meters).
    pub group_bytes: u64,
    /// When the last checkpoint started (pacing estimates how long its flush has left).
    pub checkpoint_started: Instant,
}

impl Recent {
    pub fn new(now: Instant) -> Recent {
        Recent {
            durable_writes: 0,
            cohort: 0,
            sync_time: Duration::ZERO,
            synced_at: now,
            return_gap: Duration::ZERO,
            group_bytes: 0,
            checkpoint_started: now,
        }
    }
}

/// Unsynced journal bytes that start a background sync before `flush_interval` runs out, so no
/// later fdatasync (a rotation's, a hard write's) has much to flush.
const BYTES_PER_SYNC: u64 = 4 << 20;

/// What a wait of the committer waits for.
struct WaitFor {
    /// Spin (yielding) until then, at most `CommitterWait::spin_yields` times, before parking.
    spin_until: Option<Instant>,
    /// Park until then (`None`: until woken).
    until: Option<Instant>,
    /// Queued writes that end the park.
    wake_at: usize,
}

impl Committer {
    /// The committer thread: steps through the state machine until closed.
    pub fn run(mut self) {
        let mut state = State::Idle;
        while !matches!(state, State::Closed) {
            state = self.step(state);
        }
    }

    /// The one transition function: does what `state` does and returns the next state.
    fn step(&mut self, state: State) -> State {
        match state {
            State::Idle => {
                self.take_background_sync();
                let batch = self.wait_for_requests();
                if batch.is_empty() {
                    // Woken by a background sync's end, or soft writes fell due.
                    if self.flush_due() {
                        self.flush_in_background();
                    }
                    return State::Idle;
                }
                let encoder = std::mem::replace(&mut self.encoder, GroupEncoder::new(0));
                let mut group = Group::new(encoder, self.shared.poisoned(), self.now());
                self.apply(&mut group, batch);
                self.shared.sync_point(SyncPoint::GroupOpened);
                let window = self.options.group_commit_window;
                // A lone writer never waits: gather only after a group answered several writes.
                // A poisoned database applies nothing: it answers at once.
                if self.recent.durable_writes < 2 || window.is_zero() || group.poisoned.is_some() {
                    State::Committing(group)
                } else {
                    State::Gathering { give_up: self.now() + window, group }
                }
            }
            State::Gathering { mut group, give_up } => {
                let now = self.now();
                if group.writes >= self.recent.cohort || group.closing.is_some() || now >= give_up {
                    return State::Committing(group);
                }
                let batch = self.wait_for_cohort(&group, give_up);
                if batch.is_empty() {
                    return State::Committing(group); // nobody came within the gap
                }
                self.apply(&mut group, batch);
                State::Gathering { group, give_up }
            }
            State::Committing(group) => State::Maintaining { closing: self.commit(group) },
            State::Maintaining { closing } => {
                if self.flush_due() || self.journal.unsynced_bytes() >= BYTES_PER_SYNC {
                    self.flush_in_background();
                }
                self.after_group();
                match closing {
                    Some(done) => State::Closing(done),
                    None => {
                        self.pace();
                        State::Idle
                    }
                }
            }
            State::Closing(done) => {
                let result = self.shut_down();
                self.shared.sync_point(SyncPoint::Closed);
                done(result);
                State::Closed
            }
            State::Closed => State::Closed,
        }
    }

    fn now(&self) -> Instant {
        self.shared.clock.now()
    }

    /// Idle: waits for requests and takes every one queued; an empty batch when a background
    /// sync ended or soft writes fell due instead.
    fn wait_for_requests(&mut self) -> Vec<Request> {
        self.shared.sync_point(SyncPoint::Idle);
        let idle_from = self.now();
        let flush_by = self.flush_pending().then(|| self.recent.synced_at + self.options.flush_interval);
        let spin_until = self.callers_come_back_quickly().then(|| idle_from + self.options.committer_wait.spin);
        let batch = {
            let mut queue = self.wait(WaitFor { spin_until, until: flush_by, wake_at: 1 });
            if queue.requests.is_empty() {
                queue.synced_in_background = false;
                Vec::new()
            } else {
                self.take(queue)
            }
        };
        if !batch.is_empty() {
            // How soon callers come back (moving average, 1/4 per group). A gap counts as at
            // most twice the spin, so one late return (a caller's GC pause) does not stop the
            // spinning for the next few writes; three in a row do.
            let spin = self.options.committer_wait.spin;
            let came_back = self.now().saturating_duration_since(idle_from).min(spin * 2);
            self.recent.return_gap = (self.recent.return_gap * 3 + came_back) / 4;
        }
        batch
    }

    /// Gathering: waits for more of the cohort, up to the gap (a quarter of the last fdatasync
    /// or an eighth of the window, whichever is longer) or `give_up`; takes what came.
    ///
    /// After a group that answered several hard writes, their callers tend to come back
    /// together, but one by one (each after its own acknowledgement), or from one JS thread in
    /// a few calls: the first would otherwise make a group of its own and the rest the next.
    fn wait_for_cohort(&mut self, group: &Group, give_up: Instant) -> Vec<Request> {
        let gap = (self.recent.sync_time / 4).max(self.options.group_commit_window / 8);
        let until = give_up.min(self.now() + gap);
        let rest = self.recent.cohort - group.writes;
        let wake_at = if self.options.committer_wait.wake_on_whole_cohort { rest } else { 1 };
        // Spinning callers come back within microseconds: take each as it arrives (and apply it
        // while the others are still being made) rather than park.
        let spin_until = self.callers_come_back_quickly().then_some(until);
        self.shared.sync_point(SyncPoint::Gathering);
        let queue = self.wait(WaitFor { spin_until, until: Some(until), wake_at });
        self.take(queue)
    }

    /// The one wait primitive: spins (yielding the CPU) while `spin_until` allows, then parks
    /// on the condvar until `wake_at` writes are queued, a background sync ends, or `until`.
    /// Returns with the queue locked; it may hold fewer than `wake_at` writes (or none).
    fn wait(&self, w: WaitFor) -> MutexGuard<'_, Queue> {
        if let Some(spin_until) = w.spin_until {
            let mut yields = 0;
            let cap = self.options.committer_wait.spin_yields;
            while self.shared.queued.load(Acquire) == 0 && yields < cap && self.now() < spin_until {
                // Yields rather than pauses: if the caller's thread waits for this CPU, it runs now.
                std::thread::yield_now();
                yields += 1;
            }
        }
        let mut queue = self.shared.queue.lock().unwrap();
        if !queue.requests.is_empty() || queue.synced_in_background {
            return queue;
        }
        loop {
            let timeout = match w.until {
                Some(until) => match until.checked_duration_since(self.now()) {
                    Some(left) if !left.is_zero() => Some(left),
                    _ => return queue,
                },
                None => None,
            };
            queue.wake_at = w.wake_at;
            self.shared.sync_point(SyncPoint::Parking);
            queue = match timeout {
                Some(t) => self.shared.wake.wait_timeout(queue, t).unwrap().0,
                None => self.shared.wake.wait(queue).unwrap(),
            };
            queue.wake_at = 0;
            if queue.writes >= w.wake_at || queue.synced_in_background {
                return queue;
            }
        }
    }

    /// Every request queued.
    fn take(&self, mut queue: MutexGuard<'_, Queue>) -> Vec<Request> {
        self.shared.queued.store(0, Relaxed);
        queue.writes = 0;
        queue.requests.drain(..).collect()
    }

    /// Whether spinning for callers pays: they have been coming back within the spin. Callers a
    /// network round trip away do not, and the spin would only take a CPU from the threads
    /// serving them.
    fn callers_come_back_quickly(&self) -> bool {
        let spin = self.options.committer_wait.spin;
        !spin.is_zero() && self.recent.return_gap <= spin
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
