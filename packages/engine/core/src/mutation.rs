//! What a journal record's payload holds: a sequence of mutations.
//!
//! ```text
//! put:          1 | table_id u32 | key | doc_len u32 | doc (UTF-8 JSON)
//! delete:       2 | table_id u32 | key
//! create table: 3 | table_id u32 | name_len u16 | name | pk_len u16 | primary key
//! drop table:   4 | table_id u32
//! create index: 5 | table_id u32 | name_len u16 | name | field_len u16 | field | multi u8
//! drop index:   6 | table_id u32 | name_len u16 | name
//! key:          0 | f64            (number)   or   1 | len u16 | UTF-8 bytes   (string)
//! ```

use std::sync::Arc;

use crate::key::Key;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Mutation {
    Put { table_id: u32, key: Key, doc: Arc<str> },
    Delete { table_id: u32, key: Key },
    CreateTable { table_id: u32, name: String, primary_key: String },
    DropTable { table_id: u32 },
    CreateIndex { table_id: u32, name: String, field: String, multi: bool },
    DropIndex { table_id: u32, name: String },
}

pub(crate) fn encode_put(out: &mut Vec<u8>, table_id: u32, key: &Key, doc: &str) {
    out.push(1);
    out.extend_from_slice(&table_id.to_le_bytes());
    key.encode(out);
    out.extend_from_slice(&(doc.len() as u32).to_le_bytes());
    out.extend_from_slice(doc.as_bytes());
}

pub(crate) fn encode_delete(out: &mut Vec<u8>, table_id: u32, key: &Key) {
    out.push(2);
    out.extend_from_slice(&table_id.to_le_bytes());
    key.encode(out);
}

fn encode_str16(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u16).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

pub(crate) fn encode_create_table(out: &mut Vec<u8>, table_id: u32, name: &str, primary_key: &str) {
    out.push(3);
    out.extend_from_slice(&table_id.to_le_bytes());
    encode_str16(out, name);
    encode_str16(out, primary_key);
}

pub(crate) fn encode_drop_table(out: &mut Vec<u8>, table_id: u32) {
    out.push(4);
    out.extend_from_slice(&table_id.to_le_bytes());
}

pub(crate) fn encode_create_index(out: &mut Vec<u8>, table_id: u32, name: &str, field: &str, multi: bool) {
    out.push(5);
    out.extend_from_slice(&table_id.to_le_bytes());
    encode_str16(out, name);
    encode_str16(out, field);
    out.push(multi as u8);
}

pub(crate) fn encode_drop_index(out: &mut Vec<u8>, table_id: u32, name: &str) {
    out.push(6);
    out.extend_from_slice(&table_id.to_le_bytes());
    encode_str16(out, name);
}

/// Iterates over the mutations in a payload; yields `Err(offset)` at the first malformed one
/// (which, behind a valid checksum, means a bug rather than a bad disk).
pub(crate) struct Mutations<'a> {
    buf: &'a [u8],
    at: usize,
}

pub(crate) fn decode(buf: &[u8]) -> Mutations<'_> {
    Mutations { buf, at: 0 }
}

impl Mutations<'_> {
    fn u16(&mut self) -> Option<u16> {
        let v = u16::from_le_bytes(self.buf.get(self.at..self.at + 2)?.try_into().ok()?);
        self.at += 2;
        Some(v)
    }
    fn u32(&mut self) -> Option<u32> {
        let v = u32::from_le_bytes(self.buf.get(self.at..self.at + 4)?.try_into().ok()?);
        self.at += 4;
        Some(v)
    }
    fn key(&mut self) -> Option<Key> {
        let (key, used) = Key::decode(self.buf.get(self.at..)?)?;
        self.at += used;
        Some(key)
    }
    fn str(&mut self, len: usize) -> Option<&str> {
        let s = std::str::from_utf8(self.buf.get(self.at..self.at + len)?).ok()?;
        self.at += len;
        Some(s)
    }
    fn next_mutation(&mut self) -> Option<Mutation> {
        let tag = *self.buf.get(self.at)?;
        self.at += 1;
        let table_id = self.u32()?;
        Some(match tag {
            1 => {
                let key = self.key()?;
                let len = self.u32()? as usize;
                Mutation::Put { table_id, key, doc: self.str(len)?.into() }
            }
            2 => Mutation::Delete { table_id, key: self.key()? },
            3 => {
                let len = self.u16()? as usize;
                let name = self.str(len)?.to_string();
                let len = self.u16()? as usize;
                Mutation::CreateTable { table_id, name, primary_key: self.str(len)?.to_string() }
            }
            4 => Mutation::DropTable { table_id },
            5 => {
                let len = self.u16()? as usize;
                let name = self.str(len)?.to_string();
                let len = self.u16()? as usize;
                let field = self.str(len)?.to_string();
                // Written as 0 or 1; any other byte is not a mutation this code wrote.
                let multi = match *self.buf.get(self.at)? {
                    0 => false,
                    1 => true,
                    _ => return None,
                };
                self.at += 1;
                Mutation::CreateIndex { table_id, name, field, multi }
            }
            6 => {
                let len = self.u16()? as usize;
                Mutation::DropIndex { table_id, name: self.str(len)?.to_string() }
            }
            _ => return None,
        })
    }
}

