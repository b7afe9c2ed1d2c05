//! The one road back from the engine to JS for callback-style operations (writes, `sync`, table
//! creation and removal).
//!
//! Each open database owns ONE threadsafe function, created at open from a JS callback (see
//! [`Completions::new`]). Every request carries an id chosen by JS; the engine's threads answer
//! through a [`Reply`] and the JS side settles the promise it keeps under that id. Creating a
//! threadsafe function or a promise per write would cost more than the rest of the binding.
//!
//! Answers wait in a list until JS takes them ([`Completions::deliver`]): it writes them, up to
//! [`ANSWER_SLOTS`] a call, into memory JS reads directly, the [`SharedMemory`] of the database.
//! Its first word counts the answers *sealed*: listed as part of a finished batch. The committer
//! lists a group's answers between [`AckListener::acknowledging`] and `acknowledged`, and seals
//! them at the end, so a group's 64 answers are taken together, not its first alone while the
//! others follow; any other thread (the index worker, a request failed at close) seals what it
//! lists at once.
//!
//! JS learns of sealed answers in one of two ways:
//! - polling: while a hard write waits, the JS thread spins on the sealed count
//!   (`src/handle.ts`), a load from memory, with the shared memory's second word set;
//! - the doorbell: otherwise, sealing answers calls the threadsafe function (an eventfd write,
//!   ~1 µs), once until JS takes answers again, and the event loop's next turn takes them.
//!
//! The doorbell is rung only while JS does not poll, and after the batch is sealed: it is off
//! the path of a lone hard writer's answer. The two words are a Dekker pair: sealing stores the
//! count, then reads the polling word; JS clears the polling word, then reads the count. One of
//! the two sees the other's store (both sequentially consistent), so no answer is left waiting.
//!
//! Keep-alive: the threadsafe function is created unreferenced, so a forgotten open database does
//! not keep Node running. [`Pending`] references it while any request is outstanding, so an
//! awaited write never lets Node exit early. That count changes on the JS thread only.
//!
//! Each write is timed through the stages outside the engine ([`BindingStages`], added to the
//! engine's own in `stats().write_stages`): waiting for the pool and parsing (large batches only),
//! and the delivery of the answer to JS, which waits for the event loop.

use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering::{Relaxed, SeqCst}};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use napi::bindgen_prelude::Function;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{sys, Env, Status};
use wharf_engine::{AckListener, Error as EngineError, LatencyHistogram, WriteResult};

/// Numbers per answer in the shared memory's answer slots: the request id; the counts of a
/// write (inserted, replaced, unchanged, deleted, skipped, errors; 0 for requests without a
/// result); and -1, or the index `d` of its details in [`Completions::take_details`]:
/// `details[2d]` is null for a success or the `WHARF_…` code of a failure, `details[2d + 1]` the
/// failure's message, or the whole result as JSON when it has more than counts (`first_error`,
/// `generated_keys`, `document_errors`).
///
/// Numbers in shared memory, not an object per answer nor an array: building either natively
/// costs ~100 ns per value on the JS thread, and even a typed array per delivery ~1 µs.
const ANSWER_FIELDS: usize = 8;

/// Answers one [`Completions::deliver`] writes at most.
const ANSWER_SLOTS: usize = 512;

/// Request ids one `insertEach` call carries at most, in the shared memory's outbox.
const OUTBOX_SLOTS: usize = 4096;

/// The shared memory's 32-bit words (mirrored in `src/binding.ts`).
const SEALED_WORD: usize = 0;
const POLLING_WORD: usize = 1;
/// Bytes before the answer slots: four words.
const WORDS_BYTES: usize = 16;
const OUTBOX_OFFSET: usize = WORDS_BYTES + ANSWER_SLOTS * ANSWER_FIELDS * 8;

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

/// Its value is a doorbell: the answers wait in [`Pending::listed`].
type Tsfn = ThreadsafeFunction<(), (), (), Status, false, true>;

/// The completion channel of one database.
#[derive(Clone)]
pub struct Completions {
    tsfn: Arc<Tsfn>,
    pending: Arc<Pending>,
}

