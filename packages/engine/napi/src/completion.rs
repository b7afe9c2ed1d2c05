//! The one road back from the engine to JS for callback-style operations (writes, `sync`, table
//! creation and removal).
//!
//! Each open database owns ONE threadsafe function, created at open from a JS callback (see
//! [`Completions::new`]). Every request carries an id chosen by JS; the engine's threads answer
//! through a [`Reply`] and the JS side settles the promise it keeps under that id. Creating a
//! threadsafe function or a promise per write would cost more than the rest of the binding.
//!
//! The protocol, its states and invariants: `docs/design/write-path.md`, "The binding: answers to
//! JavaScript".
//!
//! Answers wait in a list until JS takes them ([`Completions::deliver`]): it writes them, up to
//! [`ANSWER_SLOTS`] a call, into memory JS reads directly, the [`SharedMemory`] of the database
//! (a `SharedArrayBuffer` JS created; its layout is in `shared_memory.rs`).
//! Its first word counts the answers *sealed*: listed as part of a finished batch. The committer
//! lists a group's answers between [`AckListener::acknowledging`] and `acknowledged`, and seals
//! them at the end, so a group's 64 answers are taken together, not its first alone while the
//! others follow; any other thread (the index worker, a request failed at close) seals what it
//! lists at once.
//!
//! JS learns of sealed answers in one of two ways:
//! - polling: while a hard write waits, the JS thread spins on the sealed count
//!   (`src/handle.ts`), a load from memory, and takes the answers as soon as it moves;
//! - the doorbell: sealing answers calls the threadsafe function, once until JS takes answers
//!   again, and the event loop's next turn takes them (nothing, if the poll took them first).
//!
//! Keep-alive: the threadsafe function is created unreferenced, so a forgotten open database does
//! not keep Node running. [`Pending`] references it while any request is outstanding, so an
//! awaited write never lets Node exit early. That count changes on the JS thread only.
//!
//! Each write is timed through the stages outside the engine ([`BindingStages`], added to the
//! engine's own in `stats().write_stages`): waiting for the pool and parsing (large batches only),
//! and the delivery of the answer to JS, which waits for the event loop.

use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicUsize,
    Ordering::{Relaxed, SeqCst},
};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use napi::bindgen_prelude::{Function, Unknown};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{sys, Env, Status};
use wharf_engine::{AckListener, Error as EngineError, LatencyHistogram, WriteResult};

use crate::shared_memory::{
    MemoryHold, SharedMemory, ANSWER_COUNTS, ANSWER_COUNTS_FIELD, ANSWER_DETAILS_FIELD, ANSWER_FIELDS, ANSWER_ID_FIELD,
    ANSWER_SLOTS, OUTBOX_SLOTS, SEALED_WORD,
};

struct Answer {
    id: u32,
    /// When the engine answered a write: the start of its delivery stage.
    answered: Option<Instant>,
    code: Option<&'static str>,
    text: String,
    /// In the order of [`ANSWER_COUNTS`].
    counts: [f64; ANSWER_COUNTS.len()],
}

/// Its value is a doorbell: the answers wait in [`Pending::listed`].
type Tsfn = ThreadsafeFunction<(), (), (), Status, false, true>;

/// The completion channel of one database. Owned by the JS thread (the open task, then the
/// `NativeDatabase`), and dropped there: dropping it detaches the shared memory.
pub struct Completions {
    tsfn: Arc<Tsfn>,
    pending: Arc<Pending>,
    /// Keeps the shared memory alive; dropped after every copy of its address is cleared.
    hold: Option<MemoryHold>,
}

impl Completions {
    /// Builds the channel on the JS thread from the doorbell callback and the shared memory (a
    /// `Uint8Array` over a `SharedArrayBuffer`, see `shared_memory.rs`) JS handed to `open`.
    pub fn new(env: &Env, doorbell: &Function<'_, (), ()>, memory: &Unknown<'_>) -> napi::Result<Completions> {
        let (memory, hold) = SharedMemory::attach(env, memory)?;
        let pending = Arc::new(Pending::default());
        pending.listed.lock().unwrap().memory = Some(memory);
        let tsfn = doorbell.build_threadsafe_function::<()>().weak::<true>().build_callback(|_| Ok(()))?;
        pending.raw.store(tsfn.raw(), Relaxed);
        Ok(Completions { tsfn: Arc::new(tsfn), pending, hold: Some(hold) })
    }

    /// Registers request `id` (on the JS thread) and returns the handle that answers it.
    pub fn start(&self, env: &Env, id: u32) -> Reply {
        self.pending.begin(env, 1);
        Reply { id, tsfn: Some(self.tsfn.clone()), pending: self.pending.clone() }
    }

