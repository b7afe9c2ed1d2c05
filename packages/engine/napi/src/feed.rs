//! Change feeds of `NativeDatabase`: the engine pushes a table's changes into a bounded queue
//! (`wharf_engine::ChangeFeed`); a threadsafe function per feed, unreferenced, rings JS when a
//! batch is waiting, and JS takes batches on its own thread as one JSON text each.

use std::sync::Mutex;

use napi::bindgen_prelude::Function;
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi_derive::napi;
use wharf_engine::{ChangeFeed, FeedBatch};

use crate::database::NativeDatabase;
use crate::error::{invalid, to_napi, Result};

#[napi]
pub struct NativeChangeFeed {
    feed: Mutex<Option<ChangeFeed>>,
}

#[napi]
impl NativeDatabase {
    /// Subscribes to `table`'s changes; `on_ready` is called (on the JS thread) when a batch is
    /// waiting after a take that emptied the feed, and when the feed ends.
    #[napi]
    pub fn changes(&self, table: String, capacity: u32, on_ready: Function<(), ()>) -> Result<NativeChangeFeed> {
        let live = self.live()?;
        let tsfn = on_ready
            .build_threadsafe_function::<()>()
            .weak::<true>()
            .build_callback(|_| Ok(()))
            .map_err(|e| to_napi(invalid(format!("on_ready: {}", e.reason))))?;
        let ready = Box::new(move || {
            let _ = tsfn.call((), ThreadsafeFunctionCallMode::NonBlocking);
        });
        let feed = live.db.changes(&table, capacity as usize, ready).map_err(to_napi)?;
        Ok(NativeChangeFeed { feed: Mutex::new(Some(feed)) })
    }
}

#[napi]
impl NativeChangeFeed {
    /// Up to `max` changes as `{"skipped":n,"closed":b,"changes":[{"key":k,"old":d|null,"new":d|null},…]}`.
    #[napi]
    pub fn take(&self, max: u32) -> String {
        let feed = self.feed.lock().unwrap();
        let batch = match feed.as_ref() {
            Some(f) => f.take(max as usize),
            None => FeedBatch { closed: true, ..FeedBatch::default() },
        };
        let mut out = String::with_capacity(
            64 + batch
                .changes
                .iter()
                .map(|c| 32 + c.old.as_ref().map_or(4, |d| d.len()) + c.new.as_ref().map_or(4, |d| d.len()))
                .sum::<usize>(),
        );
        out.push_str(&format!("{{\"skipped\":{},\"closed\":{},\"changes\":[", batch.skipped, batch.closed));
        for (i, c) in batch.changes.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str("{\"key\":");
            out.push_str(&c.key.to_json());
            out.push_str(",\"old\":");
            out.push_str(c.old.as_deref().unwrap_or("null"));
            out.push_str(",\"new\":");
            out.push_str(c.new.as_deref().unwrap_or("null"));
            out.push('}');
        }
        out.push_str("]}");
        out
    }

    /// Unsubscribes (idempotent).
    #[napi]
    pub fn close(&self) {
        self.feed.lock().unwrap().take();
    }
}