impl Completions {
    /// Builds the channel on the JS thread from the doorbell callback JS handed to `open`.
    pub fn new(doorbell: &Function<'_, (), ()>) -> napi::Result<Completions> {
        let pending = Arc::new(Pending::default());
        let tsfn = doorbell.build_threadsafe_function::<()>().weak::<true>().build_callback(|_| Ok(()))?;
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

    /// The shared memory as a JS `ArrayBuffer`. Once per database: V8 allows one `ArrayBuffer`
    /// per external memory block.
    pub fn shared_memory(&self, env: &Env) -> napi::Result<sys::napi_value> {
        if self.pending.exposed.swap(true, Relaxed) {
            return Err(napi::Error::from_reason("the shared memory is exposed already"));
        }
        self.pending.memory.expose(env, self.pending.clone())
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
        Ok(unsafe { self.pending.memory.outbox() }[..n].to_vec())
    }

    /// The details of the answers [`Completions::deliver`] wrote last (see [`ANSWER_FIELDS`]).
    pub fn take_details(&self) -> Vec<Option<String>> {
        std::mem::take(&mut *self.pending.details.lock().unwrap())
    }

    /// For the engine's [`wharf_engine::Database::set_ack_listener`].
    pub fn ack_listener(&self) -> Box<dyn AckListener> {
        Box::new(Sealer {
            tsfn: self.tsfn.clone(),
            pending: self.pending.clone(),
        })
    }

    /// Adds the binding's stages to the engine's `write_stages` (JSON of `wharf_engine::Stats`).
    pub fn add_write_stages(&self, engine_stages: &mut serde_json::Value) {
        let s = &self.pending.stages;
        for (name, h) in [("poolWait", &s.pool_wait), ("parse", &s.parse), ("delivery", &s.delivery)] {
            engine_stages[name] = serde_json::to_value(h.summary()).unwrap_or_default();
        }
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

/// Answers listed and not yet delivered, and how many were listed ever.
#[derive(Default)]
struct Listed {
    answers: Vec<Answer>,
    total: u64,
}

/// Outstanding requests of one database, counted on the JS thread, and answers sent but not yet
/// received there.
#[derive(Default)]
struct Pending {
    count: AtomicUsize,
    raw: AtomicPtr<sys::napi_threadsafe_function__>,
    stages: BindingStages,
    listed: Mutex<Listed>,
    /// The list `deliver` emptied last, kept for its capacity: a list grown from empty for every
    /// group cost the committer a reallocation every few answers.
    spare: Mutex<Vec<Answer>>,
    /// The committer is sending a batch, and seals it at the end.
    acknowledging: AtomicBool,
    /// The doorbell rang and JS has not taken answers since.
    rung: AtomicBool,
    /// The details of the answers delivered last (JS thread).
    details: Mutex<Vec<Option<String>>>,
    memory: SharedMemory,
    /// `memory` was handed to JS.
    exposed: AtomicBool,
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
        // The low 32 bits: JS compares counts by their difference.
        self.memory.word(SEALED_WORD).store(listed.total as u32, SeqCst);
        let waiting = !listed.answers.is_empty();
        drop(listed);
        if waiting && self.memory.word(POLLING_WORD).load(SeqCst) == 0 && !self.rung.swap(true, SeqCst) {
            // Non-blocking: the queue is unbounded, and the committer must never wait on JS.
            let _ = tsfn.call((), ThreadsafeFunctionCallMode::NonBlocking);
        }
    }

    /// On the JS thread: writes up to [`ANSWER_SLOTS`] listed answers into the shared memory.
    fn deliver(&self, env: &Env) -> u32 {
        // Before taking: a seal after this rings again (at worst once for answers taken here).
        self.rung.store(false, SeqCst);
        let mut answers = std::mem::take(&mut *self.spare.lock().unwrap());
        {
            let mut listed = self.listed.lock().unwrap();
            if listed.answers.len() <= ANSWER_SLOTS {
                std::mem::swap(&mut answers, &mut listed.answers);
            } else {
                answers.extend(listed.answers.drain(..ANSWER_SLOTS));
            }
        }
        let n = answers.len();
        self.end(env, n);
        let now = Instant::now();
        let mut details = self.details.lock().unwrap();
        details.clear();
        // Only this thread touches the slots, and only inside calls from JS.
        let slots = unsafe { self.memory.slots() };
        for (a, slot) in answers.drain(..).zip(slots.chunks_exact_mut(ANSWER_FIELDS)) {
            if let Some(answered) = a.answered {
                self.stages.delivery.record(now - answered);
            }
            slot[0] = a.id as f64;
            slot[1..7].copy_from_slice(&a.counts);
            slot[7] = if a.code.is_none() && a.text.is_empty() {
                -1.0
            } else {
                details.push(a.code.map(String::from));
                details.push(Some(a.text));
                (details.len() / 2 - 1) as f64
            };
        }
        if answers.capacity() <= SPARE_ANSWERS {
            *self.spare.lock().unwrap() = answers;
        }
        n as u32
    }
}

/// Memory JS and the binding share, for the life of both: four 32-bit words (the sealed count
/// and the polling flag; see the module docs), then [`ANSWER_SLOTS`] answers of
/// [`ANSWER_FIELDS`] numbers, then the outbox: [`OUTBOX_SLOTS`] request ids JS writes for
/// `insertEach` (a typed array per call had cost ~0.5 µs). Allocated by the binding; the
/// `ArrayBuffer` JS holds keeps the [`Pending`] that owns it alive.
struct SharedMemory {
    block: NonNull<u64>,
}

const SHARED_BYTES: usize = OUTBOX_OFFSET + OUTBOX_SLOTS * 4;

// The words are accessed atomically only; the slots and the outbox by the JS thread only.
unsafe impl Send for SharedMemory {}
unsafe impl Sync for SharedMemory {}

impl Default for SharedMemory {
    fn default() -> Self {
        let block: Box<[u64]> = vec![0u64; SHARED_BYTES / 8].into_boxed_slice();
        SharedMemory { block: NonNull::new(Box::into_raw(block).cast::<u64>()).expect("a boxed slice is never null") }
    }
}

impl Drop for SharedMemory {
    fn drop(&mut self) {
        let slice = std::ptr::slice_from_raw_parts_mut(self.block.as_ptr(), SHARED_BYTES / 8);
        drop(unsafe { Box::from_raw(slice) });
    }
}

impl SharedMemory {
    fn word(&self, i: usize) -> &AtomicU32 {
        debug_assert!(i < WORDS_BYTES / 4);
        unsafe { &*self.block.as_ptr().cast::<AtomicU32>().add(i) }
    }

    /// # Safety
    /// On the JS thread only, and not while JS could read them (inside a call from JS).
    #[allow(clippy::mut_from_ref)]
    unsafe fn slots(&self) -> &mut [f64] {
        let first = self.block.as_ptr().cast::<u8>().add(WORDS_BYTES).cast::<f64>();
        std::slice::from_raw_parts_mut(first, ANSWER_SLOTS * ANSWER_FIELDS)
    }

    /// # Safety
    /// On the JS thread only, inside a call from JS.
    unsafe fn outbox(&self) -> &[u32] {
        let first = self.block.as_ptr().cast::<u8>().add(OUTBOX_OFFSET).cast::<u32>();
        std::slice::from_raw_parts(first, OUTBOX_SLOTS)
    }

    /// An `ArrayBuffer` over the memory that keeps `owner` alive until it is collected.
    fn expose(&self, env: &Env, owner: Arc<Pending>) -> napi::Result<sys::napi_value> {
        unsafe extern "C" fn release(_env: sys::napi_env, _data: *mut c_void, hint: *mut c_void) {
            drop(unsafe { Arc::from_raw(hint as *const Pending) });
        }
        let hint = Arc::into_raw(owner) as *mut c_void;
        let mut buffer = std::ptr::null_mut();
        let status = unsafe {
            sys::napi_create_external_arraybuffer(env.raw(), self.block.as_ptr().cast(), SHARED_BYTES, Some(release), hint, &mut buffer)
        };
        if status != sys::Status::napi_ok {
            drop(unsafe { Arc::from_raw(hint as *const Pending) });
            // A runtime without external buffers (Electron) would copy: JS would never see a seal.
            return Err(napi::Error::from_reason(format!("external ArrayBuffers are needed (napi status {status})")));
        }
        Ok(buffer)
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
