//! Checkpoints: at a cut the committer freezes each table's memtable; here each frozen
//! memtable becomes one run file (see `run.rs`), then a new manifest names every table's runs
//! and the journal position replay starts from, then the journal segments before it may be
//! recycled. All of it runs on the maintenance thread, off the commit path. Merging runs is
//! the merge thread's job (`merge.rs`); a checkpoint outranks it.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use crate::error::{Error, Result};
use crate::io::Vfs;
use crate::journal::{Position, SegmentPool, SyncTicket};
use crate::manifest::{self, IndexSpec, Manifest, RunEntry, TableEntry};
use crate::pacing::Rates;
use crate::run::{is_run_file, run_file_name, Run, RunWriter};
use crate::stats::Counters;
use crate::table::{Env, Table};
use crate::tree::{Memtable, Tree};

/// Run files store their blocks LZ4-compressed (each block only when that makes it smaller), at
/// every level, checkpoints' runs included. JSON documents shrink about threefold, and a bulk
/// load writes every byte to the journal and again to a run: uncompressed, the run's key and
/// length fields alone take those two writes past twice the bytes loaded. The CPU it costs is
/// on the background threads, and a sequential load has no merges to pay for it (see
/// `merge.rs`).
pub(crate) const COMPRESS_RUNS: bool = true;

/// Opens a table's runs as the manifest lists them, noting each one's key range in `entry`.
pub(crate) fn load_table(vfs: &dyn Vfs, entry: &mut TableEntry, data: &mut Tree) -> Result<()> {
    for r in &mut entry.runs {
        let run = Arc::new(Run::open(vfs, &r.file)?);
        r.keys = run.key_range();
        data.add_run(run);
    }
    data.documents = entry.documents;
    data.bytes = entry.bytes;
    Ok(())
}

/// Deletes run files the manifest does not name (left by a crash mid-checkpoint or mid-merge,
/// or by a drop). Only at open: while running, a merge's output is not named until it is done.
pub(crate) fn remove_orphans(vfs: &dyn Vfs, m: &Manifest) -> Result<()> {
    let live: HashSet<&str> = m.tables.iter().flat_map(|t| t.runs.iter().map(|r| r.file.as_str())).collect();
    for name in vfs.list().map_err(|e| Error::io("listing the database directory", e))? {
        if is_run_file(&name) && !live.contains(name.as_str()) {
            vfs.remove(&name).map_err(|e| Error::io(format!("removing {name}"), e))?;
        }
    }
    Ok(())
}

/// A consistent cut taken by the committer between two groups.
pub(crate) struct CheckpointJob {
    /// Replay starts here after this checkpoint; the journal is synced up to it.
    pub position: Position,
    /// Syncs the journal up to `position`, unless it is synced there already.
    pub sync: Option<SyncTicket>,
    pub next_table_id: u32,
    pub next_index_tree_id: u32,
    /// Every tree (tables and index trees) at the cut.
    pub tables: Vec<TableCut>,
}

pub(crate) struct TableCut {
    pub table: Arc<Table>,
    /// The memtable frozen at the cut, if the tree changed since the last checkpoint.
    pub frozen: Option<Arc<Memtable>>,
    pub documents: u64,
    pub bytes: u64,
    pub index: Option<IndexSpec>,
}

pub(crate) enum Task {
    Checkpoint(CheckpointJob, Option<Sender<Result<()>>>),
    /// Create spare segments so that rotations rarely have to.
    FillPool,
    Stop,
}

/// What the maintenance thread tells the committer.
#[derive(Default)]
pub(crate) struct MaintenanceState {
    /// Segments older than this may be recycled.
    pub retire_before: Option<u64>,
    pub in_flight: bool,
    /// A failed checkpoint poisons the database.
    pub failure: Option<Error>,
}

/// Wakes the merge threads (`merge.rs`), and tells them when a checkpoint is running: defined
/// here, below them, because checkpoints signal it.
#[derive(Default)]
pub(crate) struct MergeSignal {
    /// (generation, stop): the generation moves on whenever runs change.
    state: Mutex<(u64, bool)>,
    wake: Condvar,
    pub checkpoint_running: AtomicBool,
}

impl MergeSignal {
    pub fn checkpoint_started(&self) {
        self.checkpoint_running.store(true, Relaxed);
    }