impl Iterator for Mutations<'_> {
    type Item = Result<Mutation, usize>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.buf.len() {
            return None;
        }
        let start = self.at;
        match self.next_mutation() {
            Some(m) => Some(Ok(m)),
            None => {
                self.at = self.buf.len();
                Some(Err(start))
            }
        }
    }
}

/// Splits a group's mutations into record payloads at mutation boundaries.
///
/// The committer keeps one for all its groups: [`GroupEncoder::clear`] keeps the last payload's
/// buffer for the next group. Growing a fresh buffer by doubling for every group cost the
/// committer a fifth of its time on small hard writes (glibc `realloc`, in a profile of 64
/// concurrent writers).
pub(crate) struct GroupEncoder {
    pub payloads: Vec<Vec<u8>>,
    current: Vec<u8>,
    limit: usize,
}

/// The largest buffer [`GroupEncoder::clear`] keeps: a bulk batch of 10,000 small documents.
const RETAINED_CAPACITY: usize = 4 << 20;

impl GroupEncoder {
    pub fn new(limit: usize) -> Self {
        GroupEncoder { payloads: Vec::new(), current: Vec::new(), limit }
    }
    /// Empties the encoder for the next group, keeping the last payload's buffer unless large.
    pub fn clear(&mut self) {
        if let Some(last) = self.payloads.pop().filter(|p| p.capacity() <= RETAINED_CAPACITY) {
            self.current = last;
        }
        self.current.clear();
        self.payloads.clear();
    }
    /// The buffer to encode the next mutation into.
    pub fn buf(&mut self) -> &mut Vec<u8> {
        &mut self.current
    }
    /// Called after each mutation: seals the payload once it is large enough.
    pub fn boundary(&mut self) {
        if self.current.len() >= self.limit / 2 {
            self.payloads.push(std::mem::take(&mut self.current));
        }
    }
    pub fn finish(&mut self) {
        if !self.current.is_empty() {
            self.payloads.push(std::mem::take(&mut self.current));
        }
    }
    /// Largest document a record can carry.
    pub fn max_document(&self) -> usize {
        self.limit / 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cleared_encoder_starts_the_next_group_empty_in_the_buffer_it_kept() {
        let mut enc = GroupEncoder::new(64);
        for i in 0..10 {
            encode_put(enc.buf(), 1, &Key::from(i as f64), "{\"x\":1}");
            enc.boundary();
        }
        enc.finish();
        assert!(enc.payloads.len() > 1, "the group spans several payloads");
        let kept = enc.payloads.last().unwrap().as_ptr();
        enc.clear();
        assert!(enc.payloads.is_empty());

        encode_delete(enc.buf(), 1, &Key::from(1.0));
        enc.boundary();
        enc.finish();
        let mut alone = Vec::new();
        encode_delete(&mut alone, 1, &Key::from(1.0));
        assert_eq!(enc.payloads, vec![alone], "nothing of the last group is left");
        assert_eq!(enc.payloads[0].as_ptr(), kept, "the last payload's buffer is reused");
    }

    #[test]
    fn every_mutation_round_trips() {
        let mut buf = Vec::new();
        encode_create_table(&mut buf, 3, "people", "email");
        encode_put(&mut buf, 3, &Key::from("a@b"), "{\"email\":\"a@b\"}");
        encode_delete(&mut buf, 3, &Key::from(7.0));
        encode_drop_table(&mut buf, 3);
        encode_create_index(&mut buf, 3, "by_city", "address.city", true);
        encode_drop_index(&mut buf, 3, "by_city");
        let got: Vec<_> = decode(&buf).collect::<Result<_, _>>().unwrap();
        assert_eq!(
            got,
            vec![
                Mutation::CreateTable { table_id: 3, name: "people".into(), primary_key: "email".into() },
                Mutation::Put { table_id: 3, key: Key::from("a@b"), doc: "{\"email\":\"a@b\"}".into() },
                Mutation::Delete { table_id: 3, key: Key::from(7.0) },
                Mutation::DropTable { table_id: 3 },
                Mutation::CreateIndex {
                    table_id: 3,
                    name: "by_city".into(),
                    field: "address.city".into(),
                    multi: true
                },
                Mutation::DropIndex { table_id: 3, name: "by_city".into() },
            ]
        );
        assert_eq!(decode(&buf[..buf.len() - 2]).last(), Some(Err(buf.len() - 14)));
    }

    /// Found by the `journal_record` fuzz target (`fuzz/corpus/journal_record/regression-multi-flag`):
    /// an index's `multi` byte other than 0 or 1 was read as `false`, so a damaged record
    /// behind a valid checksum replayed as a different index instead of being reported.
    #[test]
    fn an_index_flag_other_than_0_or_1_is_malformed() {
        let mut buf = Vec::new();
        encode_create_index(&mut buf, 1, "by_x", "x", false);
        let last = buf.len() - 1;
        for (byte, multi) in [(0u8, Some(false)), (1, Some(true))] {
            buf[last] = byte;
            let got = decode(&buf).next().unwrap().ok();
            assert_eq!(
                got.map(|m| matches!(m, Mutation::CreateIndex { multi: m, .. } if Some(m) == multi)),
                Some(true)
            );
        }
        for byte in [2u8, 5, 0xff] {
            buf[last] = byte;
            assert_eq!(decode(&buf).next(), Some(Err(0)), "multi byte {byte}");
        }
    }
}
