//! Turning a buffer of NDJSON or a JSON array into documents ready to commit.
//!
//! Runs on any thread, before the committer: each document is checked to be a JSON object with a
//! string or number primary key, and gets a UUID v4 key spliced in when it has none. The stored
//! text is the document as given (no re-serialization). Problems with one document become a
//! document error; only a JSON array that cannot be split fails the whole batch.

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use std::fmt;
use std::sync::Arc;

use crate::error::{Error, ErrorCode, Result};
use crate::key::Key;

/// A stored document: its JSON text as given, shared between the memtable, runs' readers and
/// answers without copying.
pub(crate) type Doc = Arc<str>;

/// Deepest nesting of objects and arrays a document may have, counting the document itself:
/// `{}` is 1 level, `{"a":[1]}` 2. A deeper document is refused at every write path, with an
/// error naming this limit and where it is crossed, so that everything stored can be parsed back
/// (by the engine's own parses and by recursive readers such as JavaScript's) without running
/// out of stack. serde_json's default recursion limit is the same 128.
pub const MAX_DOCUMENT_DEPTH: usize = 128;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocFormat {
    /// One JSON object per line; blank lines are skipped (and still counted in indexes).
    Ndjson,
    /// One JSON array of objects.
    JsonArray,
}

#[derive(Debug)]
pub(crate) enum PreparedDoc {
    Ok { index: u64, key: Key, json: Arc<str>, generated: bool },
    Err { index: u64, message: String },
}

/// A parsed batch for one table's primary key.
#[derive(Debug)]
pub struct PreparedDocs {
    pub(crate) primary_key: String,
    pub(crate) docs: Vec<PreparedDoc>,
}

impl PreparedDoc {
    /// The document's JSON length; 0 for a document that failed.
    pub(crate) fn json_len(&self) -> usize {
        match self {
            PreparedDoc::Ok { json, .. } => json.len(),
            PreparedDoc::Err { .. } => 0,
        }
    }
}

impl PreparedDocs {
    /// Parses `bytes` for a table whose primary key is `primary_key`.
    pub fn parse(bytes: &[u8], format: DocFormat, primary_key: &str) -> Result<PreparedDocs> {
        let mut docs = Vec::new();
        match format {
            DocFormat::Ndjson => {
                let mut start = 0;
                let ends = memchr::memchr_iter(b'\n', bytes).chain(std::iter::once(bytes.len()));
                for (index, end) in ends.enumerate() {
                    let line = bytes[start..end].trim_ascii();
                    start = end + 1;
                    if !line.is_empty() {
                        docs.push(prepare_one(index as u64, line, primary_key));
                    }
                }
            }
            DocFormat::JsonArray => {
                let items: Vec<&RawValue> = serde_json::from_slice(bytes).map_err(|e| {
                    Error::new(
                        ErrorCode::MalformedJson,
                        format!("invalid JSON array at line {} column {}: {e}", e.line(), e.column()),
                    )
                })?;
                for (index, item) in items.into_iter().enumerate() {
                    docs.push(prepare_one(index as u64, item.get().as_bytes(), primary_key));
                }
            }
        }
        Ok(PreparedDocs { primary_key: primary_key.to_string(), docs })
    }

    pub fn len(&self) -> usize {
        self.docs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }
}

fn prepare_one(index: u64, text: &[u8], primary_key: &str) -> PreparedDoc {
    let err = |message: String| PreparedDoc::Err { index, message };
    let text = match std::str::from_utf8(text) {
        Ok(t) => t,
        Err(e) => return err(format!("invalid UTF-8 at byte {}", e.valid_up_to())),
    };
    let mut de = serde_json::Deserializer::from_str(text);
    // `Skip` counts the depth itself, so serde_json's own limit (which would refuse a document
    // of exactly MAX_DOCUMENT_DEPTH levels) is off; nothing recurses deeper than the limit.
    de.disable_recursion_limit();
    let found = match (KeyProbe { primary_key }).deserialize(&mut de).and_then(|k| de.end().map(|_| k)) {
        Ok(found) => found,
        Err(e) if e.is_data() && e.to_string().starts_with(TOO_DEEP) => {
            return err(format!("{TOO_DEEP} (at column {})", e.column()))
        }
        Err(e) if e.is_data() => return err(e.to_string().split(" at line").next().unwrap_or("").to_string()),
        Err(e) => return err(format!("invalid JSON at column {}: {e}", e.column())),
    };
    match found {
        Some(key) => match key.checked() {
            Ok(key) => PreparedDoc::Ok { index, key, json: text.into(), generated: false },
            Err(e) => err(format!("primary key `{primary_key}`: {}", e.message)),
        },
        None => {
            let id = uuid::Uuid::new_v4().to_string();
            let body = text[1..].trim_start(); // after '{'
            let sep = if body.starts_with('}') { "" } else { "," };
            let json = format!("{{{}:\"{id}\"{sep}{body}", serde_json::to_string(primary_key).unwrap());
            PreparedDoc::Ok { index, key: Key::Str(id.into()), json: json.into(), generated: true }
        }
    }
}

