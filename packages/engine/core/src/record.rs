//! The journal record: a fixed header, then the payload.
//!
//! ```text
//! offset size field
//!  0     4    magic        "WREC"
//!  4     1    kind         1 = mutations, 2 = segment end (payload: next segment id, u64)
//!  5     1    flags        bit 0 (`FLAG_LZ4`): the payload is stored LZ4-compressed; other bits 0
//!  6     2    reserved     0
//!  8     4    payload_len
//! 12     4    checksum     CRC32C(seed(segment_id), header with this field zeroed ‖ payload)
//! 16     8    seq          group sequence number; consecutive across the whole journal
//! 24     8    segment_id   the segment this record was written into
//! 32     8    synced_upto  offset in this segment known durable when this record was written
//! 40          payload
//! ```
//! A compressed payload is stored as `uncompressed_len u32 ‖ LZ4 block`; `payload_len` and the
//! checksum cover the bytes as stored. Only mutation records are ever compressed.
//! All integers little-endian. `synced_upto` tells a torn tail (the damaged record was never
//! synced) from real corruption (a later valid record proves the damaged one had been synced).

use crate::checksum::record_checksum;

pub const RECORD_MAGIC: [u8; 4] = *b"WREC";
pub const RECORD_HEADER_SIZE: usize = 40;
/// Largest payload (uncompressed) a record ever carries, whatever the segment size; so also the
/// largest document.
pub(crate) const MAX_RECORD_PAYLOAD: usize = 16 << 20;
/// Flags bit 0: the payload is `uncompressed_len u32 ‖ LZ4 block`.
pub const FLAG_LZ4: u8 = 1;

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
    /// The payload is stored LZ4-compressed ([`FLAG_LZ4`]); `payload_len` is the stored length.
    pub compressed: bool,
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
        out.push(if self.compressed { FLAG_LZ4 } else { 0 });
        out.extend_from_slice(&[0, 0]);
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
        if b.len() < RECORD_HEADER_SIZE || b[..4] != RECORD_MAGIC {
            return None;
        }
        let (kind, compressed) = match (b[KIND_OFFSET], b[FLAGS_OFFSET]) {
            (1, 0) => (RecordKind::Mutations, false),
            (1, FLAG_LZ4) => (RecordKind::Mutations, true),
            (2, 0) => (RecordKind::SegmentEnd, false),
            _ => return None,
        };
        Some(RecordHeader {
            kind,
            compressed,
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

/// Writes the stored form of `payload` compressed (`uncompressed_len u32 ‖ LZ4 block`) into
/// `out`, replacing its contents. Returns false, leaving `out` unspecified, unless that form is
/// strictly smaller than `payload`.
pub(crate) fn compress_payload(payload: &[u8], out: &mut Vec<u8>) -> bool {
    let Ok(len) = u32::try_from(payload.len()) else { return false };
    out.clear();
    out.resize(4 + lz4_flex::block::get_maximum_output_size(payload.len()), 0);
    out[..4].copy_from_slice(&len.to_le_bytes());
    match lz4_flex::block::compress_into(payload, &mut out[4..]) {
        Ok(n) if 4 + n < payload.len() => {
            out.truncate(4 + n);
            true
        }
        _ => false,
    }
}

/// Restores a payload stored by [`compress_payload`] into `out` (replacing its contents).
/// `Err` says why the stored bytes are not a valid compressed payload of at most `max_len` bytes.
pub(crate) fn decompress_payload(stored: &[u8], max_len: usize, out: &mut Vec<u8>) -> Result<(), String> {
    let Some(len) = stored.get(..4).map(|b| u32_at(b, 0) as usize) else {
        return Err(format!("its payload of {} bytes is too short for a compressed one", stored.len()));
    };
    if len > max_len {
        return Err(format!("it claims {len} uncompressed bytes, more than a record can hold ({max_len})"));
    }
    out.clear();
    out.resize(len, 0);
    match lz4_flex::block::decompress_into(&stored[4..], out) {
        Ok(n) if n == len => Ok(()),
        Ok(n) => Err(format!("it decompresses to {n} bytes, not the {len} its header says")),
        Err(e) => Err(format!("it does not decompress ({e})")),
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
            compressed: false,
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
    fn a_compressed_record_round_trips_through_the_flag() {
        let original: Vec<u8> =
            (0..4000u32).flat_map(|i| format!("{{\"id\":{i},\"pad\":\"xxxxxxxx\"}}").into_bytes()).collect();
        let mut stored = Vec::new();
        assert!(compress_payload(&original, &mut stored));
        assert!(stored.len() < original.len() / 2, "{} of {}", stored.len(), original.len());
        assert_eq!(u32_at(&stored, 0) as usize, original.len());
        let h = RecordHeader {
            kind: RecordKind::Mutations,
            compressed: true,
            payload_len: stored.len() as u32,
            seq: 9,
            segment_id: 7,
            synced_upto: 4096,
        };
        let mut buf = Vec::new();
        h.encode(seed_for_segment(7), &stored, &mut buf);
        assert_eq!(buf[FLAGS_OFFSET], FLAG_LZ4);
        let parsed = RecordHeader::parse(&buf).unwrap();
        assert_eq!(parsed, h);
        assert!(RecordHeader::verify(seed_for_segment(7), &buf, &buf[RECORD_HEADER_SIZE..]));
        let mut back = Vec::new();
        decompress_payload(&buf[RECORD_HEADER_SIZE..], 16 << 20, &mut back).unwrap();
        assert_eq!(back, original);

        // Clearing the flag is caught by the checksum: the flags byte is part of the header.
        let mut cleared = buf.clone();
        cleared[FLAGS_OFFSET] = 0;
        assert!(!RecordHeader::verify(seed_for_segment(7), &cleared, &cleared[RECORD_HEADER_SIZE..]));
        // Unknown flag bits, or a compressed segment-end marker, are not a header.
        let mut unknown = buf.clone();
        unknown[FLAGS_OFFSET] = 2;
        assert_eq!(RecordHeader::parse(&unknown), None);
        let mut marker = buf.clone();
        marker[KIND_OFFSET] = RecordKind::SegmentEnd as u8;
        assert_eq!(RecordHeader::parse(&marker), None);
    }

    #[test]
    fn bad_compressed_payloads_are_refused_not_panicked_on() {
        let original = vec![b'a'; 10_000];
        let mut stored = Vec::new();
        assert!(compress_payload(&original, &mut stored));
        let mut out = Vec::new();
        // A wrong length, either way.
        let mut longer = stored.clone();
        longer[..4].copy_from_slice(&10_001u32.to_le_bytes());
        assert!(decompress_payload(&longer, 16 << 20, &mut out).is_err());
        let mut shorter = stored.clone();
        shorter[..4].copy_from_slice(&9_999u32.to_le_bytes());
        assert!(decompress_payload(&shorter, 16 << 20, &mut out).is_err());
        // Too short to hold the length, a length over the limit, a cut block.
        assert!(decompress_payload(&stored[..3], 16 << 20, &mut out).is_err());
        assert!(decompress_payload(&stored, 9_999, &mut out).is_err());
        assert!(decompress_payload(&stored[..stored.len() - 1], 16 << 20, &mut out).is_err());
        // Incompressible bytes are not stored compressed.
        let mut x = 0x9e3779b97f4a7c15u64;
        let random: Vec<u8> = (0..70_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        assert!(!compress_payload(&random, &mut stored));
        assert!(!compress_payload(b"", &mut stored));
    }

    #[test]
    fn zeroes_are_not_a_header() {
        assert_eq!(RecordHeader::parse(&[0u8; RECORD_HEADER_SIZE]), None);
    }
}
