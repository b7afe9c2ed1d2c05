//! The one road back from the engine to JS for callback-style operations (writes, `sync`, table
//! creation and removal).
//!
//! Each open database owns ONE threadsafe function, created at open from a JS callback (see
//! [`Args`]). Every request carries an id chosen by JS; the engine's committer thread answers
//! through a [`Reply`] and the JS side settles the promise it keeps under that id. Creating a
//! threadsafe function or a promise per write would cost more than the rest of the binding.
//!
//! Answers are delivered in batches: a reply joins the database's list of undelivered answers,
//! and only the one that finds the list empty calls the threadsafe function. The JS callback
//! then receives every answer listed by the time it runs (a group's, typically) in one call, so
//! the callers' continuations all run in one microtask checkpoint, and the writes they send next
//! reach the engine together (see `src/handle.ts`).
//!
//! Keep-alive: the threadsafe function is created unreferenced, so a forgotten open database does
//! not keep Node running. [`Pending`] references it while any request is outstanding, so an
//! awaited write never lets Node exit early. That count changes on the JS thread only.
//!
//! Each write is timed through the stages outside the engine ([`BindingStages`], added to the
//! engine's own in `stats().write_stages`): waiting for the pool and parsing (large batches only),
//! and the delivery of the answer to the JS callback, which waits for the event loop.
//!
//! [`Completions::answers_queued`] tells the JS side, without a turn of its event loop, how many
//! answers of finished groups wait to be delivered: the poll for durable answers
//! (`src/handle.ts`) busy-waits on it in short slices instead of turning the loop continuously.
//! It counts only answers the committer has finished sending ([`Completions::ack_listener`]): a
//! group's 64 answers are delivered together, not its first alone while the others follow.

use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering::{Acquire, Relaxed, Release}};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use napi::bindgen_prelude::{Float64Array, FnArgs, Function};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{sys, Env, Status};
use wharf_engine::{AckListener, Error as EngineError, LatencyHistogram, WriteResult};

/// JS signature: `(answers, details)`.
///
/// - `answers`: [`ANSWER_FIELDS`] numbers per answer: the request id; the counts of a write
///   (inserted, replaced, unchanged, deleted, skipped, errors; 0 for requests without a result);
///   and -1, or the index `d` of its details in `details`.
/// - `details[2d]` is null for a success, or the `WHARF_…` code of a failure; `details[2d + 1]` is
///   the failure's message, or the whole result as JSON when it has more than counts
///   (`first_error`, `generated_keys`, `document_errors`).
///
/// Numbers in one typed array, not an object per answer nor a JS array: building either natively
/// costs ~100 ns per value on the JS thread (with 64 writers, a tenth of its time went to it).
pub type Args = FnArgs<(Float64Array, Vec<Option<String>>)>;

/// Numbers per answer in [`Args`].
const ANSWER_FIELDS: usize = 8;

/// The largest emptied answer list kept for reuse.
const SPARE_ANSWERS: usize = 4096;

struct Answer {
    id: u32,
    /// When the engine answered a write: the start of its delivery stage.
    answered: Option<Instant>,
    code: Option<&'static str>,
    text: String,
    counts: [f64; 6],
}

/// Its value is a doorbell: the answers wait in [`Pending::answers`].
type Tsfn = ThreadsafeFunction<(), (), Args, Status, false, true>;

/// The completion channel of one database.
#[derive(Clone)]
pub struct Completions {
    tsfn: Arc<Tsfn>,
    pending: Arc<Pending>,
}

impl Completions {
    /// Builds the channel on the JS thread from the callback JS handed to `open`.
    pub fn new(callback: &Function<'_, Args, ()>) -> napi::Result<Completions> {
        let pending = Arc::new(Pending::default());
        let on_js_thread = pending.clone();
        let tsfn = callback
            .build_threadsafe_function::<()>()
            .weak::<true>()
            .build_callback(move |ctx| Ok(on_js_thread.deliver(&ctx.env)))?;
        pending.raw.store(tsfn.raw(), Relaxed);
        Ok(Completions {
            tsfn: Arc::new(tsfn),
            pending,
        })
    }

    /// Registers request `id` (on the JS thread) and returns the handle that answers it.
    pub fn start(&self, env: &Env, id: u32) -> Reply {
        self.pending.begin(env, 1);
        Reply {
            id,
            tsfn: Some(self.tsfn.clone()),
            pending: self.pending.clone(),
        }
    }

    /// Registers requests `ids` (on the JS thread), answered together by one handle: one
    /// request to the engine for many single-document writes (`insertEach`). One handle, not
    /// one per write: each handle's reference counts are taken on the JS thread and dropped on
    /// the committer, a cache line crossing cores both ways for every write.
    pub fn start_each(&self, env: &Env, ids: Vec<u32>) -> EachReply {
        self.pending.begin(env, ids.len());
        EachReply {
            ids,
            tsfn: Some(self.tsfn.clone()),
            pending: self.pending.clone(),
        }
    }

