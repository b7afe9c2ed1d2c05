//! Between groups and at close: the background flush of soft writes, checkpoints and segment
//! recycling, pacing, and the close's final checkpoint.

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc;
use std::time::Duration;

use super::{fail, Committer};
use crate::checkpoint::{CheckpointJob, TableCut, Task};
use crate::error::{Error, Result};
use crate::manifest::IndexSpec;
use crate::pacing::{Debt, Decision};

impl Committer {
    /// Soft writes wait to be synced, and no background sync covers them yet. A poisoned
    /// journal is never synced again, so there is nothing to flush.
    pub(super) fn flush_pending(&self) -> bool {
        self.journal.has_unsynced() && !self.journal.background_sync_pending() && self.shared.poisoned().is_none()
    }

    /// Soft writes are due on disk: unsynced bytes older than `flush_interval`.
    pub(super) fn flush_due(&self) -> bool {
        self.flush_pending() && self.now() >= self.recent.synced_at + self.options.flush_interval
    }

    /// Hands a sync of everything written so far to the flusher thread.
    /// The sync starts the flush window again.
    pub(super) fn flush_in_background(&mut self) {
        if let Some(ticket) = self.journal.sync_ticket() {
            self.flusher.request(ticket);
            self.recent.synced_at = self.now();
        }
    }

    /// Takes the outcome of a finished background sync; a failure poisons, as on the committer.
    pub(super) fn take_background_sync(&mut self) {
        match self.flusher.take_done() {
            Some(Ok((segment_id, offset, sync_ns))) => self.journal.synced_in_background(segment_id, offset, sync_ns),
            Some(Err(e)) => {
                self.journal.synced_in_background(u64::MAX, 0, 0);
                self.shared.poison_with(&e);
            }
            None => {}
        }
    }

    /// Recycles segments a finished checkpoint released, and starts the next checkpoint when due.
    pub(super) fn after_group(&mut self) {
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
        self.recent.checkpoint_started = self.now();
        self.background.merges.checkpoint_started();
        self.tasks.send(Task::Checkpoint(job, reply)).map_err(|_| Error::closed())
    }

    fn wait_for_checkpoint(&self) {
        while self.shared.maintenance.lock().unwrap().in_flight {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Waits before the next group as pacing decides (see `pacing.rs`).
    pub(super) fn pace(&mut self) {
        let c = self.shared.counters.clone();
        let debt = Debt {
            memtable_bytes: c.memtable_bytes.load(Relaxed),
            frozen_bytes: c.frozen_memtable_bytes.load(Relaxed),
            level0_runs: self.background.level0_runs.load(Relaxed) as usize,
            levels: self.background.levels.load(Relaxed) as u32,
            flush_elapsed: self.now().saturating_duration_since(self.recent.checkpoint_started),
        };
        match self.pacer.decide(self.recent.group_bytes, &debt, &self.background.rates, &c) {
            Decision::Free => {}
            Decision::Wait(d) => {
                c.paced_groups.fetch_add(1, Relaxed);
                c.pacing_delay_us.fetch_add(d.as_micros() as u64, Relaxed);
                self.shared.clock.sleep(d);
            }
            Decision::Stop => self.wait_for_flush(),
        }
    }

    /// Pacing keeps memtables below their limit; this makes the bound exact: a group that
    /// would take them past it while a flush runs waits for the flush. (Pacing's last group
    /// could cross it by its own size, 1 run in 40 of the larger-than-memory test under load.)
    pub(super) fn make_room(&mut self, incoming: u64) {
        let c = &self.shared.counters;
        let frozen = c.frozen_memtable_bytes.load(Relaxed);
        if self.pacer.stops(c.memtable_bytes.load(Relaxed) + frozen + incoming, frozen) {
            self.wait_for_flush();
        }
    }

    /// The last resort: memtables are at their limit until the checkpoint ends.
    fn wait_for_flush(&mut self) {
        let c = self.shared.counters.clone();
        let started = self.now();
        c.write_stops.fetch_add(1, Relaxed);
        self.sync_or_poison();
        self.wait_for_checkpoint();
        c.write_stop_us.fetch_add(self.now().saturating_duration_since(started).as_micros() as u64, Relaxed);
    }

    /// Close: a final checkpoint (so the next open replays little), then stop maintenance.
    pub(super) fn shut_down(&mut self) -> Result<()> {
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
