//! Segment files: created once (zero-filled and synced, so later fdatasyncs never touch file
//! metadata), then reused forever. A segment's identity is the id in its header, not its name:
//! reusing one rewrites the header, so no rename and no directory fsync is needed.
//!
//! ```text
//! header (offset 0, 40 bytes; records start at SEGMENT_HEADER_SIZE):
//!  0  8  magic       "WHARFSEG"
//!  8  4  format      1
//! 12  4  reserved    0
//! 16  8  segment_id  increases by one per activation, never reused
//! 24  8  first_seq   sequence number of the first record
//! 32  4  checksum    CRC32C of bytes 0..32
//! ```

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use crate::checksum::crc32c;
use crate::error::{Error, Result};
use crate::io::{Storage, Vfs};
use crate::stats::Counters;

pub const SEGMENT_HEADER_SIZE: u64 = 4096;
const MAGIC: &[u8; 8] = b"WHARFSEG";
const FORMAT: u32 = 1;

pub fn segment_file_name(slot: u64) -> String {
    format!("journal-{slot:06}.wal")
}

pub(crate) fn slot_of(name: &str) -> Option<u64> {
    name.strip_prefix("journal-")?.strip_suffix(".wal")?.parse().ok()
}

#[derive(Clone)]
pub(crate) struct SegmentFile {
    pub name: String,
    pub file: Arc<dyn Storage>,
}

pub(crate) fn encode_header(segment_id: u64, first_seq: u64) -> [u8; 40] {
    let mut h = [0u8; 40];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&FORMAT.to_le_bytes());
    h[16..24].copy_from_slice(&segment_id.to_le_bytes());
    h[24..32].copy_from_slice(&first_seq.to_le_bytes());
    let crc = crc32c(&h[..32]);
    h[32..36].copy_from_slice(&crc.to_le_bytes());
    h
}

/// `(segment_id, first_seq)` when the header is intact.
pub(crate) fn decode_header(h: &[u8]) -> Option<(u64, u64)> {
    if h.len() < 40 || &h[..8] != MAGIC || h[8..12] != FORMAT.to_le_bytes() {
        return None;
    }
    if crc32c(&h[..32]).to_le_bytes() != h[32..36] {
        return None;
    }
    Some((u64::from_le_bytes(h[16..24].try_into().unwrap()), u64::from_le_bytes(h[24..32].try_into().unwrap())))
}

/// Free segments, ready to become the active one. Shared between the committer (takes one at
/// each rotation) and the maintenance thread (returns retired ones, creates spares ahead).
pub(crate) struct SegmentPool {
    vfs: Arc<dyn Vfs>,
    segment_size: u64,
    keep: usize,
    free: Mutex<Vec<SegmentFile>>,
    next_slot: AtomicU64,
    /// Where the zero-filling of new segments is counted (`bytes_written_other`).
    counters: Arc<Counters>,
}

impl SegmentPool {
    pub fn new(
        vfs: Arc<dyn Vfs>,
        segment_size: u64,
        keep: usize,
        free: Vec<SegmentFile>,
        next_slot: u64,
        counters: Arc<Counters>,
    ) -> Self {
        SegmentPool { vfs, segment_size, keep, free: Mutex::new(free), next_slot: AtomicU64::new(next_slot), counters }
    }

    pub fn take(&self) -> Option<SegmentFile> {
        self.free.lock().unwrap().pop()
    }

    pub fn len(&self) -> usize {
        self.free.lock().unwrap().len()
    }

    /// Returns a retired segment for reuse, or deletes it when enough are kept already.
    /// Its stale records stay in place: they carry an older segment id and cannot validate.
    pub fn give_back(&self, seg: SegmentFile) -> Result<()> {
        let mut free = self.free.lock().unwrap();
        if free.len() < self.keep {
            free.push(seg);
            Ok(())
        } else {
            drop(free);
            self.vfs.remove(&seg.name).map_err(|e| Error::io(format!("removing {}", seg.name), e))
        }
    }

    /// Creates a new segment file: written through with zeros once and synced, then the
    /// directory synced (the only directory fsync the journal ever makes).
    /// A failed creation (a full disk, an I/O error) removes the file again, so no
    /// half-written segment stays behind; one a crash leaves is removed by the next open.
    pub fn create(&self) -> Result<SegmentFile> {
        let name = segment_file_name(self.next_slot.fetch_add(1, Relaxed));
        let io = |e| Error::io(format!("creating journal segment {name}"), e);
        let file = self.vfs.open(&name, true).map_err(io)?;
        let filled = (|| {
            let zeros = vec![0u8; 1 << 20];
            let mut at = 0;
            while at < self.segment_size {
                let n = (self.segment_size - at).min(zeros.len() as u64) as usize;
                file.write_at(&zeros[..n], at)?;
                self.counters.bytes_written_other.fetch_add(n as u64, Relaxed);
                at += n as u64;
            }
            file.sync_data()?;
            self.vfs.sync_dir()
        })();
        if let Err(e) = filled {
            drop(file);
            let _ = self.vfs.remove(&name);
            return Err(io(e));
        }
        Ok(SegmentFile { name, file })
    }

    /// A free segment: a recycled one if any, else a new one.
    pub fn take_or_create(&self) -> Result<(SegmentFile, bool)> {
        match self.take() {
            Some(seg) => Ok((seg, true)),
            None => Ok((self.create()?, false)),
        }
    }

    /// Creates segments until `spares` are free (run ahead of need, off the commit path).
    pub fn fill(&self, spares: usize) -> Result<usize> {
        let mut created = 0;
        while self.len() < spares {
            let seg = self.create()?;
            self.free.lock().unwrap().push(seg);
            created += 1;
        }
        Ok(created)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_rejects_damage() {
        let h = encode_header(9, 1234);
        assert_eq!(decode_header(&h), Some((9, 1234)));
        let mut bad = h;
        bad[20] ^= 4;
        assert_eq!(decode_header(&bad), None);
        assert_eq!(decode_header(&[0u8; 40]), None);
        assert_eq!(slot_of(&segment_file_name(17)), Some(17));
    }
}