    /// Registers requests `ids` (on the JS thread), answered together by one handle: one
    /// request to the engine for many single-document writes (`insertEach`). One handle, not
    /// one per write: each handle's reference counts are taken on the JS thread and dropped on
    /// the committer, a cache line crossing cores both ways for every write.
    pub fn start_each(&self, env: &Env, ids: Vec<u32>) -> EachReply {
        self.pending.begin(env, ids.len());
        EachReply { ids, tsfn: Some(self.tsfn.clone()), pending: self.pending.clone() }
    }

    /// On the JS thread: writes up to [`ANSWER_SLOTS`] answers listed so far into the shared
    /// memory; returns how many.
    pub fn deliver(&self, env: &Env) -> u32 {
        self.pending.deliver(env)
    }

    /// On the JS thread, inside a call from JS: the first `n` request ids JS wrote into the
    /// shared memory's outbox.
    pub fn outbox(&self, n: usize) -> Result<Vec<u32>, EngineError> {
        if n > OUTBOX_SLOTS {
            return Err(EngineError::invalid(format!("{n} request ids, the outbox holds {OUTBOX_SLOTS}")));
        }
        let memory = self.pending.listed.lock().unwrap().memory;
        // Attached while `self` lives; only this thread touches the outbox, inside this call.
        Ok(memory.map_or_else(Vec::new, |m| unsafe { m.outbox() }[..n].to_vec()))
    }

    /// The details of the answers [`Completions::deliver`] wrote last (see [`ANSWER_FIELDS`]).
    pub fn take_details(&self) -> Vec<Option<String>> {
        std::mem::take(&mut *self.pending.details.lock().unwrap())
    }

    /// For the engine's [`wharf_engine::Database::set_ack_listener`].
    pub fn ack_listener(&self) -> Box<dyn AckListener> {
        Box::new(Sealer { tsfn: self.tsfn.clone(), pending: self.pending.clone() })
    }

    /// Adds the binding's stages to the engine's `write_stages` (JSON of `wharf_engine::Stats`).
    pub fn add_write_stages(&self, engine_stages: &mut serde_json::Value) {
        let s = &self.pending.stages;
        for (name, h) in [("poolWait", &s.pool_wait), ("parse", &s.parse), ("delivery", &s.delivery)] {
            engine_stages[name] = serde_json::to_value(h.summary()).unwrap_or_default();
        }
    }
}

impl Drop for Completions {
    fn drop(&mut self) {
        // Under the list's lock: no thread is sealing into the memory, and none will.
        self.pending.listed.lock().unwrap().memory = None;
        drop(self.hold.take());
    }
}

/// Seals the answers the committer lists between its two calls.
struct Sealer {
    tsfn: Arc<Tsfn>,
    pending: Arc<Pending>,
}

impl AckListener for Sealer {
    fn acknowledging(&self) {
        self.pending.acknowledging.store(true, SeqCst);
    }

    fn acknowledged(&self) {
        // Cleared before sealing: an answer another thread listed meanwhile, which saw the flag
        // set and left its sealing to this call, is under the list's lock by then (see `send`).
        self.pending.acknowledging.store(false, SeqCst);
        self.pending.seal(&self.tsfn);
    }
}

/// The stages of each write (insert, delete) outside the engine: before it (a batch parsed on the
/// pool) and after it (back to JS, which settles the promise).
#[derive(Default)]
struct BindingStages {
    /// Batches parsed on the pool: the call → a pool thread starts parsing.
    pool_wait: LatencyHistogram,
    /// Batches parsed on the pool: parsing.
    parse: LatencyHistogram,
    /// A write acknowledged → JS takes its answer: how long the event loop kept it waiting.
    delivery: LatencyHistogram,
}

/// Answers listed and not yet delivered, how many were listed ever, and where to seal them.
#[derive(Default)]
struct Listed {
    answers: Vec<Answer>,
    total: u64,
    /// `None` once the [`Completions`] are dropped: then nothing is sealed any more.
    memory: Option<SharedMemory>,
}

/// Outstanding requests of one database, counted on the JS thread, and answers sent but not yet
/// received there.
#[derive(Default)]
struct Pending {
    count: AtomicUsize,
    raw: AtomicPtr<sys::napi_threadsafe_function__>,
    stages: BindingStages,
    listed: Mutex<Listed>,
    /// The committer is sending a batch, and seals it at the end.
    acknowledging: AtomicBool,
    /// The doorbell rang and JS has not taken answers since.
    rung: AtomicBool,
    /// The details of the answers delivered last (JS thread).
    details: Mutex<Vec<Option<String>>>,
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