    /// On the JS thread: hands every answer queued so far to `callback` now, instead of on the
    /// event loop's next turn (the threadsafe function, rung already, then finds none).
    pub fn deliver_now(&self, env: &Env, callback: &Function<'_, Args, ()>) -> napi::Result<()> {
        callback.call(self.pending.deliver(env))
    }

    /// Answers of finished groups that the JS callback has not received yet.
    pub fn answers_queued(&self) -> u32 {
        let p = &self.pending;
        p.sealed.load(Acquire).saturating_sub(p.delivered.load(Relaxed)) as u32
    }

    /// For the engine's [`wharf_engine::Database::set_ack_listener`]: the answers sent so far
    /// belong to finished groups.
    pub fn ack_listener(&self) -> AckListener {
        let pending = self.pending.clone();
        Box::new(move || pending.sealed.store(pending.sent.load(Relaxed), Release))
    }

    /// Adds the binding's stages to the engine's `write_stages` (JSON of `wharf_engine::Stats`).
    pub fn add_write_stages(&self, engine_stages: &mut serde_json::Value) {
        let s = &self.pending.stages;
        for (name, h) in [("poolWait", &s.pool_wait), ("parse", &s.parse), ("delivery", &s.delivery)] {
            engine_stages[name] = serde_json::to_value(h.summary()).unwrap_or_default();
        }
    }
}

/// The stages of each write (insert, delete) outside the engine: before it (a batch parsed on the
/// pool) and after it (back to the JS callback that settles the promise).
#[derive(Default)]
struct BindingStages {
    /// Batches parsed on the pool: the call → a pool thread starts parsing.
    pool_wait: LatencyHistogram,
    /// Batches parsed on the pool: parsing.
    parse: LatencyHistogram,
    /// A write acknowledged → the JS callback runs: how long the event loop kept the answer waiting.
    delivery: LatencyHistogram,
}

/// Outstanding requests of one database, counted on the JS thread, and answers sent but not yet
/// received there.
#[derive(Default)]
struct Pending {
    count: AtomicUsize,
    /// Answers listed, ever (under the `answers` lock).
    sent: AtomicU64,
    /// `sent` when the committer last finished sending a group's answers.
    sealed: AtomicU64,
    /// Answers handed to JS, ever (on the JS thread).
    delivered: AtomicU64,
    raw: AtomicPtr<sys::napi_threadsafe_function__>,
    stages: BindingStages,
    /// Answers sent and not yet delivered, in the order sent.
    answers: Mutex<Vec<Answer>>,
    /// The list `deliver` emptied last, kept for its capacity: a list grown from empty for every
    /// group cost the committer a reallocation every few answers.
    spare: Mutex<Vec<Answer>>,
}

impl Pending {
    fn begin(&self, env: &Env, requests: usize) {
        if self.count.fetch_add(requests, Relaxed) == 0 && requests > 0 {
            unsafe { sys::napi_ref_threadsafe_function(env.raw(), self.raw.load(Relaxed)) };
        }
    }

    fn end(&self, env: &Env, answered: usize) {
        if answered > 0 && self.count.fetch_sub(answered, Relaxed) == answered {
            unsafe { sys::napi_unref_threadsafe_function(env.raw(), self.raw.load(Relaxed)) };
        }
    }

    /// Lists answers under one lock; the first answer into an empty list rings the doorbell.
    /// `new` runs under the lock: pass answers already built.
    fn send(&self, tsfn: &Tsfn, new: impl ExactSizeIterator<Item = Answer>) {
        let n = new.len() as u64;
        if n == 0 {
            return;
        }
        let mut answers = self.answers.lock().unwrap();
        let ring = answers.is_empty();
        answers.extend(new);
        self.sent.fetch_add(n, Relaxed);
        drop(answers);
        if ring {
            // Non-blocking: the queue is unbounded, and the committer must never wait on JS.
            let _ = tsfn.call((), ThreadsafeFunctionCallMode::NonBlocking);
        }
    }

