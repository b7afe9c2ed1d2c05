//! Filter predicates evaluated on stored documents, so a ReQL `filter` with a simple predicate
//! runs in the engine's scan instead of building every document in JavaScript.
//!
//! A predicate is a small tree: comparisons of a field path with a constant (`eq ne lt le gt
//! ge`), ReQL's object-subset match (`filter({a: 1, b: {c: 'x'}})`), and `and`, `or`, `not`.
//! Its answers follow the server's JS evaluator exactly; where that evaluator would do more
//! than answer true or false (raise an error, call a `default` function, look inside an array
//! or a pseudo-type), the engine answers [`Verdict::Defer`] and the caller evaluates that one
//! document in JS. So a pushed-down filter gives the JS path's results whatever the documents.
//!
//! The rules, each the JS evaluator's:
//! - Values order across types as RethinkDB does: arrays < BINARY < booleans < null < numbers
//!   < objects < pseudo-types (TIME…) < strings; numbers compare as doubles, strings by code
//!   point (UTF-8 bytes). Constants are scalars (null, booleans, numbers, strings), so only a
//!   field value of the same type compares by value.
//! - A field path walks plain objects (objects without `$reql_type$`). A missing field is ReQL's
//!   non-existence error: the filter's `default` decides ([`OnMissing`]). Anything else on the
//!   path (an array, a pseudo-type, null, a scalar) defers to JS, which raises or maps as ReQL does.
//! - `and` and `or` stop at the first false (true) operand; an error in an operand before that
//!   is the whole predicate's error, as in JS.

use serde_json::Value;

use crate::error::{Error, Result};

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// A constant a field is compared with.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
}

/// One field of an object-subset match: the value wanted, or a nested object to match.
#[derive(Debug, Clone, PartialEq)]
pub enum Want {
    Value(Scalar),
    Object(Vec<(String, Want)>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Predicate {
    /// The field at `path` compared with `value` (field on the left).
    Cmp {
        path: Vec<String>,
        op: CmpOp,
        value: Scalar,
    },
    /// Every field of `fields`, in order, is present with an equal value (nested objects match
    /// recursively): ReQL's `filter(object)`.
    Match {
        fields: Vec<(String, Want)>,
    },
    And(Vec<Predicate>),
    Or(Vec<Predicate>),
    Not(Box<Predicate>),
}

/// What a missing field makes of the row, from the filter's `default` optarg.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnMissing {
    /// No default, or a falsy constant: the row does not match.
    Skip,
    /// A truthy constant (`default: true`): the row matches.
    Keep,
    /// Anything else (a function, `r.error()`): the caller evaluates the row.
    Defer,
}

/// A predicate and what a missing field means.
#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    pub predicate: Predicate,
    pub on_missing: OnMissing,
    /// The top-level fields the predicate reads (the only ones `verdict` parses).
    fields: Vec<String>,
}

/// The engine's answer for one document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Match,
    NoMatch,
    /// The caller must evaluate this document itself (see the module's rules).
    Defer,
}

/// An evaluation that did not give a boolean.
enum Stop {
    Missing,
    Defer,
}

/// Longest nesting of predicates accepted (deeper specs are refused, bounding the recursion).
const MAX_DEPTH: usize = 64;

impl Filter {
    /// The verdict for one stored document's JSON text. Only the top-level fields the predicate
    /// reads are parsed into values: the others are skipped over as text (stored documents are
    /// valid JSON), unless a field name has an escape, when the whole document is parsed. A
    /// document that does not parse (never the case for stored ones) defers.
    pub fn verdict(&self, doc: &str) -> Verdict {
        let mut found: Vec<Option<&str>> = vec![None; self.fields.len() + 1];
        if top_level_fields(doc, &self.fields, &mut found).is_some() {
            let mut partial = serde_json::Map::new();
            let names = self.fields.iter().map(String::as_str).chain(["$reql_type$"]);
            for (name, raw) in names.zip(&found) {
                if let Some(raw) = raw {
                    match serde_json::from_str::<Value>(raw) {
                        Ok(v) => partial.insert(name.to_string(), v),
                        Err(_) => return Verdict::Defer,
                    };
                }
            }
            return self.verdict_value(&Value::Object(partial));
        }
        match serde_json::from_str::<Value>(doc) {
            Ok(v) => self.verdict_value(&v),
            Err(_) => Verdict::Defer,
        }
    }