const TOO_DEEP: &str = "document is nested deeper than the limit of 128 levels of objects and arrays";

/// Parses a stored document into a `Value` for the engine's own use (index fields, merges).
/// Documents are at most [`MAX_DOCUMENT_DEPTH`] deep when written; one stored before the limit
/// existed that is deeper is refused here by a scan that does not recurse, never parsed.
pub(crate) fn parse_value(text: &str) -> Option<serde_json::Value> {
    if depth_exceeds(text.as_bytes(), MAX_DOCUMENT_DEPTH) {
        return None;
    }
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let value = serde::Deserialize::deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(value)
}

/// Whether objects and arrays nest deeper than `max` in `text` (outside strings).
fn depth_exceeds(text: &[u8], max: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in text {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// Validates a value inside a document without building it, counting its depth: `depth` is
/// the level of the object or array holding it (the document itself is level 1). Strings and
/// numbers are parsed as a `serde_json::Value` would parse them (serde's `IgnoredAny` lets
/// through a lone UTF-16 surrogate escape and a number beyond f64): the engine reads stored
/// documents back as `Value`s (indexes, updates), and a document that could not be read so would
/// be accepted, then silently left out of its indexes.
struct Skip {
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Skip {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Skip {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let inner = Skip { depth: self.depth + 1 };
        if inner.depth > MAX_DOCUMENT_DEPTH {
            return Err(de::Error::custom(TOO_DEEP));
        }
        while seq.next_element_seed(Skip { depth: inner.depth })?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let inner = self.depth + 1;
        if inner > MAX_DOCUMENT_DEPTH {
            return Err(de::Error::custom(TOO_DEEP));
        }
        while map.next_key::<IgnoredAny>()?.is_some() {
            map.next_value_seed(Skip { depth: inner })?;
        }
        Ok(())
    }
}

/// Deserializes a document just far enough to validate it and pull out its primary key.
struct KeyProbe<'a> {
    primary_key: &'a str,
}

impl<'de> DeserializeSeed<'de> for KeyProbe<'_> {
    type Value = Option<Key>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

fn kind_of(unexp: de::Unexpected) -> &'static str {
    match unexp {
        de::Unexpected::Bool(_) => "boolean",
        de::Unexpected::Seq => "array",
        de::Unexpected::Str(_) => "string",
        de::Unexpected::Unit => "null",
        _ => "number",
    }
}

macro_rules! not_an_object {
    ($name:ident, $t:ty, $unexp:expr) => {
        fn $name<E: de::Error>(self, _v: $t) -> Result<Self::Value, E> {
            Err(E::custom(format!("document must be a JSON object, got {}", kind_of($unexp))))
        }
    };
}

impl<'de> Visitor<'de> for KeyProbe<'_> {
    type Value = Option<Key>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    not_an_object!(visit_bool, bool, de::Unexpected::Bool(false));
    not_an_object!(visit_i64, i64, de::Unexpected::Signed(0));
    not_an_object!(visit_u64, u64, de::Unexpected::Unsigned(0));
    not_an_object!(visit_f64, f64, de::Unexpected::Float(0.0));
    not_an_object!(visit_str, &str, de::Unexpected::Str(""));
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Err(E::custom("document must be a JSON object, got null"))
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, _seq: A) -> Result<Self::Value, A::Error> {
        Err(de::Error::custom("document must be a JSON object, got array"))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut key = None;
        while let Some(is_key) = map.next_key_seed(IsPrimaryKey(self.primary_key))? {
            if is_key {
                key = Some(map.next_value_seed(KeyValue { primary_key: self.primary_key })?);
            } else {
                map.next_value_seed(Skip { depth: 1 })?;
            }
        }
        Ok(key)
    }
}

/// Compares a field name with the primary key without allocating it (serde's `Cow<str>` would).
struct IsPrimaryKey<'a>(&'a str);

impl<'de> DeserializeSeed<'de> for IsPrimaryKey<'_> {
    type Value = bool;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for IsPrimaryKey<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        Ok(v == self.0)
    }
}

struct KeyValue<'a> {
    primary_key: &'a str,
}

