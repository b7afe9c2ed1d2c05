//! Checkpoints: each table's changes since the last checkpoint become one immutable, checksummed
//! file (a *run*); then a new manifest names the runs and the journal position they cover; then
//! the journal segments before that position are recycled. Runs of a table are merged into one
//! when there are too many. All of it happens on the maintenance thread, off the commit path.
//!
//! ```text
//! run file:
//!  0  8  magic    "WHARFRUN"
//!  8  4  format   1
//! 12  4  table_id
//! 16  8  entries
//! 24     entries, in key order: 1 | key | doc_len u32 | doc   (put)   or   2 | key   (delete)
//! end-4  checksum CRC32C of everything before it
//! ```

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex};

use crate::checksum::crc32c;
use crate::error::{Error, Result};
use crate::io::Vfs;
use crate::journal::{Position, SegmentPool};
use crate::key::Key;
use crate::manifest::{self, Manifest, RunEntry, TableEntry};
use crate::stats::Counters;
use crate::table::{Doc, TableData};

const MAGIC: &[u8; 8] = b"WHARFRUN";
const FORMAT: u32 = 1;
const HEADER: usize = 24;

pub(crate) fn run_file_name(run_id: u64) -> String {
    format!("run-{run_id:08}.wrun")
}

fn is_run_file(name: &str) -> bool {
    name.starts_with("run-") && name.ends_with(".wrun")
}

type Delta = BTreeMap<Key, Option<Doc>>;

/// Writes a run; returns its size in bytes.
fn write_run(vfs: &dyn Vfs, name: &str, table_id: u32, delta: &Delta) -> Result<u64> {
    let io = |e| Error::io(format!("writing checkpoint file {name}"), e);
    let file = vfs.open(name, true).map_err(io)?;
    let mut buf = Vec::with_capacity(2 << 20);
    buf.extend_from_slice(MAGIC);
    buf.extend_from_slice(&FORMAT.to_le_bytes());
    buf.extend_from_slice(&table_id.to_le_bytes());
    buf.extend_from_slice(&(delta.len() as u64).to_le_bytes());
    let (mut at, mut crc) = (0u64, 0u32);
    for (key, doc) in delta {
        match doc {
            Some(doc) => {
                buf.push(1);
                key.encode(&mut buf);
                buf.extend_from_slice(&(doc.len() as u32).to_le_bytes());
                buf.extend_from_slice(doc.as_bytes());
            }
            None => {
                buf.push(2);
                key.encode(&mut buf);
            }
        }
        if buf.len() >= 1 << 20 {
            crc = crc32c::crc32c_append(crc, &buf);
            file.write_at(&buf, at).map_err(io)?;
            at += buf.len() as u64;
            buf.clear();
        }
    }
    crc = crc32c::crc32c_append(crc, &buf);
    buf.extend_from_slice(&crc.to_le_bytes());
    file.write_at(&buf, at).map_err(io)?;
    at += buf.len() as u64;
    file.sync_data().map_err(io)?;
    Ok(at)
}

/// Reads a run, checking its checksum, and calls `each` for every entry in key order.
fn read_run(vfs: &dyn Vfs, name: &str, mut each: impl FnMut(Key, Option<Doc>)) -> Result<()> {
    let bad = |what: &str| Error::corrupt_checkpoint(format!("checkpoint file {name} is damaged: {what}"));
    let file = vfs.open(name, false).map_err(|e| Error::io(format!("opening checkpoint file {name}"), e))?;
    let len = file.len().map_err(|e| Error::io(format!("reading {name}"), e))? as usize;
    let mut bytes = vec![0u8; len];
    file.read_at(&mut bytes, 0).map_err(|e| Error::io(format!("reading {name}"), e))?;
    if len < HEADER + 4 || &bytes[..8] != MAGIC {
        return Err(bad("bad header"));
    }
    let (body, stored) = bytes.split_at(len - 4);
    if crc32c(body).to_le_bytes() != stored {
        return Err(bad("checksum mismatch"));
    }
    let entries = u64::from_le_bytes(body[16..24].try_into().unwrap());
    let mut at = HEADER;
    for _ in 0..entries {
        let kind = *body.get(at).ok_or_else(|| bad("truncated entry"))?;
        let (key, used) = Key::decode(&body[at + 1..]).ok_or_else(|| bad("bad key"))?;
        at += 1 + used;
        if kind == 1 {
            let n = u32::from_le_bytes(body.get(at..at + 4).ok_or_else(|| bad("truncated entry"))?.try_into().unwrap()) as usize;
            let doc = std::str::from_utf8(body.get(at + 4..at + 4 + n).ok_or_else(|| bad("truncated entry"))?)
                .map_err(|_| bad("document is not UTF-8"))?;
            at += 4 + n;
            each(key, Some(doc.into()));
        } else {
            each(key, None);
        }
    }
    Ok(())
}

