//! Primary keys, ordered as RethinkDB orders them: arrays < booleans < numbers < binary < times <
//! strings. Strings and finite numbers, the common keys, have their own variants (compared
//! directly, strings inline); every other key value is a [`Key::Datum`], compared by an
//! order-preserving byte encoding (see [`Key::from_value`]).

use std::cmp::Ordering;
use std::ops::Bound;

use compact_str::CompactString;

use crate::error::{Error, Result};

/// RethinkDB's limit on primary-key length, kept so the same data loads into either.
pub const MAX_KEY_BYTES: usize = 127;
/// The limit on a datum key's encoding. RethinkDB limits its own encoding of such keys to 128
/// bytes; ours is at most about twice as long for the same value (escaped bytes), so anything
/// RethinkDB accepts fits.
pub const MAX_DATUM_KEY_BYTES: usize = 512;

/// A primary key. Numbers sort before strings; numbers by value, strings by UTF-8 bytes; datum keys
/// by their encoding, whose first byte places them among the others (`A`rrays and `B`ooleans
/// before numbers, `P`seudotypes — binary, times — between numbers and strings).
///
/// Strings of up to 24 bytes are stored inline (`CompactString`), so a memtable search compares
/// keys inside the B-tree's nodes instead of following a pointer, and missing the cache, at every
/// comparison.
#[derive(Debug, Clone)]
pub enum Key {
    Num(f64),
    Str(CompactString),
    /// An array, boolean, time or binary key, by its encoding (see [`Key::from_value`]).
    Datum(Box<[u8]>),
}

// Type tags of the datum encoding, in RethinkDB's order of types (its `datum_t::print_primary`
// uses the same letters): numbers sit between `A`rrays/`B`ooleans and `P`seudotypes.
const TAG_ARRAY: u8 = b'A';
const TAG_BOOL: u8 = b'B';
const TAG_NUM: u8 = b'N';
const TAG_PSEUDO: u8 = b'P';
const TAG_STR: u8 = b'S';
const PSEUDO_BINARY: u8 = b'B';
const PSEUDO_TIME: u8 = b'T';
/// Inside an array: before each element, and after the last (so a prefix sorts first).
const ARRAY_ITEM: u8 = 1;
const ARRAY_END: u8 = 0;

impl Key {
    /// Checks a key: numbers must be finite, strings at most [`MAX_KEY_BYTES`] bytes.
    pub fn checked(self) -> Result<Key> {
        match self {
            Key::Num(n) if !n.is_finite() => Err(Error::invalid("primary key must be a finite number")),
            Key::Num(n) => Ok(Key::Num(if n == 0.0 { 0.0 } else { n })), // -0 and 0 are one key
            Key::Str(s) if s.len() > MAX_KEY_BYTES => {
                Err(Error::invalid(format!("primary key is {} bytes long, over the limit of {MAX_KEY_BYTES}", s.len())))
            }
            Key::Datum(b) if b.len() > MAX_DATUM_KEY_BYTES => Err(Error::invalid(format!(
                "primary key is {} bytes long encoded, over the limit of {MAX_DATUM_KEY_BYTES}",
                b.len()
            ))),
            k => Ok(k),
        }
    }

    /// The key of a JSON value: a string, a finite number, or — as RethinkDB allows — a boolean, an
    /// array of key values, a time (`{"$reql_type$":"TIME","epoch_time":…}`, keyed by its instant,
    /// whatever its timezone) or binary data (`{"$reql_type$":"BINARY","data":<base64>}`).
    ///
    /// Datum keys are encoded so that byte order is RethinkDB's order of the values: a type tag
    /// (`A`rray, `B`oolean, `N`umber, `P`seudotype, `S`tring), then for numbers 8 big-endian bytes of
    /// the IEEE bits (sign flipped, negatives inverted), for booleans one byte, for strings and binary
    /// their bytes with 0x00/0x01 escaped as 0x01 0x01 / 0x01 0x02 and a 0x00 terminator, for times
    /// `T` and the epoch seconds as a number, and for arrays each element after a 0x01 and a final
    /// 0x00 (so `[1]` sorts before `[1, 2]`).
    pub fn from_value(v: &serde_json::Value) -> std::result::Result<Key, String> {
        match v {
            serde_json::Value::String(s) => Ok(Key::Str(s.as_str().into())),
            serde_json::Value::Number(n) => Ok(Key::Num(n.as_f64().unwrap_or(f64::NAN))),
            _ => {
                let mut out = Vec::new();
                encode_datum(v, &mut out)?;
                Ok(Key::Datum(out.into()))
            }
        }
    }