    pub fn verdict_value(&self, doc: &Value) -> Verdict {
        match eval(&self.predicate, doc) {
            Ok(true) => Verdict::Match,
            Ok(false) => Verdict::NoMatch,
            Err(Stop::Defer) => Verdict::Defer,
            Err(Stop::Missing) => match self.on_missing {
                OnMissing::Skip => Verdict::NoMatch,
                OnMissing::Keep => Verdict::Match,
                OnMissing::Defer => Verdict::Defer,
            },
        }
    }

    /// Reads a filter spec: `{"predicate": P, "missing": "skip" | "keep" | "defer"}`, where P is
    /// `{"cmp": "eq"|"ne"|"lt"|"le"|"gt"|"ge", "path": [names], "value": scalar}`,
    /// `{"match": [[name, scalar | {"match": [...]}], ...]}`, `{"and": [P...]}`, `{"or": [P...]}`
    /// or `{"not": P}`. Errors name the part of the spec at fault.
    pub fn from_json(spec: &Value) -> Result<Filter> {
        let obj = spec.as_object().ok_or_else(|| bad("filter", "an object {predicate, missing}", spec))?;
        let predicate = predicate(obj.get("predicate").unwrap_or(&Value::Null), "filter.predicate", 0)?;
        let on_missing = match obj.get("missing").and_then(Value::as_str) {
            Some("skip") | None => OnMissing::Skip,
            Some("keep") => OnMissing::Keep,
            Some("defer") => OnMissing::Defer,
            Some(_) => return Err(bad("filter.missing", "\"skip\", \"keep\" or \"defer\"", &obj["missing"])),
        };
        Ok(Filter::new(predicate, on_missing))
    }

    pub fn new(predicate: Predicate, on_missing: OnMissing) -> Filter {
        fn top_fields(p: &Predicate, out: &mut Vec<String>) {
            match p {
                Predicate::Cmp { path, .. } => out.extend(path.first().cloned()),
                Predicate::Match { fields } => out.extend(fields.iter().map(|(name, _)| name.clone())),
                Predicate::And(items) | Predicate::Or(items) => items.iter().for_each(|i| top_fields(i, out)),
                Predicate::Not(inner) => top_fields(inner, out),
            }
        }
        let mut fields = Vec::new();
        top_fields(&predicate, &mut fields);
        fields.sort();
        fields.dedup();
        Filter { predicate, on_missing, fields }
    }
}

