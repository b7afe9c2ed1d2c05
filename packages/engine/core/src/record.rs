//! The journal record: a fixed header, then the payload.
//!
//! ```text
//! offset size field
//!  0     4    magic        "WREC"
//!  4     1    kind         1 = mutations, 2 = segment end (payload: next segment id, u64)
//!  5     1    flags        reserved (0); bit 0 will mark an LZ4-compressed payload
//!  6     2    reserved     0
//!  8     4    payload_len
//! 12     4    checksum     CRC32C(seed(segment_id), header with this field zeroed ‖ payload)
//! 16     8    seq          group sequence number; consecutive across the whole journal
//! 24     8    segment_id   the segment this record was written into
//! 32     8    synced_upto  offset in this segment known durable when this record was written
//! 40          payload
//! ```
//! All integers little-endian. `synced_upto` tells a torn tail (the damaged record was never
//! synced) from real corruption (a later valid record proves the damaged one had been synced).

use crate::checksum::record_checksum;

pub const RECORD_MAGIC: [u8; 4] = *b"WREC";
pub const RECORD_HEADER_SIZE: usize = 40;

const MAGIC_OFFSET: usize = 0;
const KIND_OFFSET: usize = MAGIC_OFFSET + 4;
const FLAGS_OFFSET: usize = KIND_OFFSET + 1;
const LEN_OFFSET: usize = FLAGS_OFFSET + 1 + 2;
const CHECKSUM_OFFSET: usize = LEN_OFFSET + 4;
const SEQ_OFFSET: usize = CHECKSUM_OFFSET + 4;
const SEGMENT_OFFSET: usize = SEQ_OFFSET + 8;
const SYNCED_OFFSET: usize = SEGMENT_OFFSET + 8;
const _: () = assert!(SYNCED_OFFSET + 8 == RECORD_HEADER_SIZE);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordKind {
    Mutations = 1,
    SegmentEnd = 2,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeader {
    pub kind: RecordKind,
    pub payload_len: u32,
    pub seq: u64,
    pub segment_id: u64,
    pub synced_upto: u64,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

impl RecordHeader {
    /// Appends header and payload to `out`, checksummed with `seed`.
    pub fn encode(&self, seed: u32, payload: &[u8], out: &mut Vec<u8>) {
        debug_assert_eq!(payload.len(), self.payload_len as usize);
        let start = out.len();
        out.extend_from_slice(&RECORD_MAGIC);
        out.push(self.kind as u8);
        out.extend_from_slice(&[0, 0, 0]);
        out.extend_from_slice(&self.payload_len.to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.extend_from_slice(&self.segment_id.to_le_bytes());
        out.extend_from_slice(&self.synced_upto.to_le_bytes());
        let crc = record_checksum(seed, &out[start..], payload);
        out[start + CHECKSUM_OFFSET..start + CHECKSUM_OFFSET + 4].copy_from_slice(&crc.to_le_bytes());
        out.extend_from_slice(payload);
    }

    /// Parses a header without checking the checksum (the payload is needed for that).
    /// `None` when the bytes cannot be a header at all.
    pub fn parse(b: &[u8]) -> Option<RecordHeader> {
        if b.len() < RECORD_HEADER_SIZE || b[..4] != RECORD_MAGIC || b[FLAGS_OFFSET] != 0 {
            return None;
        }
        let kind = match b[KIND_OFFSET] {
            1 => RecordKind::Mutations,
            2 => RecordKind::SegmentEnd,
            _ => return None,
        };
        Some(RecordHeader {
            kind,
            payload_len: u32_at(b, LEN_OFFSET),
            seq: u64_at(b, SEQ_OFFSET),
            segment_id: u64_at(b, SEGMENT_OFFSET),
            synced_upto: u64_at(b, SYNCED_OFFSET),
        })
    }

    /// True when `header ‖ payload` checksums correctly under `seed`.
    pub fn verify(seed: u32, header: &[u8], payload: &[u8]) -> bool {
        let mut h = [0u8; RECORD_HEADER_SIZE];
        h.copy_from_slice(&header[..RECORD_HEADER_SIZE]);
        let stored = u32_at(&h, CHECKSUM_OFFSET);
        h[CHECKSUM_OFFSET..CHECKSUM_OFFSET + 4].fill(0);
        record_checksum(seed, &h, payload) == stored
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksum::seed_for_segment;

    fn sample() -> (RecordHeader, Vec<u8>) {
        let payload = b"payload bytes".to_vec();
        let h = RecordHeader {
            kind: RecordKind::Mutations,
            payload_len: payload.len() as u32,
            seq: 42,
            segment_id: 7,
            synced_upto: 4096,
        };
        (h, payload)
    }

    #[test]
    fn encode_parse_verify_round_trip() {
        let (h, payload) = sample();
        let mut buf = Vec::new();
        h.encode(seed_for_segment(7), &payload, &mut buf);
        assert_eq!(buf.len(), RECORD_HEADER_SIZE + payload.len());
        assert_eq!(RecordHeader::parse(&buf), Some(h));
        assert!(RecordHeader::verify(seed_for_segment(7), &buf, &buf[RECORD_HEADER_SIZE..]));
    }

    #[test]
    fn any_flipped_bit_fails_verification() {
        let (h, payload) = sample();
        let mut buf = Vec::new();
        h.encode(seed_for_segment(7), &payload, &mut buf);
        for byte in 0..buf.len() {
            for bit in 0..8 {
                let mut bad = buf.clone();
                bad[byte] ^= 1 << bit;
                let ok = RecordHeader::parse(&bad).is_some()
                    && RecordHeader::verify(seed_for_segment(7), &bad, &bad[RECORD_HEADER_SIZE..]);
                assert!(!ok, "flip at byte {byte} bit {bit} went unnoticed");
            }
        }
    }

    #[test]
    fn a_record_from_another_segment_does_not_verify() {
        let (h, payload) = sample();
        let mut buf = Vec::new();
        h.encode(seed_for_segment(7), &payload, &mut buf);
        assert!(!RecordHeader::verify(seed_for_segment(8), &buf, &buf[RECORD_HEADER_SIZE..]));
    }

    #[test]
    fn zeroes_are_not_a_header() {
        assert_eq!(RecordHeader::parse(&[0u8; RECORD_HEADER_SIZE]), None);
    }
}