    /// Lists answers under one lock, and seals them unless the committer is sending a batch,
    /// which it seals at its end. `new` runs under the lock: pass answers already built.
    fn send(&self, tsfn: &Tsfn, new: impl ExactSizeIterator<Item = Answer>) {
        if new.len() == 0 {
            return;
        }
        let mut listed = self.listed.lock().unwrap();
        listed.total += new.len() as u64;
        listed.answers.extend(new);
        if !self.acknowledging.load(SeqCst) {
            self.seal_listed(listed, tsfn);
        }
    }

    fn seal(&self, tsfn: &Tsfn) {
        self.seal_listed(self.listed.lock().unwrap(), tsfn);
    }

    /// Publishes the count of answers listed, then rings the doorbell unless JS polls, has
    /// taken them already, or has a ring to answer still.
    fn seal_listed(&self, listed: std::sync::MutexGuard<'_, Listed>, tsfn: &Tsfn) {
        let Some(memory) = listed.memory else { return };
        // The low 32 bits: JS compares counts by their difference. Under the lock that keeps
        // the memory attached.
        memory.word(SEALED_WORD).store(listed.total as u32, SeqCst);
        let waiting = !listed.answers.is_empty();
        drop(listed);
        if waiting && !self.rung.swap(true, SeqCst) {
            // Non-blocking: the queue is unbounded, and the committer must never wait on JS.
            let _ = tsfn.call((), ThreadsafeFunctionCallMode::NonBlocking);
        }
    }

    /// On the JS thread: writes up to [`ANSWER_SLOTS`] listed answers into the shared memory.
    fn deliver(&self, env: &Env) -> u32 {
        // Before taking: a seal after this rings again (at worst once for answers taken here).
        self.rung.store(false, SeqCst);
        let (answers, memory) = {
            let mut listed = self.listed.lock().unwrap();
            let answers = if listed.answers.len() <= ANSWER_SLOTS {
                std::mem::take(&mut listed.answers)
            } else {
                listed.answers.drain(..ANSWER_SLOTS).collect()
            };
            (answers, listed.memory)
        };
        let Some(memory) = memory else { return 0 };
        let n = answers.len();
        self.end(env, n);
        let now = Instant::now();
        let mut details = self.details.lock().unwrap();
        details.clear();
        // Only this thread touches the slots, and only inside calls from JS.
        let slots = unsafe { memory.slots() };
        for (a, slot) in answers.into_iter().zip(slots.chunks_exact_mut(ANSWER_FIELDS)) {
            if let Some(answered) = a.answered {
                self.stages.delivery.record(now - answered);
            }
            slot[ANSWER_ID_FIELD] = a.id as f64;
            slot[ANSWER_COUNTS_FIELD..ANSWER_DETAILS_FIELD].copy_from_slice(&a.counts);
            slot[ANSWER_DETAILS_FIELD] = if a.code.is_none() && a.text.is_empty() {
                -1.0
            } else {
                details.push(a.code.map(String::from));
                details.push(Some(a.text));
                (details.len() / 2 - 1) as f64
            };
        }
        n as u32
    }
}

impl Answer {
    /// For a request without a result.
    fn done(id: u32) -> Answer {
        Answer { id, answered: None, code: None, text: String::new(), counts: [0.0; 6] }
    }

    fn write(id: u32, result: WriteResult, answered: Instant) -> Answer {
        // In the order of `ANSWER_COUNTS`.
        let counts =
            [result.inserted, result.replaced, result.unchanged, result.deleted, result.skipped, result.errors]
                .map(|n| n as f64);
        let plain =
            result.first_error.is_none() && result.generated_keys.is_empty() && result.document_errors.is_empty();
        let text = if plain { String::new() } else { serde_json::to_string(&result).unwrap_or_default() };
        Answer { id, answered: Some(answered), code: None, text, counts }
    }

    fn error(id: u32, e: &EngineError) -> Answer {
        Answer { id, answered: None, code: Some(e.code.as_str()), text: e.message.clone(), counts: [0.0; 6] }
    }
}

/// Answers one request exactly once. If it is dropped unanswered (the engine dropped the
/// callback, e.g. while closing), it answers `WHARF_ERR_CLOSED`, so no JS promise waits forever.
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
            let reply = Reply { id: self.id, tsfn: self.tsfn.take(), pending: self.pending.clone() };
            reply.err(EngineError::closed());
        }
    }
}

/// Answers requests `ids` exactly once, together: request `ids[i]` gets result `i`. Dropped
/// unanswered, it answers each `WHARF_ERR_CLOSED`.
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