    pub fn checkpoint_done(&self) {
        self.checkpoint_running.store(false, Relaxed);
        self.runs_changed();
    }

    /// New runs exist (a checkpoint's, or a merge's output, which may complete a level).
    pub fn runs_changed(&self) {
        self.state.lock().unwrap().0 += 1;
        self.wake.notify_all();
    }

    pub fn stop(&self) {
        self.state.lock().unwrap().1 = true;
        self.wake.notify_all();
    }

    pub fn stopping(&self) -> bool {
        self.state.lock().unwrap().1
    }

    /// Waits until runs changed since generation `seen`; the new generation, or `None` once
    /// stopping.
    pub fn wait(&self, seen: u64) -> Option<u64> {
        let mut s = self.state.lock().unwrap();
        while s.0 == seen && !s.1 {
            s = self.wake.wait(s).unwrap();
        }
        (!s.1).then_some(s.0)
    }
}

/// What the maintenance and merge threads share.
pub(crate) struct Background {
    pub vfs: Arc<dyn Vfs>,
    /// The manifest last stored; whoever changes it holds this lock until the store is done.
    pub manifest: Mutex<Manifest>,
    pub env: Env,
    pub rates: Rates,
    pub merges: MergeSignal,
    /// The tree shape pacing watches: the most level-0 runs of any table, the most levels.
    pub level0_runs: AtomicU64,
    pub levels: AtomicU64,
    /// For tests: sleep this long per MiB a flush or merge writes (a slow disk, on demand).
    pub delay_per_mib: std::time::Duration,
}

impl Background {
    /// Updates `level0_runs` and `levels` from a manifest just stored. Level-0 runs are counted
    /// as sorted runs, as merges count them: runs that extend one sorted run need no merge.
    pub fn note_shape(&self, m: &Manifest) {
        // Level 0 holds the newest runs, so its runs end the list.
        let level0 = m
            .tables
            .iter()
            .map(|t| manifest::sorted_runs(&t.runs[t.runs.iter().position(|r| r.level == 0).unwrap_or(t.runs.len())..]))
            .max()
            .unwrap_or(0);
        let levels = m.tables.iter().flat_map(|t| t.runs.iter().map(|r| r.level + 1)).max().unwrap_or(0);
        self.level0_runs.store(level0 as u64, Relaxed);
        self.levels.store(levels as u64, Relaxed);
    }

    fn counters(&self) -> &Counters {
        &self.env.counters
    }

    /// A fresh run id and its file name.
    pub fn new_run_name(&self) -> String {
        let mut m = self.manifest.lock().unwrap();
        m.next_run_id += 1;
        run_file_name(m.next_run_id - 1)
    }

    /// Sleeps as the test knob asks, for `bytes` written.
    pub fn throttle(&self, bytes: u64) {
        if !self.delay_per_mib.is_zero() {
            std::thread::sleep(self.delay_per_mib.mul_f64(bytes as f64 / (1 << 20) as f64));
        }
    }
}

pub(crate) struct Maintenance {
    pub bg: Arc<Background>,
    pub pool: Arc<SegmentPool>,
    pub state: Arc<Mutex<MaintenanceState>>,
    pub spare_segments: usize,
}

impl Maintenance {
    pub fn run(self, tasks: Receiver<Task>) {
        for task in tasks {
            match task {
                Task::Checkpoint(job, reply) => {
                    let result = self.checkpoint(job);
                    let mut state = self.state.lock().unwrap();
                    state.in_flight = false;
                    if let Err(e) = &result {
                        state.failure = Some(e.clone());
                    }
                    drop(state);
                    self.bg.merges.checkpoint_done();
                    if let Some(reply) = reply {
                        let _ = reply.send(result);
                    }
                }
                Task::FillPool => match self.pool.fill(self.spare_segments) {
                    Ok(created) => {
                        self.bg.counters().segments_created.fetch_add(created as u64, Relaxed);
                    }
                    Err(e) => self.state.lock().unwrap().failure = Some(e),
                },
                Task::Stop => break,
            }
        }
    }

