//! Appending records: one `write_at` per group (per segment it touches), one fdatasync when asked.
//!
//! Large groups may be stored LZ4-compressed, record by record, when a running cost model says
//! the write time saved exceeds the CPU time spent compressing (see [`CostModel`]).

use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

use super::flusher::SyncTicket;
use super::segment::{encode_header, SegmentFile, SegmentPool, SEGMENT_HEADER_SIZE};
use crate::checksum::seed_for_segment;
use crate::error::{Error, Result};
use crate::record::{compress_payload, RecordHeader, RecordKind, MAX_RECORD_PAYLOAD, RECORD_HEADER_SIZE};
use crate::stats::Counters;

/// Room every segment keeps for its end marker.
pub(crate) const END_MARKER_SIZE: u64 = RECORD_HEADER_SIZE as u64 + 8;
/// Groups with at least this many payload bytes are candidates for compression. A sync window
/// that holds such a group, or at least this many written bytes, feeds the write-cost estimate.
pub(crate) const COMPRESS_MIN_GROUP: usize = 64 << 10;
/// Every this many candidate groups, one is compressed whatever the model says (a probe), so the
/// compression cost and ratio estimates follow the data.
pub(crate) const PROBE_EVERY: u64 = 32;
/// Weight of a new sample in the running estimates (exponentially weighted moving averages).
const EWMA_WEIGHT: f64 = 0.25;

/// When compressing a large group pays: running estimates of what compressing costs and what
/// writing saves. Compress `n` bytes when `compress_ns_per_byte · n` is less than
/// `write_ns_per_byte · n · (1 − ratio)`, the time to write the bytes compression would save.
/// The first candidate, any candidate while an estimate is missing, and every
/// [`PROBE_EVERY`]th candidate are compressed anyway (probes).
#[derive(Debug, Clone, Default)]
pub(crate) struct CostModel {
    /// CPU time of `compress`, per input byte.
    pub compress_ns_per_byte: Option<f64>,
    /// `write_at` + `fdatasync` time of the journal, per byte written.
    pub write_ns_per_byte: Option<f64>,
    /// Stored payload bytes / uncompressed payload bytes of the groups compressed.
    pub ratio: Option<f64>,
    candidates: u64,
}

fn ewma(estimate: &mut Option<f64>, sample: f64) {
    *estimate = Some(match *estimate {
        Some(e) => e + EWMA_WEIGHT * (sample - e),
        None => sample,
    });
}

impl CostModel {
    /// Whether to compress a group of `n` payload bytes (`n` ≥ [`COMPRESS_MIN_GROUP`]).
    pub fn should_compress(&mut self, n: usize) -> bool {
        let probe = self.candidates.is_multiple_of(PROBE_EVERY);
        self.candidates += 1;
        match (self.compress_ns_per_byte, self.write_ns_per_byte, self.ratio) {
            (Some(c), Some(w), Some(r)) if !probe => {
                let n = n as f64;
                c * n < w * n * (1.0 - r)
            }
            _ => true,
        }
    }

    /// A group of `input` bytes was compressed in `ns` to `stored` bytes (as stored: a record
    /// whose compressed form was not smaller counts at its full size).
    pub fn observe_compression(&mut self, ns: u64, input: usize, stored: usize) {
        if input > 0 {
            ewma(&mut self.compress_ns_per_byte, ns as f64 / input as f64);
            ewma(&mut self.ratio, stored as f64 / input as f64);
        }
    }

    /// `bytes` were written and synced in `ns` (a window with a large group in it).
    pub fn observe_write(&mut self, ns: u64, bytes: u64) {
        if bytes > 0 {
            ewma(&mut self.write_ns_per_byte, ns as f64 / bytes as f64);
        }
    }
}

/// Where the next record goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Position {
    pub segment_id: u64,
    pub offset: u64,
    pub next_seq: u64,
}