    /// On the JS thread: takes every answer listed so far, as the callback's arguments.
    fn deliver(&self, env: &Env) -> Args {
        let mut answers = std::mem::take(&mut *self.spare.lock().unwrap());
        std::mem::swap(&mut answers, &mut *self.answers.lock().unwrap());
        self.delivered.fetch_add(answers.len() as u64, Relaxed);
        self.end(env, answers.len());
        let now = Instant::now();
        let mut numbers = Vec::with_capacity(answers.len() * ANSWER_FIELDS);
        let mut details = Vec::new();
        for a in answers.drain(..) {
            if let Some(answered) = a.answered {
                self.stages.delivery.record(now - answered);
            }
            numbers.push(a.id as f64);
            numbers.extend(a.counts);
            if a.code.is_none() && a.text.is_empty() {
                numbers.push(-1.0);
            } else {
                numbers.push((details.len() / 2) as f64);
                details.push(a.code.map(String::from));
                details.push(Some(a.text));
            }
        }
        if answers.capacity() <= SPARE_ANSWERS {
            *self.spare.lock().unwrap() = answers;
        }
        FnArgs::from((Float64Array::new(numbers), details))
    }
}

impl Answer {
    /// For a request without a result.
    fn done(id: u32) -> Answer {
        Answer { id, answered: None, code: None, text: String::new(), counts: [0.0; 6] }
    }

    fn write(id: u32, result: WriteResult, answered: Instant) -> Answer {
        let counts = [result.inserted, result.replaced, result.unchanged, result.deleted, result.skipped, result.errors].map(|n| n as f64);
        let plain = result.first_error.is_none() && result.generated_keys.is_empty() && result.document_errors.is_empty();
        let text = if plain {
            String::new()
        } else {
            serde_json::to_string(&result).unwrap_or_default()
        };
        Answer { id, answered: Some(answered), code: None, text, counts }
    }

    fn error(id: u32, e: &EngineError) -> Answer {
        Answer { id, answered: None, code: Some(e.code.as_str()), text: e.message.clone(), counts: [0.0; 6] }
    }
}

/// Answers one request exactly once. If it is dropped unanswered (the engine dropped the
/// callback, e.g. while closing), it answers `WHARF_CLOSED`, so no JS promise waits forever.
pub struct Reply {
    id: u32,
    tsfn: Option<Arc<Tsfn>>,
    pending: Arc<Pending>,
}

impl Reply {
    /// A batch parsed on the pool: the call was at `called`, its parse began at `parse_started`
    /// and ends now.
    pub fn parsed_on_pool(&self, called: Instant, parse_started: Instant) {
        let stages = &self.pending.stages;
        stages.pool_wait.record(parse_started - called);
        stages.parse.record(parse_started.elapsed());
    }

    /// For requests without a result (`sync`, table creation and removal).
    pub fn done(self, result: Result<(), EngineError>) {
        let id = self.id;
        match result {
            Ok(()) => self.send(Answer::done(id)),
            Err(e) => self.err(e),
        }
    }

    pub fn write(self, result: Result<WriteResult, EngineError>) {
        let id = self.id;
        match result {
            Ok(r) => self.send(Answer::write(id, r, Instant::now())),
            Err(e) => self.err(e),
        }
    }

    pub fn err(self, e: EngineError) {
        let id = self.id;
        self.send(Answer::error(id, &e));
    }

    fn send(mut self, answer: Answer) {
        if let Some(tsfn) = self.tsfn.take() {
            self.pending.send(&tsfn, std::iter::once(answer));
        }
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        if self.tsfn.is_some() {
            let reply = Reply {
                id: self.id,
                tsfn: self.tsfn.take(),
                pending: self.pending.clone(),
            };
            reply.err(EngineError::closed());
        }
    }
}

/// Answers requests `ids` exactly once, together: request `ids[i]` gets result `i`. Dropped
/// unanswered, it answers each `WHARF_CLOSED`.
pub struct EachReply {
    ids: Vec<u32>,
    tsfn: Option<Arc<Tsfn>>,
    pending: Arc<Pending>,
}

impl EachReply {
    pub fn write_each(mut self, results: Result<Vec<WriteResult>, EngineError>) {
        let Some(tsfn) = self.tsfn.take() else { return };
        let ids = std::mem::take(&mut self.ids);
        // Built before `send` takes the list's lock, which the JS thread waits for: an answer
        // with errors serializes its result.
        let answers: Vec<Answer> = match results {
            Ok(results) if results.len() == ids.len() => {
                let answered = Instant::now();
                ids.into_iter().zip(results).map(|(id, r)| Answer::write(id, r, answered)).collect()
            }
            Ok(results) => {
                let e = EngineError::invalid(format!("{} results for {} writes", results.len(), ids.len()));
                ids.into_iter().map(|id| Answer::error(id, &e)).collect()
            }
            Err(e) => ids.into_iter().map(|id| Answer::error(id, &e)).collect(),
        };
        self.pending.send(&tsfn, answers.into_iter());
    }
}

impl Drop for EachReply {
    fn drop(&mut self) {
        if let Some(tsfn) = self.tsfn.take() {
            let e = EngineError::closed();
            self.pending.send(&tsfn, std::mem::take(&mut self.ids).into_iter().map(|id| Answer::error(id, &e)));
        }
    }
}