    /// Writes one frozen memtable as a run, telling pacing how fast it goes as it goes (the
    /// first checkpoint's rate is known a quarter MiB in, not at its end). `bytes`: the memtable's
    /// size, to size the run's buffers.
    fn flush(&self, table_id: u32, memtable: &Memtable, bytes: u64) -> Result<(RunEntry, Arc<Run>)> {
        let file = self.bg.new_run_name();
        let mut w = RunWriter::create(&*self.bg.vfs, &file, table_id, (memtable.len() as u64, bytes), COMPRESS_RUNS)?;
        let (mut reported, mut since) = (0, Instant::now());
        for (key, doc) in memtable.iter() {
            w.add(key, doc.as_deref())?;
            if w.bytes() - reported >= 256 << 10 {
                self.bg.throttle(w.bytes() - reported);
                self.bg.rates.record_flush(w.bytes() - reported, since.elapsed(), self.bg.counters());
                (reported, since) = (w.bytes(), Instant::now());
            }
        }
        let rest = w.bytes() - reported;
        self.bg.throttle(rest);
        let (entries, bytes) = w.finish()?;
        self.bg.counters().bytes_written_flushes.fetch_add(bytes, Relaxed);
        self.bg.rates.record_flush(rest, since.elapsed(), self.bg.counters());
        let run = Arc::new(Run::open(&*self.bg.vfs, &file)?);
        Ok((RunEntry { file, entries, bytes, level: 0, keys: run.key_range() }, run))
    }

    fn checkpoint(&self, job: CheckpointJob) -> Result<()> {
        if let Some(t) = &job.sync {
            t.file.sync_data().map_err(|e| Error::io(format!("fdatasync for a checkpoint in {}", t.name), e))?;
            self.bg.counters().fdatasyncs.fetch_add(1, Relaxed);
            self.bg.counters().durable_seq.fetch_max(t.seq, Relaxed);
        }
        let mut flushed = Vec::new();
        for cut in &job.tables {
            if let Some(m) = &cut.frozen {
                let frozen_bytes = cut.table.data.read().frozen_bytes();
                flushed.push((cut.table.clone(), self.flush(cut.table.id, m, frozen_bytes)?, frozen_bytes));
            }
        }
        self.bg.vfs.sync_dir().map_err(|e| Error::io("syncing the database directory", e))?;
        let mut current = self.bg.manifest.lock().unwrap();
        let mut next = Manifest {
            version: current.version + 1,
            next_table_id: job.next_table_id,
            next_run_id: current.next_run_id,
            next_index_tree_id: job.next_index_tree_id,
            segment_size: current.segment_size,
            ..Default::default()
        };
        next.set_start(job.position);
        for cut in &job.tables {
            let id = cut.table.id;
            // Runs as they are now (a merge may have replaced some since the cut), plus the new one.
            let mut runs = current.tables.iter().find(|t| t.id == id).map(|t| t.runs.clone()).unwrap_or_default();
            if let Some((_, (entry, _), _)) = flushed.iter().find(|(t, _, _)| t.id == id) {
                runs.push(entry.clone());
            }
            next.tables.push(TableEntry {
                id,
                name: cut.table.name.clone(),
                primary_key: cut.table.primary_key.clone(),
                runs,
                documents: cut.documents,
                bytes: cut.bytes,
                index: cut.index.clone(),
            });
        }
        let stored = manifest::store(&*self.bg.vfs, &next)?;
        self.bg.counters().bytes_written_other.fetch_add(stored, Relaxed);
        self.bg.note_shape(&next);
        let dropped: Vec<String> = current
            .tables
            .iter()
            .filter(|t| !next.tables.iter().any(|n| n.id == t.id))
            .flat_map(|t| t.runs.iter().map(|r| r.file.clone()))
            .collect();
        *current = next;
        drop(current);
        // Readers switch from the frozen memtable to the run it became.
        for (table, (_, run), frozen_bytes) in flushed {
            let mut data = table.data.write();
            data.add_run(run);
            data.frozen = None;
            self.bg.counters().frozen_memtable_bytes.fetch_sub(frozen_bytes, Relaxed);
        }
        for file in dropped {
            let _ = self.bg.vfs.remove(&file);
        }
        self.bg.counters().checkpoints.fetch_add(1, Relaxed);
        self.state.lock().unwrap().retire_before = Some(job.position.segment_id);
        Ok(())
    }
}