impl<'de> DeserializeSeed<'de> for KeyValue<'_> {
    type Value = Key;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KeyValue<'_> {
    type Value = Key;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "primary key `{}` as a string, a number, a boolean, an array, a time or binary", self.primary_key)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
        Ok(Key::Str(v.into()))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Key, E> {
        Ok(Key::Num(v as f64))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Key, E> {
        Ok(Key::Num(v as f64))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Key, E> {
        Ok(Key::Num(v))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Key, E> {
        self.datum(serde_json::Value::Bool(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Key, E> {
        Err(self.wrong("null"))
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Key, A::Error> {
        use serde::Deserialize;
        self.datum(serde_json::Value::deserialize(de::value::SeqAccessDeserializer::new(seq))?)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Key, A::Error> {
        use serde::Deserialize;
        self.datum(serde_json::Value::deserialize(de::value::MapAccessDeserializer::new(map))?)
    }
}

impl KeyValue<'_> {
    /// A key that is neither a string nor a number (an array, a boolean, a time, binary).
    fn datum<E: de::Error>(&self, v: serde_json::Value) -> Result<Key, E> {
        Key::from_value(&v).map_err(|why| E::custom(format!("primary key `{}`: {why}", self.primary_key)))
    }

    fn wrong<E: de::Error>(&self, got: &str) -> E {
        E::custom(format!("primary key `{}` must be a string or a number, got {got}", self.primary_key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(docs: &PreparedDocs) -> Vec<(u64, String)> {
        docs.docs
            .iter()
            .filter_map(|d| match d {
                PreparedDoc::Err { index, message } => Some((*index, message.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn ndjson_indexes_count_blank_lines_and_report_each_bad_document() {
        let input = b"{\"id\":1}\n\n[1,2]\n{\"id\":null}\n{\"id\":\nnot json\n{\"x\":1}\n";
        let docs = PreparedDocs::parse(input, DocFormat::Ndjson, "id").unwrap();
        let errs = errors(&docs);
        assert_eq!(errs.iter().map(|e| e.0).collect::<Vec<_>>(), vec![2, 3, 4, 5]);
        assert_eq!(errs[0].1, "document must be a JSON object, got array");
        assert_eq!(errs[1].1, "primary key `id` must be a string or a number, got null");
        assert!(errs[2].1.starts_with("invalid JSON"), "{}", errs[2].1);
        assert_eq!(docs.len(), 6);
    }

    /// Found by the `doc` fuzz target (`fuzz/corpus/doc/regression-lone-surrogate`): fields
    /// other than the key were skipped unchecked, so a document the engine cannot read back as
    /// JSON (indexes and updates parse it) was accepted.
    #[test]
    fn every_field_must_be_json_the_engine_can_read_back() {
        let input = b"{\"id\":1,\"s\":\"\\ud800\"}\n{\"id\":2,\"n\":[1e400]}\n{\"id\":3,\"o\":{\"k\":\"\\ud83d\\ude00\",\"n\":-1.5e300}}\n";
        let docs = PreparedDocs::parse(input, DocFormat::Ndjson, "id").unwrap();
        let errs = errors(&docs);
        assert_eq!(errs.iter().map(|e| e.0).collect::<Vec<_>>(), vec![0, 1], "{errs:?}");
        assert!(errs[0].1.contains("hex escape") && errs[0].1.contains("column 20"), "{}", errs[0].1);
        assert!(errs[1].1.contains("number out of range") && errs[1].1.contains("column"), "{}", errs[1].1);
        let PreparedDoc::Ok { json, .. } = &docs.docs[2] else { panic!("{:?}", docs.docs[2]) };
        assert!(serde_json::from_str::<serde_json::Value>(json).is_ok());
    }

    #[test]
    fn arrays_booleans_times_and_binary_are_keys_other_objects_are_not() {
        let input = br#"{"id":[1,"a"]}
{"id":true}
{"id":{"$reql_type$":"TIME","epoch_time":1.5,"timezone":"+01:00"}}
{"id":{"$reql_type$":"BINARY","data":"AAE="}}
{"id":{"a":1}}
{"id":[null]}"#;
        let docs = PreparedDocs::parse(input, DocFormat::Ndjson, "id").unwrap();
        let keys: Vec<String> = docs
            .docs
            .iter()
            .filter_map(|d| match d {
                PreparedDoc::Ok { key, .. } => Some(key.to_json()),
                _ => None,
            })
            .collect();
        assert_eq!(
            keys,
            [
                r#"[1,"a"]"#,
                "true",
                r#"{"$reql_type$":"TIME","epoch_time":1.5,"timezone":"+00:00"}"#,
                r#"{"$reql_type$":"BINARY","data":"AAE="}"#
            ]
        );
        let errs = errors(&docs);
        assert_eq!(errs.iter().map(|e| e.0).collect::<Vec<_>>(), vec![4, 5]);
        assert!(errs[0].1.contains("primary key `id`: a key cannot be an object"), "{}", errs[0].1);
    }

    #[test]
    fn generated_keys_are_spliced_into_the_text() {
        let docs = PreparedDocs::parse(b"{\"x\": 1}\n{}", DocFormat::Ndjson, "id").unwrap();
        for d in &docs.docs {
            let PreparedDoc::Ok { key, json, generated, .. } = d else { panic!("{d:?}") };
            assert!(generated);
            let v: serde_json::Value = serde_json::from_str(json).unwrap();
            assert_eq!(
                v["id"].as_str().unwrap(),
                match key {
                    Key::Str(s) => &**s,
                    _ => panic!(),
                }
            );
        }
    }

    #[test]
    fn json_array_elements_are_documents() {
        let docs = PreparedDocs::parse(b"[{\"id\":\"a\"}, 5, {\"id\":2.5}]", DocFormat::JsonArray, "id").unwrap();
        assert_eq!(errors(&docs), vec![(1, "document must be a JSON object, got number".to_string())]);
        assert!(PreparedDocs::parse(b"[{\"id\":1},", DocFormat::JsonArray, "id").is_err());
    }
}

#[cfg(test)]
mod depth_tests {
    use super::*;

    fn nested(depth: usize) -> String {
        // The document is level 1; each `{"a":` adds one; the innermost holds an array.
        let mut s = String::from("{\"id\":1,\"a\":");
        s += &"{\"a\":".repeat(depth.saturating_sub(2));
        s += "[1]";
        s += &"}".repeat(depth.saturating_sub(2));
        s += "}";
        s
    }

    #[test]
    fn documents_up_to_the_limit_are_accepted_and_parse_back_deeper_ones_are_refused() {
        for depth in [2, 64, MAX_DOCUMENT_DEPTH - 1, MAX_DOCUMENT_DEPTH] {
            let text = nested(depth);
            assert!(!depth_exceeds(text.as_bytes(), MAX_DOCUMENT_DEPTH) && depth_exceeds(text.as_bytes(), depth - 1));
            let docs = PreparedDocs::parse(text.as_bytes(), DocFormat::Ndjson, "id").unwrap();
            assert!(matches!(&docs.docs[0], PreparedDoc::Ok { .. }), "depth {depth}: {:?}", docs.docs[0]);
            assert!(parse_value(&text).is_some(), "depth {depth} parses back");
        }
        for (depth, line) in [(MAX_DOCUMENT_DEPTH + 1, 0u64), (10_000, 1)] {
            let input = if line == 0 { nested(depth) } else { format!("{{\"id\":0}}\n{}", nested(depth)) };
            let docs = PreparedDocs::parse(input.as_bytes(), DocFormat::Ndjson, "id").unwrap();
            let PreparedDoc::Err { index, message } = docs.docs.last().unwrap() else {
                panic!("depth {depth} accepted")
            };
            assert_eq!(*index, line);
            assert!(message.starts_with("document is nested deeper than the limit of 128 levels"), "{message}");
            // Where: the column of the first bracket past the limit.
            let column = nested(depth).match_indices(['{', '[']).nth(MAX_DOCUMENT_DEPTH).unwrap().0 + 1;
            assert!(message.ends_with(&format!("(at column {column})")), "{message}, expected column {column}");
            assert!(parse_value(&nested(depth)).is_none());
        }
        // In a JSON array, the element is refused alone, by its index.
        let array = format!("[{{\"id\":1}},{},{{\"id\":3}}]", nested(10_000));
        let docs = PreparedDocs::parse(array.as_bytes(), DocFormat::JsonArray, "id").unwrap();
        assert_eq!(docs.len(), 3);
        assert!(matches!(&docs.docs[1], PreparedDoc::Err { index: 1, message } if message.contains("128 levels")));
        assert!(matches!(&docs.docs[2], PreparedDoc::Ok { .. }));
        // Brackets inside strings are not nesting.
        let text = format!("{{\"id\":1,\"s\":\"{}\\\"{}\"}}", "[".repeat(500), "{".repeat(500));
        assert!(matches!(
            &PreparedDocs::parse(text.as_bytes(), DocFormat::Ndjson, "id").unwrap().docs[0],
            PreparedDoc::Ok { .. }
        ));
        assert!(parse_value(&text).is_some());
    }
}
