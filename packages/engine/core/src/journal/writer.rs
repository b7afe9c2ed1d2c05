//! Appending records: one `write_at` per group (per segment it touches), one fdatasync when asked.

use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use super::segment::{encode_header, SegmentFile, SegmentPool, SEGMENT_HEADER_SIZE};
use crate::checksum::seed_for_segment;
use crate::error::{Error, Result};
use crate::record::{RecordHeader, RecordKind, RECORD_HEADER_SIZE};
use crate::stats::Counters;

/// Room every segment keeps for its end marker.
pub(crate) const END_MARKER_SIZE: u64 = RECORD_HEADER_SIZE as u64 + 8;

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
        };
        journal.write_segment_header()?;
        Ok(journal)
    }

    /// Largest payload one record may carry (a record always fits in an empty segment).
    pub fn max_payload(&self) -> usize {
        ((self.segment_size - SEGMENT_HEADER_SIZE - END_MARKER_SIZE) as usize - RECORD_HEADER_SIZE).min(16 << 20)
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

    fn write_segment_header(&mut self) -> Result<()> {
        let header = encode_header(self.active_id, self.next_seq);
        self.active.file.write_at(&header, 0).map_err(|e| self.io_error("writing segment header", e))
    }

    fn io_error(&self, what: &str, e: std::io::Error) -> Error {
        Error::io(format!("{what} in {}", self.active.name), e)
    }

    /// Appends one record per payload; returns the sequence number of the last one.
    /// Not durable until [`Journal::sync`].
    pub fn append(&mut self, payloads: &[Vec<u8>]) -> Result<u64> {
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        let mut start = self.offset;
        for payload in payloads {
            debug_assert!(payload.len() <= self.max_payload());
            let need = (RECORD_HEADER_SIZE + payload.len()) as u64;
            if start + buf.len() as u64 + need + END_MARKER_SIZE > self.segment_size {
                self.write(&buf, start)?;
                buf.clear();
                self.rotate()?;
                start = self.offset;
            }
            let header = RecordHeader {
                kind: RecordKind::Mutations,
                payload_len: payload.len() as u32,
                seq: self.next_seq,
                segment_id: self.active_id,
                synced_upto: self.synced,
            };
            header.encode(self.seed, payload, &mut buf);
            self.next_seq += 1;
        }
        self.write(&buf, start)?;
        self.buf = buf;
        Ok(self.next_seq - 1)
    }

    fn write(&mut self, buf: &[u8], at: u64) -> Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        self.active.file.write_at(buf, at).map_err(|e| self.io_error("writing journal", e))?;
        self.offset = at + buf.len() as u64;
        self.counters.bytes_journaled.fetch_add(buf.len() as u64, Relaxed);
        self.counters.journal_bytes_since_checkpoint.fetch_add(buf.len() as u64, Relaxed);
        Ok(())
    }

    /// fdatasync of the active segment, if it holds unsynced bytes. Returns whether it synced.
    pub fn sync(&mut self) -> Result<bool> {
        if !self.has_unsynced() {
            return Ok(false);
        }
        self.active.file.sync_data().map_err(|e| self.io_error("fdatasync", e))?;
        self.counters.fdatasyncs.fetch_add(1, Relaxed);
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
            payload_len: 8,
            seq: self.next_seq,
            segment_id: self.active_id,
            synced_upto: self.synced,
        };
        let mut buf = Vec::with_capacity(END_MARKER_SIZE as usize);
        marker.encode(self.seed, &next_id.to_le_bytes(), &mut buf);
        self.write(&buf, self.offset)?;
        self.active.file.sync_data().map_err(|e| self.io_error("fdatasync at segment end", e))?;
        self.counters.fdatasyncs.fetch_add(1, Relaxed);
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
/// never read again, because recovery follows the marker.
pub(crate) fn seal(seg: &SegmentFile, segment_id: u64, offset: u64, next_seq: u64, next_id: u64) -> Result<()> {
    let marker = RecordHeader {
        kind: RecordKind::SegmentEnd,
        payload_len: 8,
        seq: next_seq,
        segment_id,
        synced_upto: offset,
    };
    let mut buf = Vec::with_capacity(END_MARKER_SIZE as usize);
    marker.encode(seed_for_segment(segment_id), &next_id.to_le_bytes(), &mut buf);
    let io = |e| Error::io(format!("sealing journal segment {}", seg.name), e);
    seg.file.write_at(&buf, offset).map_err(io)?;
    seg.file.sync_data().map_err(io)
}
