//! Background merging of run files: size-tiered.
//!
//! A checkpoint writes a level-0 run. When a table has `fan_in` (default 4) runs at one level,
//! the merge thread streams them into one run at the next level. Levels never increase from the
//! oldest run to the newest, so a level's runs are always adjacent and a merge replaces them in
//! place without changing which entry is newest. Each ingested byte is rewritten about once per
//! level, `log_fan_in(table size / memtable size)` times; a point read checks at most
//! `fan_in - 1` runs per level, most of them skipped by key range and Bloom filter. We chose
//! tiered over leveled merging because the workload is bulk loading: leveled merging rewrites a
//! byte up to `fan_in` times per level to keep reads at one run per level, and Wharf's loads
//! care about write throughput first. A merge that includes the table's oldest run drops
//! deletes, since nothing older remains for them to hide.
//!
//! The merge thread yields to checkpoints (flushes free memory and let segments recycle; merges
//! only make reads cheaper), streams with bounded memory, and reports its measured rate to
//! pacing.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::checkpoint::{Background, MaintenanceState};
use crate::error::Result;
use crate::manifest::{self, RunEntry};
use crate::run::{Run, RunWriter};
use crate::table::Catalog;
use crate::tree::{MergingIter, Source};

/// Wakes the merge thread, and tells it when a checkpoint is running.
#[derive(Default)]
pub(crate) struct MergeSignal {
    state: Mutex<(bool, bool)>,
    wake: Condvar,
    pub checkpoint_running: AtomicBool,
}

impl MergeSignal {
    pub fn checkpoint_started(&self) {
        self.checkpoint_running.store(true, Relaxed);
    }

    pub fn checkpoint_done(&self) {
        self.checkpoint_running.store(false, Relaxed);
        self.state.lock().unwrap().0 = true;
        self.wake.notify_one();
    }

    pub fn stop(&self) {
        self.state.lock().unwrap().1 = true;
        self.wake.notify_one();
    }

    fn stopping(&self) -> bool {
        self.state.lock().unwrap().1
    }

    /// Waits for new runs; false once stopping.
    fn wait(&self) -> bool {
        let mut s = self.state.lock().unwrap();
        while !s.0 && !s.1 {
            s = self.wake.wait(s).unwrap();
        }
        s.0 = false;
        !s.1
    }
}

/// The most inputs one merge takes (a backlog merges in one pass rather than many).
const MAX_INPUTS: usize = 16;

/// Picks the next merge: the lowest level, in any table, holding `fan_in` runs or more.
/// Returns the table id and the input runs' file names, oldest first.
pub(crate) fn pick(tables: &[(u32, Vec<RunEntry>)], fan_in: usize) -> Option<(u32, Vec<String>, u32, bool)> {
    let mut best: Option<(u32, Vec<String>, u32, bool)> = None;
    for (id, runs) in tables {
        let mut i = 0;
        while i < runs.len() {
            let level = runs[i].level;
            let j = i + runs[i..].iter().take_while(|r| r.level == level).count();
            if j - i >= fan_in && best.as_ref().is_none_or(|b| level < b.2) {
                let inputs = runs[i..j.min(i + MAX_INPUTS)].iter().map(|r| r.file.clone()).collect();
                best = Some((*id, inputs, level, i == 0));
            }
            i = j;
        }
    }
    best
}

pub(crate) struct Merger {
    pub bg: Arc<Background>,
    pub catalog: Arc<std::sync::RwLock<Catalog>>,
    pub state: Arc<Mutex<MaintenanceState>>,
    pub fan_in: usize,
}

impl Merger {
    pub fn run(self) {
        while self.bg.merges.wait() {
            loop {
                let tables: Vec<(u32, Vec<RunEntry>)> =
                    self.bg.manifest.lock().unwrap().tables.iter().map(|t| (t.id, t.runs.clone())).collect();
                let Some((table_id, inputs, level, oldest)) = pick(&tables, self.fan_in) else { break };
                match self.merge(table_id, &inputs, level + 1, oldest) {
                    Ok(true) => {}
                    Ok(false) => break, // stopping, or the table went away
                    Err(e) => {
                        self.state.lock().unwrap().failure = Some(e);
                        return;
                    }
                }
            }
        }
    }

