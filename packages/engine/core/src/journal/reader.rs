//! Recovery: replay the journal from the manifest's position, record by record, and find its end.
//!
//! A record is accepted when its magic, kind, length, segment id, sequence number (exactly the
//! next one) and checksum all hold. Segments link through end markers. At the first record that
//! fails, recovery decides between:
//! - a torn tail — nothing after it was ever synced — which ends the journal there; and
//! - corruption — a later valid record of the same segment says (`synced_upto`) that the bad
//!   offset had been synced, or a later segment continues the sequence — which is an error:
//!   acknowledged writes would otherwise be dropped silently.
//!
//! A record flagged LZ4-compressed is checked as stored, then decompressed; one that fails to
//! decompress to its stated length behind a valid checksum is corruption, not a torn tail.

use std::collections::{BTreeMap, VecDeque};

use super::segment::{decode_header, slot_of, SegmentFile, SEGMENT_HEADER_SIZE};
use super::writer::{Position, END_MARKER_SIZE};
use crate::checksum::seed_for_segment;
use crate::error::{Error, Result};
use crate::io::Vfs;
use crate::mutation::{self, Mutation};
use crate::record::{decompress_payload, RecordHeader, RecordKind, MAX_RECORD_PAYLOAD, RECORD_HEADER_SIZE};

pub(crate) struct Recovered {
    /// Segments replayed, oldest first; the last one is where the journal ended.
    pub chain: VecDeque<(u64, SegmentFile)>,
    /// Where the journal ended, in the last segment of `chain`: after the last valid record, or
    /// at the offset of an end marker naming a segment that was never durably activated. The
    /// open seals it there with a marker naming `next_segment_id`.
    pub end: Position,
    /// The id the next segment must take.
    pub next_segment_id: u64,
    /// Segment files not in the chain: free for reuse.
    pub free: Vec<SegmentFile>,
    pub next_slot: u64,
    pub records: u64,
}

struct Found {
    file: SegmentFile,
    first_seq: u64,
}