pub(crate) struct Journal {
    pool: Arc<SegmentPool>,
    counters: Arc<Counters>,
    segment_size: u64,
    active: SegmentFile,
    active_id: u64,
    seed: u32,
    offset: u64,
    synced: u64,
    next_seq: u64,
    next_segment_id: u64,
    /// Older segments still needed by recovery (not yet covered by a checkpoint), oldest first.
    retained: VecDeque<(u64, SegmentFile)>,
    buf: Vec<u8>,
    /// A compressed payload, reused between records.
    scratch: Vec<u8>,
    model: CostModel,
    /// Bytes written since the last fdatasync, the time their `write_at` calls took, and whether
    /// a large group (a compression candidate) is among them.
    unsynced_bytes: u64,
    unsynced_write_ns: u64,
    unsynced_large: bool,
    /// Uncompressed and stored payload bytes of the groups stored compressed.
    compressed_in: u64,
    compressed_out: u64,
    /// A background sync was handed out and its outcome not yet taken.
    background_sync: bool,
    /// The window that sync covers (bytes, their `write_at` ns, whether a large group is among
    /// them): its fdatasync time is measured on the flusher and fed to the cost model here.
    background_window: (u64, u64, bool),
}

impl Journal {
    /// Starts writing into a fresh segment `segment_id`; `retained` are the older live segments.
    pub fn start(
        pool: Arc<SegmentPool>,
        counters: Arc<Counters>,
        segment_size: u64,
        segment_id: u64,
        next_seq: u64,
        retained: VecDeque<(u64, SegmentFile)>,
    ) -> Result<Journal> {
        let (active, recycled) = pool.take_or_create()?;
        count_segment(&counters, recycled);
        let mut journal = Journal {
            pool,
            counters,
            segment_size,
            active,
            active_id: segment_id,
            seed: seed_for_segment(segment_id),
            offset: SEGMENT_HEADER_SIZE,
            synced: 0,
            next_seq,
            next_segment_id: segment_id + 1,
            retained,
            buf: Vec::new(),
            scratch: Vec::new(),
            model: CostModel::default(),
            unsynced_bytes: 0,
            unsynced_write_ns: 0,
            unsynced_large: false,
            compressed_in: 0,
            compressed_out: 0,
            background_sync: false,
            background_window: (0, 0, false),
        };
        journal.write_segment_header()?;
        Ok(journal)
    }

    /// Largest payload one record may carry (a record always fits in an empty segment).
    pub fn max_payload(&self) -> usize {
        ((self.segment_size - SEGMENT_HEADER_SIZE - END_MARKER_SIZE) as usize - RECORD_HEADER_SIZE)
            .min(MAX_RECORD_PAYLOAD)
    }

    pub fn position(&self) -> Position {
        Position { segment_id: self.active_id, offset: self.offset, next_seq: self.next_seq }
    }

    /// True when the active segment is half full and no free segment is ready for the next
    /// rotation. Not earlier: zero-filling a new segment competes with commits for the disk.
    pub fn pool_needs_spares(&self) -> bool {
        self.offset > self.segment_size / 2 && self.pool.len() == 0
    }

    pub fn has_unsynced(&self) -> bool {
        self.offset > self.synced
    }

    /// Bytes of the active segment written since its last sync.
    pub fn unsynced_bytes(&self) -> u64 {
        self.offset.saturating_sub(self.synced)
    }

    /// A sync of everything written so far, for the flusher thread; `None` if one is pending
    /// or nothing is unsynced.
    pub fn sync_ticket(&mut self) -> Option<SyncTicket> {
        if self.background_sync || !self.has_unsynced() {
            return None;
        }
        self.background_sync = true;
        self.background_window = (self.unsynced_bytes, self.unsynced_write_ns, self.unsynced_large);
        (self.unsynced_bytes, self.unsynced_write_ns, self.unsynced_large) = (0, 0, false);
        Some(SyncTicket {
            file: self.active.file.clone(),
            name: self.active.name.clone(),
            segment_id: self.active_id,
            offset: self.offset,
            seq: self.next_seq - 1,
        })
    }

