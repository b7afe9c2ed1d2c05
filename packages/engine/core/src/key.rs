//! Primary keys: strings or finite numbers, ordered as RethinkDB orders them (numbers first).

use std::cmp::Ordering;
use std::ops::Bound;

use compact_str::CompactString;

use crate::error::{Error, Result};

/// RethinkDB's limit on primary-key length, kept so the same data loads into either.
pub const MAX_KEY_BYTES: usize = 127;

/// A primary key. Numbers sort before strings; numbers by value, strings by UTF-8 bytes.
///
/// Strings of up to 24 bytes are stored inline (`CompactString`), so a memtable search compares
/// keys inside the B-tree's nodes instead of following a pointer, and missing the cache, at every
/// comparison.
#[derive(Debug, Clone)]
pub enum Key {
    Num(f64),
    Str(CompactString),
}

impl Key {
    /// Checks a key: numbers must be finite, strings at most [`MAX_KEY_BYTES`] bytes.
    pub fn checked(self) -> Result<Key> {
        match self {
            Key::Num(n) if !n.is_finite() => Err(Error::invalid("primary key must be a finite number")),
            Key::Num(n) => Ok(Key::Num(if n == 0.0 { 0.0 } else { n })), // -0 and 0 are one key
            Key::Str(s) if s.len() > MAX_KEY_BYTES => {
                Err(Error::invalid(format!("primary key is {} bytes long, over the limit of {MAX_KEY_BYTES}", s.len())))
            }
            k => Ok(k),
        }
    }

    /// The key as JSON text, as it appears in documents.
    pub fn to_json(&self) -> String {
        match self {
            Key::Num(n) if n.fract() == 0.0 && n.abs() < 9.007_199_254_740_992e15 => format!("{}", *n as i64),
            Key::Num(n) => serde_json::Number::from_f64(*n).map(|n| n.to_string()).unwrap_or_default(),
            Key::Str(s) => serde_json::to_string(&**s).unwrap_or_default(),
        }
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Key::Num(n) => {
                out.push(0);
                out.extend_from_slice(&n.to_le_bytes());
            }
            Key::Str(s) => {
                out.push(1);
                out.extend_from_slice(&(s.len() as u16).to_le_bytes());
                out.extend_from_slice(s.as_bytes());
            }
        }
    }

    /// Decodes a key written by [`Key::encode`]; returns it and the bytes it used.
    pub(crate) fn decode(buf: &[u8]) -> Option<(Key, usize)> {
        match *buf.first()? {
            0 => {
                let bytes: [u8; 8] = buf.get(1..9)?.try_into().ok()?;
                Some((Key::Num(f64::from_le_bytes(bytes)), 9))
            }
            1 => {
                let len = u16::from_le_bytes(buf.get(1..3)?.try_into().ok()?) as usize;
                let s = std::str::from_utf8(buf.get(3..3 + len)?).ok()?;
                Some((Key::Str(s.into()), 3 + len))
            }
            _ => None,
        }
    }
}

/// The length of the key encoded at the start of `buf`, if it is all there.
pub(crate) fn encoded_len(buf: &[u8]) -> Option<usize> {
    let len = match *buf.first()? {
        0 => 9,
        1 => 3 + u16::from_le_bytes(buf.get(1..3)?.try_into().ok()?) as usize,
        _ => return None,
    };
    (buf.len() >= len).then_some(len)
}

/// Compares the key encoded at the start of `buf` (by [`Key::encode`]) with `key`, without
/// decoding it into a `Key` (point reads scan a block this way); returns the order of the
/// encoded key relative to `key` and the bytes it used.
pub(crate) fn cmp_encoded(buf: &[u8], key: &Key) -> Option<(Ordering, usize)> {
    match *buf.first()? {
        0 => {
            let n = f64::from_le_bytes(buf.get(1..9)?.try_into().ok()?);
            Some((
                match key {
                    Key::Num(k) => n.total_cmp(k),
                    Key::Str(_) => Ordering::Less,
                },
                9,
            ))
        }
        1 => {
            let len = u16::from_le_bytes(buf.get(1..3)?.try_into().ok()?) as usize;
            let bytes = buf.get(3..3 + len)?;
            Some((
                match key {
                    Key::Num(_) => Ordering::Greater,
                    Key::Str(k) => bytes.cmp(k.as_bytes()),
                },
                3 + len,
            ))
        }
        _ => None,
    }
}

impl From<f64> for Key {
    fn from(n: f64) -> Self {
        Key::Num(n)
    }
}
impl From<&str> for Key {
    fn from(s: &str) -> Self {
        Key::Str(s.into())
    }
}
impl From<String> for Key {
    fn from(s: String) -> Self {
        Key::Str(s.into())
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Key::Num(a), Key::Num(b)) => a.total_cmp(b),
            (Key::Num(_), Key::Str(_)) => Ordering::Less,
            (Key::Str(_), Key::Num(_)) => Ordering::Greater,
            (Key::Str(a), Key::Str(b)) => a.as_bytes().cmp(b.as_bytes()),
        }
    }
}
impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Key {}

/// A key range for scans, in key order.
#[derive(Debug, Clone)]
pub struct KeyRange {
    pub lower: Bound<Key>,
    pub upper: Bound<Key>,
}

impl Default for KeyRange {
    fn default() -> Self {
        KeyRange { lower: Bound::Unbounded, upper: Bound::Unbounded }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_sort_before_strings_and_round_trip() {
        let mut keys = vec![Key::from("b"), Key::from(2.0), Key::from("a"), Key::from(-1.5)];
        keys.sort();
        assert_eq!(keys, vec![Key::from(-1.5), Key::from(2.0), Key::from("a"), Key::from("b")]);
        for k in &keys {
            let mut buf = Vec::new();
            k.encode(&mut buf);
            assert_eq!(Key::decode(&buf), Some((k.clone(), buf.len())));
            for other in &keys {
                assert_eq!(cmp_encoded(&buf, other), Some((k.cmp(other), buf.len())), "{k:?} vs {other:?}");
            }
        }
    }

    #[test]
    fn rejects_long_and_non_finite_keys() {
        assert!(Key::from("x".repeat(128)).checked().is_err());
        assert!(Key::from(f64::INFINITY).checked().is_err());
        assert_eq!(Key::from(-0.0).checked().unwrap().to_json(), "0");
        assert_eq!(Key::from(2.5).to_json(), "2.5");
    }
}
