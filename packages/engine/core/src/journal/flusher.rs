//! Background fdatasync of soft writes. Soft writes must reach disk within `flush_interval`,
//! but an fdatasync of a few hundred milliseconds of bulk load can take tens of milliseconds:
//! on the committer it would hold every write for that long. So the committer hands the sync to
//! this thread and keeps committing; the sync covers every byte written before it starts.
//! Hard writes and `sync()` still sync on the committer: they wait for it anyway.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use crate::error::{Error, Result};
use crate::io::Storage;
use crate::stats::Counters;

/// A sync to make: `file` up to `offset` (everything written so far), covering records up to `seq`.
pub(crate) struct SyncTicket {
    pub file: Arc<dyn Storage>,
    pub name: String,
    pub segment_id: u64,
    pub offset: u64,
    pub seq: u64,
}

#[derive(Default)]
struct State {
    ticket: Option<SyncTicket>,
    /// The outcome of the last sync: (segment id, offset) synced and the fdatasync's ns, or the failure.
    done: Option<Result<(u64, u64, u64)>>,
    stop: bool,
}

#[derive(Default)]
pub(crate) struct Flusher {
    state: Mutex<State>,
    wake: Condvar,
}

impl Flusher {
    pub fn request(&self, ticket: SyncTicket) {
        self.state.lock().unwrap().ticket = Some(ticket);
        self.wake.notify_one();
    }

    /// The outcome of a finished sync, once.
    pub fn take_done(&self) -> Option<Result<(u64, u64, u64)>> {
        self.state.lock().unwrap().done.take()
    }

    pub fn stop(&self) {
        self.state.lock().unwrap().stop = true;
        self.wake.notify_one();
    }

    /// The thread: syncs each ticket, publishes `durable_seq`, then calls `finished` (which
    /// wakes the committer to take the outcome).
    pub fn run(&self, counters: &Counters, finished: impl Fn()) {
        loop {
            let ticket = {
                let mut s = self.state.lock().unwrap();
                loop {
                    if s.stop {
                        return;
                    }
                    if let Some(t) = s.ticket.take() {
                        break t;
                    }
                    s = self.wake.wait(s).unwrap();
                }
            };
            let started = Instant::now();
            let outcome = match ticket.file.sync_data() {
                Ok(()) => {
                    counters.fdatasyncs.fetch_add(1, Relaxed);
                    counters.durable_seq.fetch_max(ticket.seq, Relaxed);
                    Ok((ticket.segment_id, ticket.offset, started.elapsed().as_nanos() as u64))
                }
                Err(e) => Err(Error::io(format!("background fdatasync in {}", ticket.name), e)),
            };
            self.state.lock().unwrap().done = Some(outcome);
            finished();
        }
    }
}