/// Replays every record from `start`, calling `apply` for each mutation in order. `segment_size`
/// is the database's segment size (a segment file is read whole even if it is larger).
/// `start.segment_id == 0` means a new database with no journal yet.
pub(crate) fn recover(
    vfs: &dyn Vfs,
    segment_size: u64,
    start: Position,
    mut apply: impl FnMut(Mutation) -> Result<()>,
) -> Result<Recovered> {
    let mut by_id: BTreeMap<u64, Found> = BTreeMap::new();
    let mut free = Vec::new();
    let mut next_slot = 0;
    let mut max_id = 0;
    for name in vfs.list().map_err(|e| Error::io("listing the database directory", e))? {
        let Some(slot) = slot_of(&name) else { continue };
        next_slot = next_slot.max(slot + 1);
        let file = vfs.open(&name, false).map_err(|e| Error::io(format!("opening {name}"), e))?;
        let mut h = [0u8; 40];
        let header = file.read_at(&mut h, 0).ok().and_then(|_| decode_header(&h));
        let seg = SegmentFile { name, file };
        match header {
            // Ids and sequence numbers count up from 1; one near 2^64 is damage (and would
            // overflow below), so its segment is as good as headerless.
            Some((id, first_seq)) if !by_id.contains_key(&id) && id < 1 << 62 && first_seq < 1 << 62 => {
                max_id = max_id.max(id);
                by_id.insert(id, Found { file: seg, first_seq });
            }
            _ => free.push(seg),
        }
    }

    let mut chain = VecDeque::new();
    let mut records = 0;
    if start.segment_id == 0 {
        free.extend(by_id.into_values().map(|f| f.file));
        return Ok(Recovered {
            chain,
            end: Position { segment_id: 0, offset: 0, next_seq: start.next_seq },
            next_segment_id: max_id + 1,
            free,
            next_slot,
            records,
        });
    }

    let (mut id, mut offset, mut seq) = (start.segment_id, start.offset, start.next_seq);
    let mut data = Vec::new();
    let mut inflated = Vec::new();
    let ended_by_marker;
    let mut marker_at = 0;
    loop {
        let Some(found) = by_id.remove(&id) else {
            if chain.is_empty() {
                return Err(Error::corrupt_journal(format!(
                    "journal segment {id}, where the manifest says replay starts, is missing or has a damaged header"
                )));
            }
            // The previous segment ended with a marker naming this one, but it was never
            // activated durably: the journal ends at that marker.
            ended_by_marker = true;
            offset = marker_at;
            break;
        };
        if offset == SEGMENT_HEADER_SIZE && found.first_seq != seq && !chain.is_empty() {
            return Err(Error::corrupt_journal(format!(
                "journal segment {id} starts at record {} but record {seq} was expected",
                found.first_seq
            )));
        }
        // The whole file, at least: `segment_size` is the database's own (from its manifest),
        // never an option of this open. A file cut short reads as if zero-filled to that size.
        let len = found.file.file.len().map_err(|e| Error::io(format!("reading {}", found.file.name), e))?;
        data.clear();
        data.resize(len.max(segment_size) as usize, 0);
        found
            .file
            .file
            .read_at(&mut data[..len as usize], 0)
            .map_err(|e| Error::io(format!("reading {}", found.file.name), e))?;
        let seed = seed_for_segment(id);
        chain.push_back((id, found.file));

        let mut next_segment = None;
        loop {
            match read_record(&data, offset as usize, id, seq, seed) {
                Some((header, payload)) if header.kind == RecordKind::SegmentEnd => {
                    next_segment = Some(u64::from_le_bytes(payload.try_into().unwrap_or([0; 8])));
                    break;
                }
                Some((header, stored)) => {
                    let payload = if header.compressed {
                        decompress_payload(stored, MAX_RECORD_PAYLOAD, &mut inflated).map_err(|why| {
                            Error::corrupt_journal(format!(
                                "record {seq} in journal segment {id} at offset {offset} is marked LZ4-compressed, but {why}"
                            ))
                        })?;
                        &inflated[..]
                    } else {
                        stored
                    };
                    for m in mutation::decode(payload) {
                        let m = m.map_err(|at| {
                            Error::corrupt_journal(format!(
                                "record {seq} in segment {id} has a malformed mutation at payload byte {at}"
                            ))
                        })?;
                        apply(m)?;
                    }
                    records += 1;
                    seq += 1;
                    offset += (RECORD_HEADER_SIZE + stored.len()) as u64;
                }
                None => break,
            }
        }
        match next_segment {
            Some(next) => {
                id = next;
                marker_at = offset;
                offset = SEGMENT_HEADER_SIZE;
            }
            None => {
                check_torn_tail(&data, offset, id, seed, seq, &by_id)?;
                ended_by_marker = false;
                break;
            }
        }
    }
    // Segments beyond the end (never durably linked) are free; their ids stay burned. So does
    // the id a dangling end marker names: a free file may hold records of that id from its
    // activation that never became durable (its header lost in the crash), which would validate
    // again if the id were given to that file anew. The open rewrites the marker instead.
    free.extend(by_id.into_values().map(|f| f.file));
    let next_segment_id = (max_id + 1).max(id + 1);
    let end_id = if ended_by_marker { chain.back().map(|(i, _)| *i).unwrap_or(id) } else { id };
    Ok(Recovered {
        chain,
        end: Position { segment_id: end_id, offset, next_seq: seq },
        next_segment_id,
        free,
        next_slot,
        records,
    })
}

/// The record at `at`, if it is exactly the one expected there.
fn read_record(data: &[u8], at: usize, segment_id: u64, seq: u64, seed: u32) -> Option<(RecordHeader, &[u8])> {
    let (header, payload) = parse_valid(data, at, segment_id, seed)?;
    if header.seq != seq {
        return None;
    }
    // A record never eats the room reserved for the end marker, except the marker itself.
    let end = (at + RECORD_HEADER_SIZE + payload.len()) as u64;
    if header.kind == RecordKind::Mutations && end + END_MARKER_SIZE > data.len() as u64 {
        return None;
    }
    Some((header, payload))
}