    /// A sync of everything written so far for a checkpoint to make before its manifest names
    /// this position (older segments were synced when the journal left them); `None` when all of
    /// it is synced already, as after hard writes: a checkpoint then adds no journal fdatasync.
    pub fn cut_ticket(&self) -> Option<SyncTicket> {
        self.has_unsynced().then(|| SyncTicket {
            file: self.active.file.clone(),
            name: self.active.name.clone(),
            segment_id: self.active_id,
            offset: self.offset,
            seq: self.next_seq - 1,
        })
    }

    /// The flusher synced `segment_id` up to `offset` in `sync_ns` (a rotation since then synced
    /// it all). Soft loads are synced only there, so this is where their write cost is measured.
    pub fn synced_in_background(&mut self, segment_id: u64, offset: u64, sync_ns: u64) {
        self.background_sync = false;
        let (bytes, write_ns, large) = std::mem::take(&mut self.background_window);
        if sync_ns > 0 {
            self.measure_window(write_ns + sync_ns, bytes, large);
        }
        if segment_id == self.active_id && offset > self.synced {
            self.synced = offset;
        }
    }

    pub fn background_sync_pending(&self) -> bool {
        self.background_sync
    }

    fn write_segment_header(&mut self) -> Result<()> {
        let header = encode_header(self.active_id, self.next_seq);
        self.active.file.write_at(&header, 0).map_err(|e| self.io_error("writing segment header", e))?;
        self.counters.bytes_written_journal.fetch_add(header.len() as u64, Relaxed);
        Ok(())
    }

    fn io_error(&self, what: &str, e: std::io::Error) -> Error {
        Error::io(format!("{what} in {}", self.active.name), e)
    }

    /// Appends one record per payload; returns the sequence number of the last one.
    /// Not durable until [`Journal::sync`]. A group of at least [`COMPRESS_MIN_GROUP`] payload
    /// bytes is compressed when the [`CostModel`] says so; each record is then stored
    /// compressed only if that form is smaller.
    pub fn append(&mut self, payloads: &[Vec<u8>]) -> Result<u64> {
        let total: usize = payloads.iter().map(Vec::len).sum();
        let large = total >= COMPRESS_MIN_GROUP;
        self.unsynced_large |= large;
        let compress = large && self.model.should_compress(total);
        let (mut compress_ns, mut stored_total, mut any_compressed) = (0u64, 0usize, false);
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        let mut start = self.offset;
        for payload in payloads {
            debug_assert!(payload.len() <= self.max_payload());
            let compressed = compress && {
                let started = Instant::now();
                let smaller = compress_payload(payload, &mut scratch);
                compress_ns += started.elapsed().as_nanos() as u64;
                smaller
            };
            let stored: &[u8] = if compressed { &scratch } else { payload };
            stored_total += stored.len();
            any_compressed |= compressed;
            let need = (RECORD_HEADER_SIZE + stored.len()) as u64;
            if start + buf.len() as u64 + need + END_MARKER_SIZE > self.segment_size {
                self.write(&buf, start)?;
                buf.clear();
                self.rotate()?;
                start = self.offset;
            }
            let header = RecordHeader {
                kind: RecordKind::Mutations,
                compressed,
                payload_len: stored.len() as u32,
                seq: self.next_seq,
                segment_id: self.active_id,
                synced_upto: self.synced,
            };
            header.encode(self.seed, stored, &mut buf);
            self.next_seq += 1;
        }
        self.write(&buf, start)?;
        self.buf = buf;
        self.scratch = scratch;
        if compress {
            self.model.observe_compression(compress_ns, total, stored_total);
        }
        self.count_compression(total, stored_total, any_compressed);
        Ok(self.next_seq - 1)
    }