/// Loads a table's runs, oldest first, into its in-memory documents.
pub(crate) fn load_table(vfs: &dyn Vfs, entry: &TableEntry, data: &mut TableData) -> Result<()> {
    for run in &entry.runs {
        read_run(vfs, &run.file, |key, doc| match doc {
            Some(doc) => {
                data.bytes += doc.len() as u64;
                if let Some(old) = data.docs.insert(key, doc) {
                    data.bytes -= old.len() as u64;
                }
            }
            None => {
                if let Some(old) = data.docs.remove(&key) {
                    data.bytes -= old.len() as u64;
                }
            }
        })?;
    }
    Ok(())
}

/// Deletes run files the manifest does not name (left by a crash mid-checkpoint or a drop).
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
    pub next_table_id: u32,
    /// Every table at the cut, with its changes since the previous checkpoint in commit order.
    pub tables: Vec<(u32, String, String, Vec<(Key, Option<Doc>)>)>,
}

/// The last change of each key, in key order.
fn sorted_delta(changes: Vec<(Key, Option<Doc>)>) -> Delta {
    changes.into_iter().collect()
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

pub(crate) struct Maintenance {
    pub vfs: Arc<dyn Vfs>,
    pub manifest: Manifest,
    pub pool: Arc<SegmentPool>,
    pub counters: Arc<Counters>,
    pub state: Arc<Mutex<MaintenanceState>>,
    pub max_runs: usize,
    pub spare_segments: usize,
}

impl Maintenance {
    pub fn run(mut self, tasks: Receiver<Task>) {
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
                    if let Some(reply) = reply {
                        let _ = reply.send(result);
                    }
                }
                Task::FillPool => {
                    match self.pool.fill(self.spare_segments) {
                        Ok(created) => {
                            self.counters.segments_created.fetch_add(created as u64, Relaxed);
                        }
                        Err(e) => self.state.lock().unwrap().failure = Some(e),
                    }
                }
                Task::Stop => break,
            }
        }
    }

    fn checkpoint(&mut self, job: CheckpointJob) -> Result<()> {
        let previous: HashMap<u32, &TableEntry> = self.manifest.tables.iter().map(|t| (t.id, t)).collect();
        let mut next = Manifest {
            version: self.manifest.version + 1,
            next_table_id: job.next_table_id,
            next_run_id: self.manifest.next_run_id,
            ..Default::default()
        };
        next.set_start(job.position);
        for (id, name, primary_key, changes) in job.tables {
            let delta = sorted_delta(changes);
            let id = &id;
            let mut runs = previous.get(id).map(|t| t.runs.clone()).unwrap_or_default();
            if !delta.is_empty() {
                let file = run_file_name(next.next_run_id);
                next.next_run_id += 1;
                let bytes = write_run(&*self.vfs, &file, *id, &delta)?;
                runs.push(RunEntry { file, entries: delta.len() as u64, bytes });
            }
            if runs.len() > self.max_runs {
                runs = vec![self.merge(*id, &runs, &mut next.next_run_id)?];
            }
            next.tables.push(TableEntry { id: *id, name, primary_key, runs });
        }
        self.vfs.sync_dir().map_err(|e| Error::io("syncing the database directory", e))?;
        manifest::store(&*self.vfs, &next)?;
        self.manifest = next;
        remove_orphans(&*self.vfs, &self.manifest)?;
        self.counters.checkpoints.fetch_add(1, Relaxed);
        self.state.lock().unwrap().retire_before = Some(job.position.segment_id);
        Ok(())
    }

    /// Merges all of a table's runs into one; deletes drop out, since nothing older remains.
    fn merge(&self, table_id: u32, runs: &[RunEntry], next_run_id: &mut u64) -> Result<RunEntry> {
        let mut merged: Delta = BTreeMap::new();
        for run in runs {
            read_run(&*self.vfs, &run.file, |key, doc| match doc {
                Some(doc) => {
                    merged.insert(key, Some(doc));
                }
                None => {
                    merged.remove(&key);
                }
            })?;
        }
        let file = run_file_name(*next_run_id);
        *next_run_id += 1;
        let bytes = write_run(&*self.vfs, &file, table_id, &merged)?;
        self.counters.merges.fetch_add(1, Relaxed);
        Ok(RunEntry { file, entries: merged.len() as u64, bytes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::SimVfs;

    #[test]
    fn runs_round_trip_and_detect_damage() {
        let vfs = SimVfs::new();
        let mut delta = Delta::new();
        delta.insert(Key::from(1.0), Some("{\"id\":1}".into()));
        delta.insert(Key::from("k"), None);
        write_run(&vfs, "run-00000001.wrun", 3, &delta).unwrap();
        let mut back = Delta::new();
        read_run(&vfs, "run-00000001.wrun", |k, d| {
            back.insert(k, d);
        })
        .unwrap();
        assert_eq!(back, delta);
        let mut bytes = vfs.read_file("run-00000001.wrun").unwrap();
        bytes[30] ^= 1;
        vfs.write_file("run-00000001.wrun", bytes);
        let err = read_run(&vfs, "run-00000001.wrun", |_, _| {}).unwrap_err();
        assert_eq!(err.code, crate::ErrorCode::CorruptCheckpoint);
    }
}
