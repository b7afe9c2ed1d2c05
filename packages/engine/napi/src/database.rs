//! `NativeDatabase`: one open engine database plus its completion channel. Database-level calls
//! live here; per-table reads and writes are in `table.rs`.

use std::cell::RefCell;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use napi::bindgen_prelude::{AsyncTask, Function, Unknown};
use napi::Env;
use napi_derive::napi;
use wharf_engine::{Database, Error as EngineError, Options};

use crate::completion::Completions;
use crate::error::{to_napi, Result};
use crate::sequencer::Sequencer;
use crate::tasks::{Close, Open};

/// Engine tunables as JS passes them (already validated by `options.ts`).
#[napi(object)]
pub struct OpenOptions {
    pub segment_size: Option<f64>,
    pub checkpoint_bytes: Option<f64>,
    pub flush_interval_ms: Option<f64>,
    pub group_commit_window_ms: Option<f64>,
    pub memory_budget: Option<f64>,
    pub merge_fan_in: Option<f64>,
    pub background_delay_per_mib_ms: Option<f64>,
}

impl OpenOptions {
    pub fn to_engine(&self) -> Options {
        let mut options = Options::default();
        if let Some(n) = self.segment_size {
            options.segment_size = Some(n as u64);
        }
        if let Some(n) = self.checkpoint_bytes {
            options.checkpoint_bytes = n as u64;
        }
        if let Some(ms) = self.flush_interval_ms {
            options.flush_interval = Duration::from_secs_f64(ms / 1000.0);
        }
        if let Some(ms) = self.group_commit_window_ms {
            options.group_commit_window = Duration::from_secs_f64(ms / 1000.0);
        }
        if let Some(n) = self.memory_budget {
            options.memory_budget = n as u64;
        }
        if let Some(n) = self.merge_fan_in {
            options.merge_fan_in = n as usize;
        }
        if let Some(ms) = self.background_delay_per_mib_ms {
            options.background_delay_per_mib = Duration::from_secs_f64(ms / 1000.0);
        }
        options
    }
}

#[napi]
pub struct NativeDatabase {
    /// `None` once `close` was called: every later call fails with `WHARF_ERR_CLOSED`. A `RefCell`
    /// so that `close` takes `&self`: napi-rs holds a method's borrow of its receiver until an
    /// `AsyncTask` it returned settles, and a `&mut self` close then failed ("cannot be
    /// borrowed mutably…") whenever a large insert's parse task had answered but not yet settled.
    pub(crate) open: RefCell<Option<Live>>,
    /// Where requests are answered; also after `close`, which answers the requests made before it.
    pub(crate) completions: Completions,
    /// The engine's counters as `close` left them (its final checkpoint included), for `stats`
    /// after close: what a load wrote in all is known only then.
    pub(crate) final_stats: Arc<Mutex<Option<serde_json::Value>>>,
}

/// An open database as the binding holds it (clones share it: `Arc`s).
#[derive(Clone)]
pub(crate) struct Live {
    pub db: Database,
    /// Every request that goes to the committer takes its turn here.
    pub order: Arc<Sequencer>,
}

impl NativeDatabase {
    /// The open database, or `WHARF_ERR_CLOSED`.
    pub(crate) fn live(&self) -> Result<Live> {
        self.open.borrow().clone().ok_or_else(|| to_napi(EngineError::closed()))
    }
}

#[napi]
impl NativeDatabase {
    /// Opens (and recovers) the database on the libuv pool. `doorbell` is called when answers
    /// to this database's callback-style requests wait;
    /// `sharedMemory` is a `Uint8Array` over a `SharedArrayBuffer` of the layout's
    /// `sharedBytes`, where they are sealed and delivered (`completion.rs`, `shared_memory.rs`).
    #[napi(ts_return_type = "Promise<NativeDatabase>")]
    pub fn open(
        env: Env,
        dir: String,
        options: OpenOptions,
        doorbell: Function<'_, (), ()>,
        shared_memory: Unknown<'_>,
    ) -> Result<AsyncTask<Open>> {
        let completions =
            Completions::new(&env, &doorbell, &shared_memory).map_err(|e| to_napi(crate::error::invalid(e.reason)))?;
        Ok(AsyncTask::new(Open { dir, options: options.to_engine(), completions: Some(completions) }))
    }

    /// Drains the engine's queue, syncs and stops its threads, on the libuv pool, once every
    /// request made before it was handed over. Idempotent.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close(&self) -> AsyncTask<Close> {
        let open = self.open.borrow_mut().take().map(|live| {
            let turn = live.order.ticket();
            (live, turn)
        });
        AsyncTask::new(Close { open, final_stats: self.final_stats.clone() })
    }

    #[napi]
    pub fn create_table(&self, env: Env, id: u32, name: String, primary_key: String) -> Result<()> {
        let Live { db, order } = self.live()?;
        let reply = self.completions.start(&env, id);
        order.hand_over(move || db.create_table(&name, &primary_key, Box::new(move |r| reply.done(r))));
        Ok(())
    }

    #[napi]
    pub fn drop_table(&self, env: Env, id: u32, name: String) -> Result<()> {
        let Live { db, order } = self.live()?;
        let reply = self.completions.start(&env, id);
        order.hand_over(move || db.drop_table(&name, Box::new(move |r| reply.done(r))));
        Ok(())
    }

    #[napi]
    pub fn sync(&self, env: Env, id: u32) -> Result<()> {
        let Live { db, order } = self.live()?;
        let reply = self.completions.start(&env, id);
        order.hand_over(move || db.sync(Box::new(move |r| reply.done(r))));
        Ok(())
    }

    /// Tables as JSON text: `[{ name, primary_key, documents, bytes }]`. In memory, so synchronous.
    #[napi]
    pub fn list_tables(&self) -> Result<String> {
        Ok(serde_json::to_string(&self.live()?.db.list_tables()).unwrap_or_default())
    }

    /// Writes up to `ANSWER_SLOTS` answers listed so far into the shared memory; returns how
    /// many. JS calls it when it sees answers sealed, or when the doorbell rings.
    #[napi]
    pub fn deliver_answers(&self, env: Env) -> u32 {
        self.completions.deliver(&env)
    }

    /// Gives this thread's CPU to another thread waiting for it, if one is (`sched_yield`). JS
    /// calls it while it polls for answers.
    #[napi]
    pub fn yield_cpu(&self) {
        std::thread::yield_now();
    }

    /// The details of the answers `deliverAnswers` wrote last: `[code | null, text]` for each
    /// answer whose last number is not -1.
    #[napi]
    pub fn answer_details(&self) -> Vec<Option<String>> {
        self.completions.take_details()
    }

    /// The engine's counters as JSON text (snake_case, as in `core/src/stats.rs`), with the
    /// binding's stages added to `write_stages`. Once `close` finished: the counters as it left
    /// them (`WHARF_ERR_CLOSED` while it runs).
    #[napi]
    pub fn stats(&self) -> Result<String> {
        let mut stats = match self.live() {
            Ok(Live { db, .. }) => serde_json::to_value(db.stats()).unwrap_or_default(),
            Err(closed) => self.final_stats.lock().unwrap().clone().ok_or(closed)?,
        };
        self.completions.add_write_stages(&mut stats["write_stages"]);
        Ok(stats.to_string())
    }
}