    /// Publishes the compression counters and estimates after a group.
    fn count_compression(&mut self, total: usize, stored: usize, compressed: bool) {
        let c = &self.counters;
        c.journal_bytes_uncompressed.fetch_add(total as u64, Relaxed);
        c.journal_bytes_saved.fetch_add(total.saturating_sub(stored) as u64, Relaxed);
        if compressed {
            c.groups_compressed.fetch_add(1, Relaxed);
            self.compressed_in += total as u64;
            self.compressed_out += stored as u64;
            c.compression_ratio.store((self.compressed_out as f64 / self.compressed_in as f64).to_bits(), Relaxed);
        }
        c.compress_ns_per_byte.store(self.model.compress_ns_per_byte.unwrap_or(0.0).to_bits(), Relaxed);
        c.write_ns_per_byte.store(self.model.write_ns_per_byte.unwrap_or(0.0).to_bits(), Relaxed);
    }

    /// fdatasync of the active segment, timed: a window holding a large group (or at least
    /// [`COMPRESS_MIN_GROUP`] bytes) feeds the write-cost estimate with its `write_at` and
    /// fdatasync time per byte written.
    fn sync_data(&mut self, what: &str) -> Result<()> {
        let started = Instant::now();
        self.active.file.sync_data().map_err(|e| self.io_error(what, e))?;
        let ns = self.unsynced_write_ns + started.elapsed().as_nanos() as u64;
        // While the flusher syncs an earlier window, this fdatasync also waits for that one's
        // writeback: its time per byte would be wrong.
        if !self.background_sync {
            self.measure_window(ns, self.unsynced_bytes, self.unsynced_large);
        }
        self.unsynced_bytes = 0;
        self.unsynced_write_ns = 0;
        self.unsynced_large = false;
        self.counters.fdatasyncs.fetch_add(1, Relaxed);
        Ok(())
    }

    /// A sync window of `bytes` took `ns` to write and sync: a write-cost sample if it held a
    /// large group or at least [`COMPRESS_MIN_GROUP`] bytes.
    fn measure_window(&mut self, ns: u64, bytes: u64, large: bool) {
        if large || bytes >= COMPRESS_MIN_GROUP as u64 {
            self.model.observe_write(ns, bytes);
            let estimate = self.model.write_ns_per_byte.unwrap_or(0.0);
            self.counters.write_ns_per_byte.store(estimate.to_bits(), Relaxed);
        }
    }

    fn write(&mut self, buf: &[u8], at: u64) -> Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        let started = Instant::now();
        self.active.file.write_at(buf, at).map_err(|e| self.io_error("writing journal", e))?;
        self.unsynced_write_ns += started.elapsed().as_nanos() as u64;
        self.unsynced_bytes += buf.len() as u64;
        self.offset = at + buf.len() as u64;
        self.counters.bytes_journaled.fetch_add(buf.len() as u64, Relaxed);
        self.counters.bytes_written_journal.fetch_add(buf.len() as u64, Relaxed);
        self.counters.journal_bytes_since_checkpoint.fetch_add(buf.len() as u64, Relaxed);
        Ok(())
    }

    /// fdatasync of the active segment, if it holds unsynced bytes. Returns whether it synced.
    pub fn sync(&mut self) -> Result<bool> {
        if !self.has_unsynced() {
            return Ok(false);
        }
        self.sync_data("fdatasync")?;
        self.synced = self.offset;
        Ok(true)
    }

    /// Ends the active segment with a marker naming the next one, syncs it, and moves on to a
    /// free segment. Everything in older segments is durable from here on, so a hard write in
    /// the new segment needs only the new segment's fdatasync.
    fn rotate(&mut self) -> Result<()> {
        let next_id = self.next_segment_id;
        let marker = RecordHeader {
            kind: RecordKind::SegmentEnd,
            compressed: false,
            payload_len: 8,
            seq: self.next_seq,
            segment_id: self.active_id,
            synced_upto: self.synced,
        };
        let mut buf = Vec::with_capacity(END_MARKER_SIZE as usize);
        marker.encode(self.seed, &next_id.to_le_bytes(), &mut buf);
        self.write(&buf, self.offset)?;
        self.sync_data("fdatasync at segment end")?;
        self.counters.segment_rotations.fetch_add(1, Relaxed);

        let (next, recycled) = self.pool.take_or_create()?;
        count_segment(&self.counters, recycled);
        let old = std::mem::replace(&mut self.active, next);
        self.retained.push_back((self.active_id, old));
        self.active_id = next_id;
        self.next_segment_id += 1;
        self.seed = seed_for_segment(next_id);
        self.offset = SEGMENT_HEADER_SIZE;
        self.synced = 0;
        self.write_segment_header()
    }

    /// Hands every retained segment older than `segment_id` back to the pool: a checkpoint
    /// made them unnecessary for recovery.
    pub fn retire_before(&mut self, segment_id: u64) -> Result<()> {
        while self.retained.front().is_some_and(|(id, _)| *id < segment_id) {
            let (_, seg) = self.retained.pop_front().unwrap();
            self.pool.give_back(seg)?;
        }
        Ok(())
    }
}

