//! Work that runs on the libuv pool, off the event loop: open, close, reads, and parsing large
//! insert batches.

use std::cell::RefCell;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use napi::bindgen_prelude::{AsyncTask, Buffer, Either};
use napi::{Env, Task};
use wharf_engine::{Database, DocFormat, Error as EngineError, Options, PreparedDocs, WriteOptions};

use crate::completion::{Completions, Reply};
use crate::database::{Live, NativeDatabase};
use crate::error::reject;
use crate::sequencer::{Sequencer, Ticket};

type EngineResult<T> = std::result::Result<T, EngineError>;

pub struct Open {
    pub dir: String,
    pub options: Options,
    pub completions: Option<Completions>,
}

impl Task for Open {
    type Output = EngineResult<Database>;
    type JsValue = NativeDatabase;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let completions = self.completions.as_ref().expect("computed once");
        Ok(Database::open(&self.dir, self.options.clone()).and_then(|db| {
            db.set_ack_listener(completions.ack_listener())?;
            Ok(db)
        }))
    }

    fn resolve(&mut self, env: Env, output: Self::Output) -> napi::Result<NativeDatabase> {
        match output {
            Ok(db) => {
                let completions = self.completions.take().expect("resolved once");
                Ok(NativeDatabase {
                    open: RefCell::new(Some(Live { db, order: Arc::new(Sequencer::default()) })),
                    completions,
                    final_stats: Default::default(),
                })
            }
            Err(e) => reject(&env, e),
        }
    }
}

pub struct Close {
    /// The database, and close's turn after the requests made before it.
    pub(crate) open: Option<(Live, Ticket)>,
    /// Where the counters go once the engine is closed (`NativeDatabase::final_stats`).
    pub(crate) final_stats: Arc<Mutex<Option<serde_json::Value>>>,
}

impl Task for Close {
    type Output = EngineResult<()>;
    type JsValue = ();

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(match self.open.take() {
            Some((live, turn)) => {
                // Requests made before close may still be parsed on other pool threads: they go
                // to the engine first, and close answers them.
                let (handed_over, wait) = std::sync::mpsc::channel();
                turn.hand_over(move || {
                    let _ = handed_over.send(());
                });
                let _ = wait.recv();
                let closed = live.db.close();
                *self.final_stats.lock().unwrap() = Some(serde_json::to_value(live.db.stats()).unwrap_or_default());
                closed
            }
            None => Ok(()),
        })
    }

    fn resolve(&mut self, env: Env, output: Self::Output) -> napi::Result<()> {
        output.or_else(|e| reject(&env, e))
    }
}

/// A read: runs `job` on the pool and hands JS its JSON text.
pub struct Read {
    job: Option<Box<dyn FnOnce() -> EngineResult<String> + Send>>,
}

impl Read {
    pub fn new(job: impl FnOnce() -> EngineResult<String> + Send + 'static) -> AsyncTask<Read> {
        AsyncTask::new(Read { job: Some(Box::new(job)) })
    }
}

impl Task for Read {
    type Output = EngineResult<String>;
    type JsValue = String;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok((self.job.take().expect("computed once"))())
    }

    fn resolve(&mut self, env: Env, output: Self::Output) -> napi::Result<String> {
        output.or_else(|e| reject(&env, e))
    }
}

/// Insert bytes as JS handed them: a string (copied) or a Buffer (borrowed until the task ends).
pub enum Source {
    Text(String),
    Bytes(Buffer),
}

impl From<Either<String, Buffer>> for Source {
    fn from(data: Either<String, Buffer>) -> Self {
        match data {
            Either::A(text) => Source::Text(text),
            Either::B(bytes) => Source::Bytes(bytes),
        }
    }
}

impl Source {
    pub fn bytes(&self) -> &[u8] {
        match self {
            Source::Text(text) => text.as_bytes(),
            Source::Bytes(bytes) => bytes,
        }
    }
}

/// A large insert batch: parsed on the pool, then submitted from there. Its outcome, parse errors
/// included, goes through the completion channel, so this task itself never fails.
pub struct Prepare {
    /// The batch's place in the order of requests (`sequencer.rs`).
    pub turn: Option<Ticket>,
    pub db: Database,
    pub table: String,
    pub data: Source,
    pub format: DocFormat,
    pub options: WriteOptions,
    pub primary_key: String,
    pub reply: Option<Reply>,
    /// When JS made the call: the start of the batch's wait for a pool thread.
    pub created: Instant,
}

impl Task for Prepare {
    type Output = ();
    type JsValue = ();

    fn compute(&mut self) -> napi::Result<()> {
        let reply = self.reply.take().expect("computed once");
        let parse_started = Instant::now();
        let parsed = PreparedDocs::parse(self.data.bytes(), self.format, &self.primary_key);
        reply.parsed_on_pool(self.created, parse_started);
        let (db, table, options) = (self.db.clone(), std::mem::take(&mut self.table), self.options);
        self.turn.take().expect("computed once").hand_over(move || match parsed {
            Ok(docs) => db.insert(&table, docs, options, Box::new(move |r| reply.write(r))),
            Err(e) => reply.err(e),
        });
        Ok(())
    }

    fn resolve(&mut self, _env: Env, _output: ()) -> napi::Result<()> {
        Ok(())
    }
}
