//! Background merging of run files: size-tiered.
//!
//! A checkpoint writes a level-0 run. When a table has `fan_in` (default 4) sorted runs at one
//! level, the merge thread streams them into one run at the next level. Adjacent runs of a level
//! whose key ranges follow one another without overlapping (an import's ascending keys) count as
//! one sorted run: merging them would copy every entry unchanged, so they are left as they are,
//! and a load into an empty table in key order writes each byte to the journal and to one run
//! only. Reads skip a run whose key range does not hold the key. Levels never increase from the
//! oldest run to the newest, so a level's runs are always adjacent and a merge replaces them in
//! place without changing which entry is newest. Each ingested byte is rewritten about once per
//! level, `log_fan_in(table size / memtable size)` times; a point read checks at most
//! `fan_in - 1` runs per level, most of them skipped by key range and Bloom filter. We chose
//! tiered over leveled merging because the workload is bulk loading: leveled merging rewrites a
//! byte up to `fan_in` times per level to keep reads at one run per level, and Wharf's loads
//! care about write throughput first. A merge that includes the table's oldest run drops
//! deletes, since nothing older remains for them to hide.
//!
//! Three merge threads share the work by level (see [`MERGE_THREADS`]). They yield to checkpoints (flushes free memory and let segments recycle; merges
//! only make reads cheaper), stream with bounded memory, and report their measured rate to
//! pacing.

use std::ops::RangeInclusive;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::checkpoint::{Background, MaintenanceState, COMPRESS_RUNS};
use crate::error::Result;
use crate::manifest::{self, RunEntry};
use crate::run::{Run, RunWriter};
use crate::table::Catalog;
use crate::tree::{MergingIter, Source};

/// The most inputs one merge takes (a backlog merges in one pass rather than many).
const MAX_INPUTS: usize = 16;

/// Picks the next merge: the lowest level within `levels`, in any table, holding `fan_in` sorted
/// runs or more (see [`manifest::sorted_runs`]). Returns the table id, the input runs' file names (oldest first), their level, and
/// whether they include the table's oldest run.
pub(crate) fn pick(
    tables: &[(u32, Vec<RunEntry>)],
    fan_in: usize,
    levels: &RangeInclusive<u32>,
) -> Option<(u32, Vec<String>, u32, bool)> {
    let mut best: Option<(u32, Vec<String>, u32, bool)> = None;
    for (id, runs) in tables {
        let mut i = 0;
        while i < runs.len() {
            let level = runs[i].level;
            let j = i + runs[i..].iter().take_while(|r| r.level == level).count();
            if levels.contains(&level)
                && manifest::sorted_runs(&runs[i..j]) >= fan_in
                && best.as_ref().is_none_or(|b| level < b.2)
            {
                let inputs = runs[i..j.min(i + MAX_INPUTS)].iter().map(|r| r.file.clone()).collect();
                best = Some((*id, inputs, level, i == 0));
            }
            i = j;
        }
    }
    best
}

/// The merge threads (name, levels each merges): so that a long merge at a higher level never
/// holds up the merges below it. Level 0, the checkpoints' runs, has a thread of its own: pacing
/// slows writes when level-0 runs pile up, and on a thread shared with level 1 they pile up
/// behind every level-1 merge. The large levels have a thread of their own because a merge of
/// gigabytes takes minutes.
pub(crate) const MERGE_THREADS: [(&str, RangeInclusive<u32>); 3] =
    [("wharf-merge-l0", 0..=0), ("wharf-merge-l1", 1..=2), ("wharf-merge-l3", 3..=u32::MAX)];

/// A merged-away run file is cut by this much at a time before it is removed (`delete_run`),
/// with this pause between cuts.
const DELETE_CHUNK: u64 = 64 << 20;
const DELETE_PAUSE: Duration = Duration::from_millis(20);