fn count_segment(counters: &Counters, recycled: bool) {
    if recycled {
        counters.segments_recycled.fetch_add(1, Relaxed);
    } else {
        counters.segments_created.fetch_add(1, Relaxed);
    }
}

/// Closes the segment recovery ended in: writes an end marker at `offset` naming `next_id` and
/// syncs it. Whatever a crash left beyond `offset` (a torn record, unsynced later ones) is then
/// never read again, because recovery follows the marker. Returns the bytes it wrote.
pub(crate) fn seal(seg: &SegmentFile, segment_id: u64, offset: u64, next_seq: u64, next_id: u64) -> Result<u64> {
    let marker = RecordHeader {
        kind: RecordKind::SegmentEnd,
        compressed: false,
        payload_len: 8,
        seq: next_seq,
        segment_id,
        synced_upto: offset,
    };
    let mut buf = Vec::with_capacity(END_MARKER_SIZE as usize);
    marker.encode(seed_for_segment(segment_id), &next_id.to_le_bytes(), &mut buf);
    let io = |e| Error::io(format!("sealing journal segment {}", seg.name), e);
    seg.file.write_at(&buf, offset).map_err(io)?;
    seg.file.sync_data().map_err(io)?;
    Ok(buf.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_probes_first_and_then_every_32nd_candidate() {
        let mut m = CostModel::default();
        let n = COMPRESS_MIN_GROUP;
        // No estimates: compress (probe) until all three exist.
        assert!(m.should_compress(n));
        assert!(m.should_compress(n));
        m.observe_compression(100_000, n, n); // incompressible: saves nothing
        assert!(m.should_compress(n), "no write estimate yet");
        m.observe_write(10 * n as u64, n as u64);
        // Estimates say no (ratio 1: nothing saved) except on the probes.
        let decisions: Vec<bool> = (3..70).map(|_| m.should_compress(n)).collect();
        let probes: Vec<usize> = decisions.iter().enumerate().filter(|(_, d)| **d).map(|(i, _)| i + 3).collect();
        assert_eq!(probes, vec![32, 64]);
    }

    #[test]
    fn the_model_compresses_when_the_saved_write_time_exceeds_the_compression_time() {
        let mut m = CostModel::default();
        let n = 1 << 20;
        assert!(m.should_compress(n)); // the first probe
        m.observe_compression(n as u64, n, n / 4); // 1 ns/byte, ratio 0.25
        m.observe_write(2 * n as u64, n as u64); // 2 ns/byte: saves 1.5 ns/byte > 1
        assert!(m.should_compress(n));
        m.observe_write(0, n as u64); // writes got much cheaper: 2 → 1.5 → 1.125 → … ns/byte
        for _ in 0..10 {
            m.observe_write(0, n as u64);
        }
        assert!(m.write_ns_per_byte.unwrap() * 0.75 < 1.0);
        assert!(!m.should_compress(n));
    }
}
