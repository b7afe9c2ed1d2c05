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

use crate::error::{Error, Result};
use crate::key::Key;

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
                    Error::invalid(format!(
                        "invalid JSON array at line {} column {}: {e}",
                        e.line(),
                        e.column()
                    ))
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
    let found = match (KeyProbe { primary_key }).deserialize(&mut de).and_then(|k| de.end().map(|_| k)) {
        Ok(found) => found,
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
                map.next_value::<Checked>()?;
            }
        }
        Ok(key)
    }
}

/// Any JSON value, skipped but checked as a `serde_json::Value` would be (serde's `IgnoredAny`
/// lets through what `Value` refuses: a lone UTF-16 surrogate escape, a number beyond f64).
/// The engine reads stored documents back as `Value`s (indexes, updates): a document that could
/// not be read so would be accepted, then silently left out of its indexes.
struct Checked;

impl<'de> de::Deserialize<'de> for Checked {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Checked, D::Error> {
        d.deserialize_any(Checked)
    }
}

impl<'de> Visitor<'de> for Checked {
    type Value = Checked;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
        while seq.next_element::<Checked>()?.is_some() {}
        Ok(Checked)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
        while map.next_key::<IgnoredAny>()?.is_some() {
            map.next_value::<Checked>()?;
        }
        Ok(Checked)
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
        write!(f, "primary key `{}` as a string or a number", self.primary_key)
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
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Key, E> {
        Err(self.wrong("boolean"))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Key, E> {
        Err(self.wrong("null"))
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, _: A) -> Result<Key, A::Error> {
        Err(self.wrong("array"))
    }
    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<Key, A::Error> {
        Err(self.wrong("object"))
    }
}

impl KeyValue<'_> {
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
        let input = b"{\"id\":1}\n\n[1,2]\n{\"id\":true}\n{\"id\":\nnot json\n{\"x\":1}\n";
        let docs = PreparedDocs::parse(input, DocFormat::Ndjson, "id").unwrap();
        let errs = errors(&docs);
        assert_eq!(errs.iter().map(|e| e.0).collect::<Vec<_>>(), vec![2, 3, 4, 5]);
        assert_eq!(errs[0].1, "document must be a JSON object, got array");
        assert_eq!(errs[1].1, "primary key `id` must be a string or a number, got boolean");
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
    fn generated_keys_are_spliced_into_the_text() {
        let docs = PreparedDocs::parse(b"{\"x\": 1}\n{}", DocFormat::Ndjson, "id").unwrap();
        for d in &docs.docs {
            let PreparedDoc::Ok { key, json, generated, .. } = d else { panic!("{d:?}") };
            assert!(generated);
            let v: serde_json::Value = serde_json::from_str(json).unwrap();
            assert_eq!(v["id"].as_str().unwrap(), match key { Key::Str(s) => &**s, _ => panic!() });
        }
    }

    #[test]
    fn json_array_elements_are_documents() {
        let docs = PreparedDocs::parse(b"[{\"id\":\"a\"}, 5, {\"id\":2.5}]", DocFormat::JsonArray, "id").unwrap();
        assert_eq!(errors(&docs), vec![(1, "document must be a JSON object, got number".to_string())]);
        assert!(PreparedDocs::parse(b"[{\"id\":1},", DocFormat::JsonArray, "id").is_err());
    }
}
