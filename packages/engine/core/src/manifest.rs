//! The manifest: which checkpoint files make up each table, and where journal replay starts.
//!
//! Two slot files, `MANIFEST-0` and `MANIFEST-1`; version `v` goes to slot `v % 2`, so the slot
//! being rewritten is never the newest valid one. Opening takes the valid slot with the highest
//! version.
//!
//! ```text
//!  0  8  magic    "WHARFMAN"
//!  8  8  version
//! 16  4  length   of the JSON body
//! 20  4  checksum CRC32C of bytes 8..20 and the body
//! 24     body     JSON (see `Manifest`)
//! ```

use serde::{Deserialize, Serialize};

use crate::checksum::crc32c;
use crate::error::{Error, Result};
use crate::io::Vfs;
use crate::journal::Position;
use crate::key::Key;

pub const MANIFEST_SLOTS: [&str; 2] = ["MANIFEST-0", "MANIFEST-1"];
const MAGIC: &[u8; 8] = b"WHARFMAN";
const HEADER: usize = 24;

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct RunEntry {
    pub file: String,
    pub entries: u64,
    pub bytes: u64,
    /// Tier in the merge scheme: 0 for a checkpoint's run, n+1 for a merge of level-n runs.
    #[serde(default)]
    pub level: u32,
    /// The run's first and last keys, once its file is open (not stored: the file holds them).
    /// Merge picking reads them (see [`extends_sorted_run`]).
    #[serde(skip)]
    pub keys: Option<(Key, Key)>,
}

/// True when `next`, the run after `previous` in a table's list, sits at the same level and
/// holds only keys above every key of `previous`: the two then form one sorted run, which a
/// merge would copy without changing anything (an import's ascending keys make such runs).
pub(crate) fn extends_sorted_run(previous: &RunEntry, next: &RunEntry) -> bool {
    previous.level == next.level
        && matches!((&previous.keys, &next.keys), (Some((_, last)), Some((first, _))) if first > last)
}