    /// The key as a JSON value (a time key comes back in UTC: its timezone is not part of it).
    pub fn to_value(&self) -> serde_json::Value {
        match self {
            Key::Num(n) => num_value(*n).unwrap_or(serde_json::Value::Null),
            Key::Str(s) => serde_json::Value::String(s.to_string()),
            Key::Datum(b) => decode_datum(b).map_or(serde_json::Value::Null, |(v, _)| v),
        }
    }

    /// The key as JSON text, as it appears in documents.
    pub fn to_json(&self) -> String {
        match self {
            Key::Num(n) if n.fract() == 0.0 && n.abs() < 9.007_199_254_740_992e15 => format!("{}", *n as i64),
            Key::Num(n) => serde_json::Number::from_f64(*n).map(|n| n.to_string()).unwrap_or_default(),
            Key::Str(s) => serde_json::to_string(&**s).unwrap_or_default(),
            Key::Datum(_) => self.to_value().to_string(),
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
            Key::Datum(b) => {
                out.push(2);
                out.extend_from_slice(&(b.len() as u16).to_le_bytes());
                out.extend_from_slice(b);
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
            2 => {
                let len = u16::from_le_bytes(buf.get(1..3)?.try_into().ok()?) as usize;
                Some((Key::Datum(buf.get(3..3 + len)?.into()), 3 + len))
            }
            _ => None,
        }
    }
}

/// The length of the key encoded at the start of `buf`, if it is all there.
pub(crate) fn encoded_len(buf: &[u8]) -> Option<usize> {
    let len = match *buf.first()? {
        0 => 9,
        1 | 2 => 3 + u16::from_le_bytes(buf.get(1..3)?.try_into().ok()?) as usize,
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
                    Key::Datum(d) => num_vs_datum(d),
                },
                9,
            ))
        }
        1 => {
            let len = u16::from_le_bytes(buf.get(1..3)?.try_into().ok()?) as usize;
            let bytes = buf.get(3..3 + len)?;
            Some((
                match key {
                    Key::Num(_) | Key::Datum(_) => Ordering::Greater,
                    Key::Str(k) => bytes.cmp(k.as_bytes()),
                },
                3 + len,
            ))
        }
        2 => {
            let len = u16::from_le_bytes(buf.get(1..3)?.try_into().ok()?) as usize;
            let bytes = buf.get(3..3 + len)?;
            Some((
                match key {
                    Key::Num(_) => num_vs_datum(bytes).reverse(),
                    Key::Str(_) => Ordering::Less,
                    Key::Datum(k) => bytes.cmp(k),
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
            (Key::Num(_), Key::Datum(d)) => num_vs_datum(d),
            (Key::Datum(d), Key::Num(_)) => num_vs_datum(d).reverse(),
            (Key::Datum(_), Key::Str(_)) => Ordering::Less,
            (Key::Str(_), Key::Datum(_)) => Ordering::Greater,
            (Key::Datum(a), Key::Datum(b)) => a.cmp(b),
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

/// A number key against a datum key: by the datum's type tag.
fn num_vs_datum(d: &[u8]) -> Ordering {
    if d.first().is_some_and(|&t| t < TAG_NUM) {
        Ordering::Greater
    } else {
        Ordering::Less
    }
}

/// A number as JSON: integral values without a fraction, as [`Key::to_json`] writes them.
fn num_value(n: f64) -> Option<serde_json::Value> {
    if n.fract() == 0.0 && n.abs() < 9.007_199_254_740_992e15 {
        Some(serde_json::Value::from(n as i64))
    } else {
        serde_json::Number::from_f64(n).map(serde_json::Value::Number)
    }
}

fn encode_num(n: f64, out: &mut Vec<u8>) {
    let n = if n == 0.0 { 0.0 } else { n }; // -0 and 0 are one key
    let bits = n.to_bits();
    let ordered = if bits >> 63 == 1 { !bits } else { bits | 1 << 63 };
    out.extend_from_slice(&ordered.to_be_bytes());
}

fn decode_num(b: &[u8]) -> Option<f64> {
    let ordered = u64::from_be_bytes(b.get(..8)?.try_into().ok()?);
    Some(f64::from_bits(if ordered >> 63 == 1 { ordered & !(1 << 63) } else { !ordered }))
}

fn encode_bytes(b: &[u8], out: &mut Vec<u8>) {
    for &c in b {
        match c {
            0 => out.extend_from_slice(&[1, 1]),
            1 => out.extend_from_slice(&[1, 2]),
            c => out.push(c),
        }
    }
    out.push(0);
}

/// Bytes written by [`encode_bytes`], and the length they used.
fn decode_bytes(b: &[u8]) -> Option<(Vec<u8>, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        match *b.get(i)? {
            0 => return Some((out, i + 1)),
            1 => {
                out.push(b.get(i + 1)? - 1);
                i += 2;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
}

fn encode_datum(v: &serde_json::Value, out: &mut Vec<u8>) -> std::result::Result<(), String> {
    use serde_json::Value;
    match v {
        Value::Number(n) => {
            let n = n.as_f64().filter(|n| n.is_finite()).ok_or("a key number must be finite")?;
            out.push(TAG_NUM);
            encode_num(n, out);
        }
        Value::String(s) => {
            out.push(TAG_STR);
            encode_bytes(s.as_bytes(), out);
        }
        Value::Bool(b) => out.extend_from_slice(&[TAG_BOOL, u8::from(*b)]),
        Value::Array(items) => {
            out.push(TAG_ARRAY);
            for item in items {
                out.push(ARRAY_ITEM);
                encode_datum(item, out)?;
            }
            out.push(ARRAY_END);
        }
        Value::Object(o) => match o.get("$reql_type$").and_then(Value::as_str) {
            Some("TIME") => {
                let t = o.get("epoch_time").and_then(Value::as_f64).ok_or("a time key needs a number `epoch_time`")?;
                out.extend_from_slice(&[TAG_PSEUDO, PSEUDO_TIME]);
                encode_num(t, out);
            }
            Some("BINARY") => {
                let data = o.get("data").and_then(Value::as_str).ok_or("a binary key needs a string `data`")?;
                let bytes = base64_decode(data).ok_or("a binary key's `data` must be base64")?;
                out.extend_from_slice(&[TAG_PSEUDO, PSEUDO_BINARY]);
                encode_bytes(&bytes, out);
            }
            _ => return Err("a key cannot be an object (other than a time or binary)".into()),
        },
        Value::Null => return Err("a key cannot be null".into()),
    }
    Ok(())
}

/// The value encoded at the start of `b` by [`encode_datum`], and the length it used.
fn decode_datum(b: &[u8]) -> Option<(serde_json::Value, usize)> {
    use serde_json::Value;
    Some(match *b.first()? {
        TAG_NUM => (num_value(decode_num(&b[1..])?)?, 9),
        TAG_STR => {
            let (bytes, used) = decode_bytes(&b[1..])?;
            (Value::String(String::from_utf8(bytes).ok()?), 1 + used)
        }
        TAG_BOOL => (Value::Bool(*b.get(1)? == 1), 2),
        TAG_ARRAY => {
            let mut items = Vec::new();
            let mut at = 1;
            loop {
                match *b.get(at)? {
                    ARRAY_END => break (Value::Array(items), at + 1),
                    _ => {
                        let (item, used) = decode_datum(&b[at + 1..])?;
                        items.push(item);
                        at += 1 + used;
                    }
                }
            }
        }
        TAG_PSEUDO => match *b.get(1)? {
            PSEUDO_TIME => (
                serde_json::json!({"$reql_type$": "TIME", "epoch_time": decode_num(&b[2..])?, "timezone": "+00:00"}),
                10,
            ),
            PSEUDO_BINARY => {
                let (bytes, used) = decode_bytes(&b[2..])?;
                (serde_json::json!({"$reql_type$": "BINARY", "data": base64_encode(&bytes)}), 2 + used)
            }
            _ => return None,
        },
        _ => return None,
    })
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn base64_encode(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len().div_ceil(3) * 4);
    for chunk in b.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &c)| n | u32::from(c) << (16 - 8 * i));
        for i in 0..4 {
            out.push(if i <= chunk.len() { BASE64[(n >> (18 - 6 * i) & 63) as usize] as char } else { '=' });
        }
    }
    out
}

/// Standard base64, padding optional (binary values reach the engine as their drivers wrote them).
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let digits = s.trim_end_matches('=').as_bytes();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for &c in digits {
        acc = acc << 6 | BASE64.iter().position(|&d| d == c)? as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

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

    fn datum(v: serde_json::Value) -> Key {
        Key::from_value(&v).unwrap()
    }

    fn time(t: f64, tz: &str) -> serde_json::Value {
        serde_json::json!({"$reql_type$": "TIME", "epoch_time": t, "timezone": tz})
    }

    #[test]
    fn datum_keys_sort_in_rethinkdb_order_and_round_trip() {
        use serde_json::json;
        // RethinkDB's order: arrays < booleans < numbers < binary < times < strings; arrays
        // element by element, a prefix first; times by instant.
        let ordered = vec![
            datum(json!([])),
            datum(json!([[]])),
            datum(json!([false, 1])),
            datum(json!([true])),
            datum(json!([-2])),
            datum(json!([1])),
            datum(json!([1, "a"])),
            datum(json!([1, "a", 0])),
            datum(json!([1, "a\0"])),
            datum(json!([1, "a\u{1}"])),
            datum(json!([1, "ab"])),
            datum(json!([time(5.0, "Z")])),
            datum(json!(["a"])),
            datum(json!(false)),
            datum(json!(true)),
            Key::from(-1e300),
            Key::from(-1.0),
            Key::from(0.0),
            Key::from(3.5),
            datum(json!({"$reql_type$": "BINARY", "data": ""})),
            datum(json!({"$reql_type$": "BINARY", "data": "AA=="})),
            datum(json!({"$reql_type$": "BINARY", "data": "AAE="})),
            datum(json!({"$reql_type$": "BINARY", "data": "/w=="})),
            datum(time(-1.5, "+01:00")),
            datum(time(0.0, "Z")),
            datum(time(1375445163.087, "-07:00")),
            Key::from(""),
            Key::from("a"),
        ];
        for (i, a) in ordered.iter().enumerate() {
            let mut buf = Vec::new();
            a.encode(&mut buf);
            assert_eq!(Key::decode(&buf), Some((a.clone(), buf.len())));
            assert_eq!(Key::from_value(&a.to_value()).unwrap(), *a, "{}", a.to_json());
            for (j, b) in ordered.iter().enumerate() {
                assert_eq!(a.cmp(b), i.cmp(&j), "{} vs {}", a.to_json(), b.to_json());
                assert_eq!(cmp_encoded(&buf, b), Some((i.cmp(&j), buf.len())), "{} vs {}", a.to_json(), b.to_json());
            }
        }
    }

    #[test]
    fn a_time_key_is_its_instant() {
        assert_eq!(datum(time(10.25, "+06:00")), datum(time(10.25, "Z")));
        assert_eq!(
            datum(time(10.25, "+06:00")).to_json(),
            r#"{"$reql_type$":"TIME","epoch_time":10.25,"timezone":"+00:00"}"#
        );
        assert_eq!(datum(serde_json::json!([true, "x\0y", 2])).to_json(), r#"[true,"x\u0000y",2]"#);
        assert_eq!(
            datum(serde_json::json!({"$reql_type$": "BINARY", "data": "AAEC/w=="})).to_json(),
            r#"{"$reql_type$":"BINARY","data":"AAEC/w=="}"#
        );
    }

    #[test]
    fn rejects_keys_rethinkdb_rejects() {
        use serde_json::json;
        for bad in [json!(null), json!({"a": 1}), json!([null]), json!([{}]), json!({"$reql_type$": "GEOMETRY"})] {
            assert!(Key::from_value(&bad).is_err(), "{bad}");
        }
        assert!(datum(json!(["x".repeat(130)])).checked().is_ok());
        assert!(datum(json!(["x".repeat(600)])).checked().is_err());
    }

    #[test]
    fn rejects_long_and_non_finite_keys() {
        assert!(Key::from("x".repeat(128)).checked().is_err());
        assert!(Key::from(f64::INFINITY).checked().is_err());
        assert_eq!(Key::from(-0.0).checked().unwrap().to_json(), "0");
        assert_eq!(Key::from(2.5).to_json(), "2.5");
    }
}