    /// Merges `inputs` into one run at `level`; false when abandoned.
    fn merge(&self, table_id: u32, inputs: &[String], level: u32, oldest: bool) -> Result<bool> {
        let Some(table) = self.catalog.read().unwrap().by_id.get(&table_id).cloned() else { return Ok(false) };
        let runs: Vec<Arc<Run>> = {
            let data = table.data.read();
            let found: Vec<_> = inputs.iter().filter_map(|n| data.runs.iter().find(|r| r.name == *n).cloned()).collect();
            if found.len() != inputs.len() {
                return Ok(false);
            }
            found
        };
        let file = self.bg.new_run_name();
        let mut w = RunWriter::create(&*self.bg.vfs, &file, table_id)?;
        let sources: Vec<Source<'_>> = runs.iter().rev().map(|r| Box::new(r.iter(None, false, None)) as Source<'_>).collect();
        let (mut busy, mut since) = (Duration::ZERO, Instant::now());
        let mut reported = 0u64;
        for entry in MergingIter::new(sources, false)? {
            let (key, doc) = entry?;
            if doc.is_some() || !oldest {
                w.add(&key, doc.as_deref())?;
            }
            if w.bytes() - reported >= 4 << 20 {
                self.bg.throttle(w.bytes() - reported);
                busy += since.elapsed();
                self.bg.rates.record_merge(w.bytes() - reported, busy, &self.bg.env.counters);
                reported = w.bytes();
                busy = Duration::ZERO;
                // Checkpoints first.
                while self.bg.merges.checkpoint_running.load(Relaxed) && !self.bg.merges.stopping() {
                    std::thread::sleep(Duration::from_millis(2));
                }
                if self.bg.merges.stopping() {
                    drop(w);
                    let _ = self.bg.vfs.remove(&file);
                    return Ok(false);
                }
                since = Instant::now();
            }
        }
        self.bg.throttle(w.bytes() - reported);
        let (entries, bytes) = w.finish()?;
        self.bg.rates.record_merge(bytes.saturating_sub(reported), busy + since.elapsed(), &self.bg.env.counters);
        let merged = (entries > 0).then(|| RunEntry { file: file.clone(), entries, bytes, level });
        let run = match &merged {
            Some(_) => Some(Arc::new(Run::open(&*self.bg.vfs, &file)?)),
            None => None,
        };
        self.bg.vfs.sync_dir().map_err(|e| crate::Error::io("syncing the database directory", e))?;

        let mut current = self.bg.manifest.lock().unwrap();
        let Some(entry) = current.tables.iter().find(|t| t.id == table_id) else {
            let _ = self.bg.vfs.remove(&file);
            return Ok(false);
        };
        let Some(at) = entry.runs.iter().position(|r| r.file == inputs[0]) else {
            let _ = self.bg.vfs.remove(&file);
            return Ok(false);
        };
        let mut next = current.clone();
        next.version += 1;
        let runs = &mut next.tables.iter_mut().find(|t| t.id == table_id).unwrap().runs;
        runs.splice(at..at + inputs.len(), merged.clone());
        manifest::store(&*self.bg.vfs, &next)?;
        self.bg.note_shape(&next);
        *current = next;
        {
            let mut data = table.data.write();
            if let Some(at) = data.runs.iter().position(|r| r.name == inputs[0]) {
                data.runs.splice(at..at + inputs.len(), run);
            }
        }
        drop(current);
        for name in inputs {
            let _ = self.bg.vfs.remove(name);
        }
        self.bg.env.counters.merges.fetch_add(1, Relaxed);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(levels: &[u32]) -> Vec<RunEntry> {
        levels.iter().enumerate().map(|(i, l)| RunEntry { file: format!("r{i}"), entries: 1, bytes: 1, level: *l }).collect()
    }

    #[test]
    fn picks_the_lowest_full_level_and_knows_when_it_holds_the_oldest_run() {
        assert_eq!(pick(&[(1, runs(&[1, 0, 0, 0]))], 4), None);
        let (id, inputs, level, oldest) = pick(&[(1, runs(&[1, 1, 1, 1, 0, 0, 0, 0])), (2, runs(&[2, 1]))], 4).unwrap();
        assert_eq!((id, inputs, level, oldest), (1, vec!["r4".into(), "r5".into(), "r6".into(), "r7".into()], 0, false));
        let (_, _, level, oldest) = pick(&[(1, runs(&[1, 1, 1, 1, 0]))], 4).unwrap();
        assert_eq!((level, oldest), (1, true));
    }
}