/// The sorted runs among `runs` (all of one level, in the table's order): runs chained by
/// [`extends_sorted_run`] count as one.
pub(crate) fn sorted_runs(runs: &[RunEntry]) -> usize {
    runs.iter().enumerate().filter(|(i, r)| *i == 0 || !extends_sorted_run(&runs[i - 1], r)).count()
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct TableEntry {
    pub id: u32,
    pub name: String,
    pub primary_key: String,
    /// Oldest first; later files override earlier ones key by key.
    pub runs: Vec<RunEntry>,
    /// Live documents and their bytes at this checkpoint (replay adjusts them).
    #[serde(default)]
    pub documents: u64,
    #[serde(default)]
    pub bytes: u64,
    /// Set for the hidden tree of a secondary index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<IndexSpec>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct IndexSpec {
    /// The table the index is on.
    pub table_id: u32,
    pub name: String,
    pub field: String,
    pub multi: bool,
    /// Written by a clean close with the index built and caught up: its runs are exact.
    /// Otherwise the next open rebuilds it.
    pub complete: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub(crate) struct JournalStart {
    pub segment_id: u64,
    pub offset: u64,
    pub next_seq: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub(crate) struct Manifest {
    pub version: u64,
    pub journal: JournalStart,
    pub next_table_id: u32,
    pub next_run_id: u64,
    /// Next id for an index's hidden tree (ids from 2^31 up, apart from table ids).
    #[serde(default)]
    pub next_index_tree_id: u32,
    /// Size of every journal segment file, fixed when the database was created (0 in manifests
    /// written before it was recorded: the open then takes it from the segment files).
    #[serde(default)]
    pub segment_size: u64,
    pub tables: Vec<TableEntry>,
}

impl Manifest {
    pub fn start(&self) -> Position {
        Position { segment_id: self.journal.segment_id, offset: self.journal.offset, next_seq: self.journal.next_seq }
    }

    pub fn set_start(&mut self, p: Position) {
        self.journal = JournalStart { segment_id: p.segment_id, offset: p.offset, next_seq: p.next_seq };
    }
}

fn encode(m: &Manifest) -> Vec<u8> {
    let body = serde_json::to_vec(m).expect("manifest serializes");
    let mut out = Vec::with_capacity(HEADER + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&m.version.to_le_bytes());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    let crc = crc32c::crc32c_append(crc32c(&out[8..20]), &body);
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&body);
    out
}

fn decode(bytes: &[u8]) -> Option<Manifest> {
    if bytes.len() < HEADER || &bytes[..8] != MAGIC {
        return None;
    }
    let len = u32::from_le_bytes(bytes[16..20].try_into().unwrap()) as usize;
    let body = bytes.get(HEADER..HEADER + len)?;
    let crc = crc32c::crc32c_append(crc32c(&bytes[8..20]), body);
    if crc.to_le_bytes() != bytes[20..24] {
        return None;
    }
    let m: Manifest = serde_json::from_slice(body).ok()?;
    (m.version == u64::from_le_bytes(bytes[8..16].try_into().unwrap())).then_some(m)
}

/// The newest valid manifest; `None` for a new database (no slot file exists).
pub(crate) fn load(vfs: &dyn Vfs) -> Result<Option<Manifest>> {
    let names = vfs.list().map_err(|e| Error::io("listing the database directory", e))?;
    let mut present = 0;
    let mut best: Option<Manifest> = None;
    for slot in MANIFEST_SLOTS {
        if !names.iter().any(|n| n == slot) {
            continue;
        }
        present += 1;
        let file = vfs.open(slot, false).map_err(|e| Error::io(format!("opening {slot}"), e))?;
        let len = file.len().map_err(|e| Error::io(format!("reading {slot}"), e))?;
        let mut bytes = vec![0u8; len as usize];
        file.read_at(&mut bytes, 0).map_err(|e| Error::io(format!("reading {slot}"), e))?;
        if let Some(m) = decode(&bytes) {
            if best.as_ref().is_none_or(|b| m.version > b.version) {
                best = Some(m);
            }
        }
    }
    match (present, best) {
        (0, _) => Ok(None),
        (_, Some(m)) => Ok(Some(m)),
        (_, None) => {
            Err(Error::corrupt_checkpoint("no manifest slot validates (MANIFEST-0 and MANIFEST-1 are both damaged)"))
        }
    }
}

/// Present while a database is being created: everything in the directory is then half-made.
pub const CREATING: &str = "CREATING";

/// The files a database consists of (others in the directory are not the engine's).
fn is_database_file(name: &str) -> bool {
    MANIFEST_SLOTS.contains(&name) || crate::journal::slot_of(name).is_some() || crate::run::is_run_file(name)
}

/// Whether an earlier creation of this database did not finish (its `CREATING` marker is still
/// there). Nothing is acknowledged before creation completes, so its files are then removed —
/// whatever state they are in, a manifest slot too — and the database is created anew under the
/// same marker. Only the marker allows this: without it, a damaged manifest is refused.
pub(crate) fn creation_unfinished(vfs: &dyn Vfs) -> Result<bool> {
    let names = vfs.list().map_err(|e| Error::io("listing the database directory", e))?;
    if !names.iter().any(|n| n == CREATING) {
        return Ok(false);
    }
    for name in names.iter().filter(|n| is_database_file(n)) {
        vfs.remove(name).map_err(|e| Error::io(format!("removing {name} of an unfinished creation"), e))?;
    }
    vfs.sync_dir().map_err(|e| Error::io("removing the files of an unfinished creation", e))?;
    Ok(true)
}

/// Starts creating a database in a directory with no manifest: writes the `CREATING` marker
/// (durably) before any other file. Journal or run files without a manifest and without the
/// marker are not a creation this engine began: refused, never overwritten.
pub(crate) fn begin_creation(vfs: &dyn Vfs) -> Result<()> {
    let names = vfs.list().map_err(|e| Error::io("listing the database directory", e))?;
    if let Some(name) = names.iter().find(|n| is_database_file(n)) {
        return Err(Error::corrupt_checkpoint(format!(
            "the directory holds {name} but no manifest (MANIFEST-0, MANIFEST-1): not a database this engine \
             finished creating, and not one whose creation it can tell was interrupted; refusing to open it \
             rather than overwrite it"
        )));
    }
    let io = |e| Error::io(format!("creating {CREATING}"), e);
    vfs.open(CREATING, true).map_err(io)?;
    vfs.sync_dir().map_err(io)
}

/// Ends a creation: the first manifest is durable, so the marker goes (durably).
pub(crate) fn finish_creation(vfs: &dyn Vfs) -> Result<()> {
    let io = |e| Error::io(format!("removing {CREATING}"), e);
    vfs.remove(CREATING).map_err(io)?;
    vfs.sync_dir().map_err(io)
}

/// Writes `m` into its slot and syncs it. The first write of a slot also syncs the directory.
/// Returns the bytes written.
pub(crate) fn store(vfs: &dyn Vfs, m: &Manifest) -> Result<u64> {
    let slot = MANIFEST_SLOTS[(m.version % 2) as usize];
    let io = |e| Error::io(format!("writing {slot}"), e);
    let existed = vfs.list().map_err(io)?.iter().any(|n| n == slot);
    let file = vfs.open(slot, true).map_err(io)?;
    let bytes = encode(m);
    file.write_at(&bytes, 0).map_err(io)?;
    file.set_len(bytes.len() as u64).map_err(io)?;
    file.sync_data().map_err(io)?;
    if !existed {
        vfs.sync_dir().map_err(io)?;
    }
    Ok(bytes.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{CrashMode, SimVfs};
    use std::sync::Arc;

    fn manifest(version: u64) -> Manifest {
        Manifest { version, next_run_id: version * 10, ..Default::default() }
    }

    #[test]
    fn newest_valid_slot_wins_and_a_torn_slot_falls_back() {
        let vfs = SimVfs::new();
        let dir: &dyn Vfs = &vfs;
        assert_eq!(load(dir).unwrap(), None);
        store(dir, &manifest(1)).unwrap();
        store(dir, &manifest(2)).unwrap();
        assert_eq!(load(dir).unwrap().unwrap().version, 2);
        // Tear slot 1 (version 3 being written): the older slot still validates.
        store(dir, &manifest(3)).unwrap();
        let mut torn = vfs.read_file(MANIFEST_SLOTS[1]).unwrap();
        torn[30] ^= 0xFF;
        vfs.write_file(MANIFEST_SLOTS[1], torn);
        assert_eq!(load(dir).unwrap().unwrap().version, 2);
        // Both damaged: an error, never an empty database.
        let mut torn = vfs.read_file(MANIFEST_SLOTS[0]).unwrap();
        torn.truncate(10);
        vfs.write_file(MANIFEST_SLOTS[0], torn);
        assert_eq!(load(dir).unwrap_err().code, crate::ErrorCode::CorruptCheckpoint);
    }

    #[test]
    fn an_unsynced_slot_write_is_lost_whole_or_kept_whole() {
        for seed in 0..50 {
            let vfs = SimVfs::new();
            store(&vfs, &manifest(1)).unwrap();
            store(&vfs, &manifest(2)).unwrap();
            vfs.fail_sync_after(1);
            assert!(store(&vfs, &manifest(3)).is_err());
            let after: Arc<SimVfs> = vfs.crash(CrashMode::Torn(seed));
            let v = load(&after).unwrap().unwrap().version;
            assert!(v == 2 || v == 3, "seed {seed}: version {v}");
        }
    }
}