pub(crate) struct Merger {
    pub bg: Arc<Background>,
    pub catalog: Arc<std::sync::RwLock<Catalog>>,
    pub state: Arc<Mutex<MaintenanceState>>,
    pub fan_in: usize,
    /// The levels this thread merges (disjoint between the two threads, so their inputs are too).
    pub levels: RangeInclusive<u32>,
}

impl Merger {
    pub fn run(self) {
        let mut seen = u64::MAX; // look at the runs once at start
        while let Some(generation) = self.bg.merges.wait(seen) {
            seen = generation;
            loop {
                let tables: Vec<(u32, Vec<RunEntry>)> =
                    self.bg.manifest.lock().unwrap().tables.iter().map(|t| (t.id, t.runs.clone())).collect();
                let Some((table_id, inputs, level, oldest)) = pick(&tables, self.fan_in, &self.levels) else { break };
                match self.merge(table_id, &inputs, level + 1, oldest) {
                    Ok(true) => self.bg.merges.runs_changed(),
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
        let inputs_open: Vec<Arc<Run>> = {
            let data = table.data.read();
            let found: Vec<_> =
                inputs.iter().filter_map(|n| data.runs.iter().find(|r| r.name == *n).cloned()).collect();
            if found.len() != inputs.len() {
                return Ok(false);
            }
            found
        };
        let file = self.bg.new_run_name();
        let expected = inputs_open.iter().fold((0, 0), |(n, b), r| (n + r.entries, b + r.bytes));
        let mut w = RunWriter::create(&*self.bg.vfs, &file, table_id, expected, COMPRESS_RUNS)?;
        let sources: Vec<Source<'_>> =
            inputs_open.iter().rev().map(|r| Box::new(r.iter(None, false)) as Source<'_>).collect();
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
                    self.bg.env.counters.bytes_written_merges.fetch_add(w.written(), Relaxed);
                    drop(w);
                    let _ = self.bg.vfs.remove(&file);
                    return Ok(false);
                }
                since = Instant::now();
            }
        }
        let rest = w.bytes() - reported;
        self.bg.throttle(rest);
        let (entries, bytes) = w.finish()?;
        self.bg.env.counters.bytes_written_merges.fetch_add(bytes, Relaxed);
        self.bg.rates.record_merge(rest, busy + since.elapsed(), &self.bg.env.counters);
        let run = match entries {
            0 => None,
            _ => Some(Arc::new(Run::open(&*self.bg.vfs, &file)?)),
        };
        let merged = run.as_ref().map(|r| RunEntry { file: file.clone(), entries, bytes, level, keys: r.key_range() });
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
        let stored = manifest::store(&*self.bg.vfs, &next)?;
        self.bg.env.counters.bytes_written_other.fetch_add(stored, Relaxed);
        self.bg.note_shape(&next);
        *current = next;
        {
            let mut data = table.data.write();
            if let Some(at) = data.runs.iter().position(|r| r.name == inputs[0]) {
                data.replace_runs(at, inputs.len(), run);
            }
        }
        drop(current);
        self.bg.env.counters.merges.fetch_add(1, Relaxed);
        for run in inputs_open {
            self.delete_run(run);
        }
        Ok(true)
    }

    /// Deletes the file of a run a merge replaced. A file of gigabytes is first cut from its
    /// end a chunk at a time, with pauses: unlinking it at once frees every block in one
    /// filesystem commit (one long discard, on a disk mounted with `discard`) that the journal's
    /// fdatasyncs beside it wait for (RocksDB's `DeleteScheduler` does the same). Cutting waits until no reader holds the run: a point
    /// read searches a snapshot of the run list without the table's lock, and a shortened file
    /// would fail it. (An unlinked file stays readable, so the plain remove needs no wait.)
    fn delete_run(&self, run: Arc<Run>) {
        let name = run.name.clone();
        let give_up = Instant::now() + Duration::from_secs(1);
        while Arc::strong_count(&run) > 1 && Instant::now() < give_up {
            std::thread::sleep(Duration::from_millis(1));
        }
        if Arc::strong_count(&run) == 1 {
            if let Ok(file) = self.bg.vfs.open(&name, false) {
                let mut len = file.len().unwrap_or(0);
                while len > DELETE_CHUNK && !self.bg.merges.stopping() {
                    len -= DELETE_CHUNK;
                    if file.set_len(len).is_err() {
                        break;
                    }
                    std::thread::sleep(DELETE_PAUSE);
                }
            }
        }
        drop(run);
        let _ = self.bg.vfs.remove(&name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Key;

    fn runs(levels: &[u32]) -> Vec<RunEntry> {
        levels
            .iter()
            .enumerate()
            .map(|(i, l)| RunEntry { file: format!("r{i}"), entries: 1, bytes: 1, level: *l, keys: None })
            .collect()
    }

    #[test]
    fn picks_the_lowest_full_level_and_knows_when_it_holds_the_oldest_run() {
        let all = 0..=u32::MAX;
        assert_eq!(pick(&[(1, runs(&[1, 0, 0, 0]))], 4, &all), None);
        let (id, inputs, level, oldest) =
            pick(&[(1, runs(&[1, 1, 1, 1, 0, 0, 0, 0])), (2, runs(&[2, 1]))], 4, &all).unwrap();
        assert_eq!(
            (id, inputs, level, oldest),
            (1, vec!["r4".into(), "r5".into(), "r6".into(), "r7".into()], 0, false)
        );
        let (_, _, level, oldest) = pick(&[(1, runs(&[1, 1, 1, 1, 0]))], 4, &all).unwrap();
        assert_eq!((level, oldest), (1, true));
        // The threads never pick the same runs: each keeps to its levels.
        let shape = [(1, runs(&[3, 3, 3, 3, 2, 2, 2, 2, 0, 0, 0, 0]))];
        let picked: Vec<_> = MERGE_THREADS.iter().map(|(_, levels)| pick(&shape, 4, levels).map(|p| p.2)).collect();
        assert_eq!(picked, [Some(0), Some(2), Some(3)]);
    }

    /// Runs at `levels` holding keys `lo..=hi` each.
    fn ranged(runs_: &[(u32, f64, f64)]) -> Vec<RunEntry> {
        let mut out = runs(&runs_.iter().map(|r| r.0).collect::<Vec<_>>());
        for (entry, (_, lo, hi)) in out.iter_mut().zip(runs_) {
            entry.keys = Some((Key::from(*lo), Key::from(*hi)));
        }
        out
    }

    #[test]
    fn runs_in_ascending_disjoint_key_ranges_are_one_sorted_run_and_never_merged() {
        let all = 0..=u32::MAX;
        // An import in key order: every checkpoint's run starts above the last one's keys.
        let ascending: Vec<_> = (0..12).map(|i| (0, i as f64 * 10.0, i as f64 * 10.0 + 9.0)).collect();
        assert_eq!(pick(&[(1, ranged(&ascending))], 4, &all), None);
        assert_eq!(manifest::sorted_runs(&ranged(&ascending)), 1);
        // Overlaps break the chain: here the runs form 4 sorted runs, so they merge.
        let overlapping =
            [(0, 0.0, 9.0), (0, 10.0, 19.0), (0, 5.0, 25.0), (0, 30.0, 39.0), (0, 0.0, 99.0), (0, 1.0, 2.0)];
        let (_, inputs, level, _) = pick(&[(1, ranged(&overlapping))], 4, &all).unwrap();
        assert_eq!((inputs.len(), level), (6, 0));
        assert_eq!(manifest::sorted_runs(&ranged(&overlapping[..5])), 3);
        // A run whose keys are not known (not open) never extends a sorted run.
        assert_eq!(manifest::sorted_runs(&runs(&[0, 0, 0, 0])), 4);
        // Nor does a run of another level, even above every key.
        let levels = ranged(&[(1, 0.0, 9.0), (0, 10.0, 19.0)]);
        assert!(!manifest::extends_sorted_run(&levels[0], &levels[1]));
    }
}