fn bad(at: &str, expected: &str, got: &Value) -> Error {
    let mut text = got.to_string();
    if text.len() > 80 {
        let mut cut = 80;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    Error::invalid(format!("{at}: expected {expected}; got {text}"))
}

fn predicate(v: &Value, at: &str, depth: usize) -> Result<Predicate> {
    if depth > MAX_DEPTH {
        return Err(Error::invalid(format!("{at}: predicates nest deeper than {MAX_DEPTH} levels")));
    }
    let obj = v.as_object().filter(|o| o.len() <= 3).ok_or_else(|| bad(at, "a predicate object", v))?;
    if let Some(op) = obj.get("cmp") {
        let op = match op.as_str() {
            Some("eq") => CmpOp::Eq,
            Some("ne") => CmpOp::Ne,
            Some("lt") => CmpOp::Lt,
            Some("le") => CmpOp::Le,
            Some("gt") => CmpOp::Gt,
            Some("ge") => CmpOp::Ge,
            _ => return Err(bad(&format!("{at}.cmp"), "eq, ne, lt, le, gt or ge", op)),
        };
        let path_value = obj.get("path").unwrap_or(&Value::Null);
        let path = path_value
            .as_array()
            .and_then(|p| p.iter().map(|s| s.as_str().map(str::to_string)).collect::<Option<Vec<_>>>())
            .filter(|p| !p.is_empty())
            .ok_or_else(|| bad(&format!("{at}.path"), "a non-empty array of field names", path_value))?;
        let value = scalar(obj.get("value").unwrap_or(&Value::Null), &format!("{at}.value"))?;
        return Ok(Predicate::Cmp { path, op, value });
    }
    if let Some(fields) = obj.get("match") {
        return Ok(Predicate::Match { fields: match_fields(fields, &format!("{at}.match"), depth)? });
    }
    let list = |key: &str| -> Result<Vec<Predicate>> {
        let items =
            obj[key].as_array().ok_or_else(|| bad(&format!("{at}.{key}"), "an array of predicates", &obj[key]))?;
        items.iter().enumerate().map(|(i, p)| predicate(p, &format!("{at}.{key}[{i}]"), depth + 1)).collect()
    };
    if obj.contains_key("and") {
        return Ok(Predicate::And(list("and")?));
    }
    if obj.contains_key("or") {
        return Ok(Predicate::Or(list("or")?));
    }
    if let Some(inner) = obj.get("not") {
        return Ok(Predicate::Not(Box::new(predicate(inner, &format!("{at}.not"), depth + 1)?)));
    }
    Err(bad(at, "one of cmp, match, and, or, not", v))
}

fn match_fields(v: &Value, at: &str, depth: usize) -> Result<Vec<(String, Want)>> {
    if depth > MAX_DEPTH {
        return Err(Error::invalid(format!("{at}: objects nest deeper than {MAX_DEPTH} levels")));
    }
    let items = v.as_array().ok_or_else(|| bad(at, "an array of [name, value] pairs", v))?;
    items
        .iter()
        .enumerate()
        .map(|(i, pair)| {
            let here = format!("{at}[{i}]");
            let (name, want) = match pair.as_array().map(Vec::as_slice) {
                Some([Value::String(name), want]) => (name.clone(), want),
                _ => return Err(bad(&here, "a [name, value] pair", pair)),
            };
            let want = match want.as_object().and_then(|o| o.get("match")) {
                Some(nested) => Want::Object(match_fields(nested, &format!("{here}.match"), depth + 1)?),
                None => Want::Value(scalar(want, &here)?),
            };
            Ok((name, want))
        })
        .collect()
}

fn scalar(v: &Value, at: &str) -> Result<Scalar> {
    Ok(match v {
        Value::Null => Scalar::Null,
        Value::Bool(b) => Scalar::Bool(*b),
        Value::Number(n) => Scalar::Num(n.as_f64().ok_or_else(|| bad(at, "a finite number", v))?),
        Value::String(s) => Scalar::Str(s.clone()),
        _ => return Err(bad(at, "a constant: null, a boolean, a number or a string", v)),
    })
}

/// Finds, in a JSON object's text, the raw text of the top-level fields named in `wanted`
/// (`found[i]` for `wanted[i]`) and of `$reql_type$` (`found[wanted.len()]`); a name given twice
/// takes its last value, as JSON.parse does. Values are skipped without being checked (stored
/// documents are valid JSON). `None` when the text is not an object as expected or a name has an
/// escape: the caller parses the whole document then.
fn top_level_fields<'a>(doc: &'a str, wanted: &[String], found: &mut [Option<&'a str>]) -> Option<()> {
    let b = doc.as_bytes();
    let ws = |i: &mut usize| {
        while *i < b.len() && matches!(b[*i], b' ' | b'\t' | b'\n' | b'\r') {
            *i += 1;
        }
    };
    // The index just past the string starting at `i` (on its opening quote).
    let string_end = |mut i: usize| -> Option<usize> {
        i += 1;
        loop {
            match *b.get(i)? {
                b'"' => return Some(i + 1),
                b'\\' => i += 2,
                _ => i += 1,
            }
        }
    };
    let mut i = 0;
    ws(&mut i);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    loop {
        ws(&mut i);
        match *b.get(i)? {
            b'}' => return Some(()),
            b'"' => {}
            _ => return None,
        }
        let end = string_end(i)?;
        let name = &doc[i + 1..end - 1];
        if name.contains('\\') {
            return None;
        }
        i = end;
        ws(&mut i);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i += 1;
        ws(&mut i);
        let start = i;
        match *b.get(i)? {
            b'"' => i = string_end(i)?,
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match *b.get(i)? {
                        b'"' => {
                            i = string_end(i)?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                i += 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
            }
            _ => {
                while i < b.len() && !matches!(b[i], b',' | b'}' | b' ' | b'\t' | b'\n' | b'\r') {
                    i += 1;
                }
            }
        }
        let value = &doc[start..i];
        if name == "$reql_type$" {
            found[wanted.len()] = Some(value);
        } else if let Ok(at) = wanted.binary_search_by(|w| w.as_str().cmp(name)) {
            found[at] = Some(value);
        }
        ws(&mut i);
        match *b.get(i)? {
            b',' => i += 1,
            b'}' => return Some(()),
            _ => return None,
        }
    }
}

/// A plain object: a JSON object that is not a ReQL pseudo-type.
fn plain_object(v: &Value) -> Option<&serde_json::Map<String, Value>> {
    v.as_object().filter(|o| !o.contains_key("$reql_type$"))
}

fn eval(p: &Predicate, doc: &Value) -> std::result::Result<bool, Stop> {
    match p {
        Predicate::Cmp { path, op, value } => {
            let mut v = doc;
            for name in path {
                v = plain_object(v).ok_or(Stop::Defer)?.get(name).ok_or(Stop::Missing)?;
            }
            let order = compare(v, value);
            Ok(match op {
                CmpOp::Eq => order == std::cmp::Ordering::Equal,
                CmpOp::Ne => order != std::cmp::Ordering::Equal,
                CmpOp::Lt => order == std::cmp::Ordering::Less,
                CmpOp::Le => order != std::cmp::Ordering::Greater,
                CmpOp::Gt => order == std::cmp::Ordering::Greater,
                CmpOp::Ge => order != std::cmp::Ordering::Less,
            })
        }
        Predicate::Match { fields } => match_object(fields, doc),
        Predicate::And(items) => {
            for item in items {
                if !eval(item, doc)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        Predicate::Or(items) => {
            for item in items {
                if eval(item, doc)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        Predicate::Not(inner) => Ok(!eval(inner, doc)?),
    }
}

/// ReQL's object-subset match; a row that is not a plain object is the JS evaluator's type error.
fn match_object(fields: &[(String, Want)], row: &Value) -> std::result::Result<bool, Stop> {
    let row = plain_object(row).ok_or(Stop::Defer)?;
    for (name, want) in fields {
        let have = row.get(name).ok_or(Stop::Missing)?;
        let matched = match want {
            Want::Object(nested) => match_object(nested, have)?,
            Want::Value(value) => compare(have, value) == std::cmp::Ordering::Equal,
        };
        if !matched {
            return Ok(false);
        }
    }
    Ok(true)
}

/// RethinkDB's rank of a value's type in its order of values.
fn rank(v: &Value) -> u8 {
    match v {
        Value::Array(_) => 1,
        Value::Bool(_) => 3,
        Value::Null => 4,
        Value::Number(_) => 5,
        Value::String(_) => 8,
        Value::Object(o) => match o.get("$reql_type$").and_then(Value::as_str) {
            Some("MINVAL") => 0,
            Some("BINARY") => 2,
            Some("MAXVAL") => 9,
            Some(_) => 7,
            None => 6,
        },
    }
}

fn scalar_rank(s: &Scalar) -> u8 {
    match s {
        Scalar::Bool(_) => 3,
        Scalar::Null => 4,
        Scalar::Num(_) => 5,
        Scalar::Str(_) => 8,
    }
}

/// The order of a document's value relative to a constant, as the JS evaluator's
/// `compareDatums` gives it.
fn compare(v: &Value, c: &Scalar) -> std::cmp::Ordering {
    use std::cmp::Ordering::*;
    let (rv, rc) = (rank(v), scalar_rank(c));
    if rv != rc {
        return rv.cmp(&rc);
    }
    match (v, c) {
        (Value::Bool(a), Scalar::Bool(b)) => a.cmp(b),
        (Value::Null, Scalar::Null) => Equal,
        (Value::Number(a), Scalar::Num(b)) => {
            let a = a.as_f64().unwrap_or(f64::NAN);
            if a < *b {
                Less
            } else if a > *b {
                Greater
            } else {
                Equal
            }
        }
        (Value::String(a), Scalar::Str(b)) => a.as_bytes().cmp(b.as_bytes()),
        _ => Equal, // same rank means same type
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn filter(spec: Value) -> Filter {
        Filter::from_json(&spec).unwrap()
    }

    #[test]
    fn comparisons_order_values_across_types_as_rethinkdb() {
        // Each value is below every later one.
        let ordered = [
            json!([1]),
            json!({"$reql_type$": "BINARY", "data": ""}),
            json!(false),
            json!(true),
            json!(null),
            json!(-1e300),
            json!(-0.5),
            json!(0),
            json!(2),
            json!({"a": 1}),
            json!({"$reql_type$": "TIME", "epoch_time": 0, "timezone": "+00:00"}),
            json!(""),
            json!("a"),
            json!("é"),
            json!("\u{1F600}"),
        ];
        let constants =
            [json!(false), json!(true), json!(null), json!(-0.5), json!(0), json!(2), json!("a"), json!("é")];
        for c in &constants {
            let ci = ordered.iter().position(|v| v == c).unwrap();
            for (vi, v) in ordered.iter().enumerate() {
                let doc = json!({ "f": v });
                for (op, holds) in [
                    ("eq", vi == ci),
                    ("ne", vi != ci),
                    ("lt", vi < ci),
                    ("le", vi <= ci),
                    ("gt", vi > ci),
                    ("ge", vi >= ci),
                ] {
                    let f = filter(json!({"predicate": {"cmp": op, "path": ["f"], "value": c}}));
                    let want = if holds { Verdict::Match } else { Verdict::NoMatch };
                    assert_eq!(f.verdict_value(&doc), want, "{v} {op} {c}");
                }
            }
        }
        // Numbers compare as doubles: 1 and 1.0 are equal, -0 equals 0.
        let eq1 = filter(json!({"predicate": {"cmp": "eq", "path": ["f"], "value": 1}}));
        assert_eq!(eq1.verdict(r#"{"f":1.0}"#), Verdict::Match);
        let eq0 = filter(json!({"predicate": {"cmp": "eq", "path": ["f"], "value": 0}}));
        assert_eq!(eq0.verdict(r#"{"f":-0.0}"#), Verdict::Match);
    }

    #[test]
    fn missing_fields_follow_the_default_and_odd_paths_defer() {
        let spec = |missing: &str| {
            filter(json!({"predicate": {"cmp": "gt", "path": ["a", "b"], "value": 1}, "missing": missing}))
        };
        for (missing, want) in [("skip", Verdict::NoMatch), ("keep", Verdict::Match), ("defer", Verdict::Defer)] {
            assert_eq!(spec(missing).verdict(r#"{"x":1}"#), want);
            assert_eq!(spec(missing).verdict(r#"{"a":{}}"#), want);
            // Not a plain object on the path: JS raises or maps; the engine defers whatever the default.
            for doc in [r#"{"a":[{"b":2}]}"#, r#"{"a":null}"#, r#"{"a":3}"#, r#"{"a":{"$reql_type$":"TIME","b":2}}"#] {
                assert_eq!(spec(missing).verdict(doc), Verdict::Defer, "{doc}");
            }
            assert_eq!(spec(missing).verdict(r#"{"a":{"b":2}}"#), Verdict::Match);
        }
    }

    #[test]
    fn and_or_stop_at_their_first_deciding_operand() {
        let a_is_1 = json!({"cmp": "eq", "path": ["a"], "value": 1});
        let b_is_1 = json!({"cmp": "eq", "path": ["b"], "value": 1});
        let or = filter(json!({"predicate": {"or": [a_is_1, b_is_1]}, "missing": "keep"}));
        assert_eq!(or.verdict(r#"{"a":1}"#), Verdict::Match); // b never looked at
        assert_eq!(or.verdict(r#"{"b":1}"#), Verdict::Match); // a missing: the default, not b
        let or_skip = filter(json!({"predicate": {"or": [a_is_1, b_is_1]}}));
        assert_eq!(or_skip.verdict(r#"{"b":1}"#), Verdict::NoMatch);
        let and = filter(json!({"predicate": {"and": [a_is_1, b_is_1]}, "missing": "keep"}));
        assert_eq!(and.verdict(r#"{"a":2}"#), Verdict::NoMatch);
        assert_eq!(and.verdict(r#"{"a":1}"#), Verdict::Match);
        let not = filter(json!({"predicate": {"not": a_is_1}}));
        assert_eq!(not.verdict(r#"{"a":2}"#), Verdict::Match);
        assert_eq!(not.verdict(r#"{}"#), Verdict::NoMatch); // the error wins, not its negation
        assert_eq!(filter(json!({"predicate": {"and": []}})).verdict("{}"), Verdict::Match);
        assert_eq!(filter(json!({"predicate": {"or": []}})).verdict("{}"), Verdict::NoMatch);
    }

    #[test]
    fn object_match_is_a_subset_match_with_nested_objects() {
        let f = filter(json!({"predicate": {"match": [["a", 1], ["n", {"match": [["c", "x"]]}]]}}));
        assert_eq!(f.verdict(r#"{"a":1,"n":{"c":"x","d":2},"z":0}"#), Verdict::Match);
        assert_eq!(f.verdict(r#"{"a":1,"n":{"c":"y"}}"#), Verdict::NoMatch);
        assert_eq!(f.verdict(r#"{"a":2,"n":{"c":"x"}}"#), Verdict::NoMatch);
        assert_eq!(f.verdict(r#"{"a":1}"#), Verdict::NoMatch); // missing, default skip
        assert_eq!(f.verdict(r#"{"a":1,"n":"x"}"#), Verdict::Defer); // JS's type error
                                                                     // Fields are checked in order: a mismatch before a missing field is just a mismatch.
        assert_eq!(f.verdict(r#"{"a":5}"#), Verdict::NoMatch);
        let keep = filter(json!({"predicate": {"match": [["a", 1], ["n", 2]]}, "missing": "keep"}));
        assert_eq!(keep.verdict(r#"{"a":1}"#), Verdict::Match);
        assert_eq!(keep.verdict(r#"{"a":2}"#), Verdict::NoMatch);
    }

    /// `verdict` parses only the fields it needs; it must answer as a whole parse does.
    #[test]
    fn reading_only_the_needed_fields_answers_as_the_whole_document() {
        let docs = [
            r#"{"a":1,"b":{"c":"x"},"z":[1,{"q":2}]}"#,
            r#"{"a":"1","b":{"c":"y","$reql_type$":"TIME"}}"#,
            r#"{"$reql_type$":"TIME","a":1}"#,
            r#"{"a\u0041":1,"a":2}"#, // an escaped name: the whole document is parsed
            r#"{"a":1,"a":3}"#,       // a repeated name: the last one counts, as in JS
            r#"{"b":null}"#,
            r#"{}"#,
            r#" { "a" : -1.5e3 , "s":"q\"{[}","b" : { "c" : "x\\" , "d":[{"}":1}] } , "z":true } "#,
            r#"{"s":"a\u0022b","a":2,"b":{"c":"x"}}"#,
            r#"{"arr":[[],{},"]"],"a":null,"b":{"c":["x"]}}"#,
        ];
        let specs = [
            json!({"predicate": {"cmp": "ge", "path": ["a"], "value": 2}, "missing": "keep"}),
            json!({"predicate": {"cmp": "eq", "path": ["b", "c"], "value": "x"}, "missing": "defer"}),
            json!({"predicate": {"or": [{"match": [["a", 1]]}, {"not": {"cmp": "lt", "path": ["b"], "value": 0}}]}}),
        ];
        for spec in &specs {
            let f = filter(spec.clone());
            for doc in docs {
                let whole: Value = serde_json::from_str(doc).unwrap();
                assert_eq!(f.verdict(doc), f.verdict_value(&whole), "{spec} on {doc}");
            }
        }
    }

    /// The same on random documents, compact and pretty-printed, against random predicates.
    #[test]
    fn reading_only_the_needed_fields_answers_as_the_whole_document_on_random_ones() {
        use rand::{rngs::StdRng, Rng, SeedableRng};
        fn value(rng: &mut StdRng, depth: u32) -> Value {
            let names = ["a", "b", "c", "$reql_type$", "q\"{", "é"];
            match rng.gen_range(0..if depth > 2 { 6 } else { 8 }) {
                0 => Value::Null,
                1 => json!(rng.gen_bool(0.5)),
                2 => json!(rng.gen_range(-3..4)),
                3 => json!(rng.gen_range(-2.0..2.0)),
                4 => json!(["", "a", "b", "}", "\\\"", "é"][rng.gen_range(0..6)]),
                5 => json!("TIME"),
                6 => Value::Array((0..rng.gen_range(0..3)).map(|_| value(rng, depth + 1)).collect()),
                _ => Value::Object(
                    (0..rng.gen_range(0..4))
                        .map(|_| (names[rng.gen_range(0..6)].to_string(), value(rng, depth + 1)))
                        .collect(),
                ),
            }
        }
        let mut rng = StdRng::seed_from_u64(33);
        let constants = [json!(null), json!(true), json!(0), json!(1.5), json!("a"), json!("é")];
        for _ in 0..3000 {
            let mut doc = serde_json::Map::new();
            for name in ["a", "b", "c", "$reql_type$", "z"] {
                if rng.gen_bool(0.6) {
                    doc.insert(name.to_string(), value(&mut rng, 0));
                }
            }
            let doc = Value::Object(doc);
            let path: Vec<&str> = ["a", "b", "c"][..rng.gen_range(1..3)].to_vec();
            let op = ["eq", "ne", "lt", "le", "gt", "ge"][rng.gen_range(0..6)];
            let c = &constants[rng.gen_range(0..constants.len())];
            let missing = ["skip", "keep", "defer"][rng.gen_range(0..3)];
            let f = filter(json!({"predicate": {"or": [
                {"cmp": op, "path": path, "value": c},
                {"match": [["c", c]]}
            ]}, "missing": missing}));
            let want = f.verdict_value(&doc);
            for text in [doc.to_string(), serde_json::to_string_pretty(&doc).unwrap()] {
                assert_eq!(f.verdict(&text), want, "{text}");
            }
        }
    }

    #[test]
    fn bad_specs_are_refused_naming_the_part_at_fault() {
        let err = |spec: Value| Filter::from_json(&spec).unwrap_err().to_string();
        assert!(err(json!({"predicate": {"cmp": "like", "path": ["a"], "value": 1}})).contains("filter.predicate.cmp"));
        assert!(err(json!({"predicate": {"cmp": "eq", "path": [], "value": 1}})).contains("filter.predicate.path"));
        assert!(
            err(json!({"predicate": {"cmp": "eq", "path": ["a"], "value": [1]}})).contains("filter.predicate.value")
        );
        assert!(err(json!({"predicate": {"and": [{"or": [{"x": 1}]}]}})).contains("filter.predicate.and[0].or[0]"));
        assert!(err(json!({"predicate": {"match": [["a"]]}})).contains("filter.predicate.match[0]"));
        assert!(err(json!({"predicate": {"not": {"and": []}}, "missing": "maybe"})).contains("filter.missing"));
        let mut deep = json!({"cmp": "eq", "path": ["a"], "value": 1});
        for _ in 0..100 {
            deep = json!({ "not": deep });
        }
        assert!(err(json!({ "predicate": deep })).contains("deeper"));
    }
}