fn parse_valid(data: &[u8], at: usize, segment_id: u64, seed: u32) -> Option<(RecordHeader, &[u8])> {
    let header = RecordHeader::parse(data.get(at..at + RECORD_HEADER_SIZE)?)?;
    if header.segment_id != segment_id {
        return None;
    }
    let payload = data.get(at + RECORD_HEADER_SIZE..at + RECORD_HEADER_SIZE + header.payload_len as usize)?;
    RecordHeader::verify(seed, &data[at..at + RECORD_HEADER_SIZE], payload).then_some((header, payload))
}

fn check_torn_tail(
    data: &[u8],
    bad_at: u64,
    segment_id: u64,
    seed: u32,
    seq: u64,
    later: &BTreeMap<u64, Found>,
) -> Result<()> {
    // A later record of this segment that had seen `bad_at` synced proves the damage is not a
    // torn write. Records are not aligned, so look for the magic at every byte.
    let magic = crate::record::RECORD_MAGIC;
    let mut at = bad_at as usize + 1;
    while let Some(found) = data.get(at..).and_then(|rest| rest.windows(4).position(|w| w == magic)) {
        at += found;
        if let Some((h, _)) = parse_valid(data, at, segment_id, seed) {
            if h.synced_upto > bad_at {
                return Err(Error::corrupt_journal(format!(
                    "journal segment {segment_id} is damaged at offset {bad_at} (record {seq}), \
                     but record {} after it was written once that offset was durable",
                    h.seq
                )));
            }
        }
        at += 1;
    }
    if let Some((id, _)) = later.iter().find(|(id, f)| **id > segment_id && f.first_seq == seq) {
        return Err(Error::corrupt_journal(format!(
            "journal segment {segment_id} is damaged at offset {bad_at} (record {seq}), \
             but segment {id} continues from that record"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::SimVfs;
    use crate::journal::segment::encode_header;

    /// A segment whose header (checksum intact) gives `id` and `first_seq`, holding one record.
    fn segment(id: u64, first_seq: u64) -> Vec<u8> {
        let mut bytes = encode_header(id, first_seq).to_vec();
        bytes.resize(SEGMENT_HEADER_SIZE as usize, 0);
        let mut payload = Vec::new();
        crate::mutation::encode_drop_table(&mut payload, 1);
        let header = RecordHeader {
            kind: RecordKind::Mutations,
            compressed: false,
            payload_len: payload.len() as u32,
            seq: first_seq,
            segment_id: id,
            synced_upto: 0,
        };
        header.encode(seed_for_segment(id), &payload, &mut bytes);
        bytes
    }

    /// Seen writing the `journal` fuzz target: a header claiming segment id or sequence number
    /// 2^64-1 overflowed the next ids (a panic with overflow checks, a wrap to 0 without).
    #[test]
    fn a_segment_id_or_sequence_near_2_64_is_a_damaged_header() {
        for (id, first_seq) in [(u64::MAX, 1), (7, u64::MAX)] {
            let vfs = SimVfs::new();
            vfs.write_file(&super::super::segment_file_name(0), segment(id, first_seq));
            let start = Position { segment_id: id, offset: SEGMENT_HEADER_SIZE, next_seq: first_seq };
            let err = recover(&vfs, 64 << 10, start, |_| Ok(())).err().expect("recovery must refuse the segment");
            assert_eq!(err.code, crate::ErrorCode::CorruptJournal);
            assert!(err.message.contains("missing or has a damaged header"), "{}", err.message);
        }
        // The same segment with ordinary numbers replays its record.
        let vfs = SimVfs::new();
        vfs.write_file(&super::super::segment_file_name(0), segment(7, 1));
        let start = Position { segment_id: 7, offset: SEGMENT_HEADER_SIZE, next_seq: 1 };
        let recovered = recover(&vfs, 64 << 10, start, |_| Ok(())).unwrap();
        assert_eq!((recovered.records, recovered.end.next_seq), (1, 2));
    }
}
