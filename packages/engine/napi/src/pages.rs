//! Lazy, paged reads of `NativeDatabase` (`read_page`): one page of a key range or of index
//! ranges, filtered in the engine. The query crosses as one JSON text and the page comes back as
//! one, so a page costs one native call and one `JSON.parse` whatever it holds.

use std::ops::Bound;

use napi::bindgen_prelude::AsyncTask;
use napi_derive::napi;
use serde_json::Value;
use wharf_engine::predicate::Filter;
use wharf_engine::{Key, KeyRange, Page, PageOptions, ReadFrom, Resume, ValueBound};

use crate::database::NativeDatabase;
use crate::error::{invalid, to_napi, Result};
use crate::tasks::Read;

#[napi]
impl NativeDatabase {
    /// `query_json`: `{index?, ranges: [[lower|null, lowerClosed, upper|null, upperClosed]…],
    /// after?, limit, examine, reverse, fresh, count, filter?}` (`src/table.ts` builds it; a key
    /// range is one range of primary keys). Answers `{rows: [documents], deferred: [positions in
    /// rows], counted, examined, after}` as JSON text.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn read_page(&self, table: String, query_json: String) -> Result<AsyncTask<Read>> {
        let db = self.live()?.db;
        let query: Value =
            serde_json::from_str(&query_json).map_err(|e| to_napi(invalid(format!("page query: {e}"))))?;
        let (from, after, options) = page_query(&query).map_err(to_napi)?;
        Ok(Read::new(move || Ok(page_json(&db.read_page(&table, &from, after, &options)?))))
    }
}

fn page_query(q: &Value) -> wharf_engine::Result<(ReadFrom, Option<Resume>, PageOptions)> {
    let count = |name: &str| -> wharf_engine::Result<usize> {
        q.get(name)
            .and_then(Value::as_u64)
            .filter(|n| *n >= 1)
            .map(|n| n as usize)
            .ok_or_else(|| invalid(format!("page query: `{name}` must be a positive integer")))
    };
    let flag = |name: &str| q.get(name).and_then(Value::as_bool).unwrap_or(false);
    let ranges =
        q.get("ranges").and_then(Value::as_array).ok_or_else(|| invalid("page query: `ranges` must be an array"))?;
    let index = match q.get("index") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(invalid("page query: `index` must be a string")),
    };
    let side = |r: &[Value], at: usize| -> wharf_engine::Result<(Option<Value>, bool)> {
        let closed = r.get(at + 1).and_then(Value::as_bool).unwrap_or(false);
        Ok((r.get(at).filter(|v| !v.is_null()).cloned(), closed))
    };
    let mut pairs = Vec::with_capacity(ranges.len());
    for (i, r) in ranges.iter().enumerate() {
        let r = r.as_array().filter(|r| r.len() == 4).ok_or_else(|| {
            invalid(format!("page query: ranges[{i}] must be [lower, lowerClosed, upper, upperClosed]"))
        })?;
        pairs.push((side(r, 0)?, side(r, 2)?));
    }
    let from = match index {
        Some(name) => ReadFrom::Index {
            name,
            ranges: pairs.into_iter().map(|(lo, hi)| (value_bound(lo), value_bound(hi))).collect(),
        },
        None => {
            let [(lo, hi)] = <[_; 1]>::try_from(pairs)
                .map_err(|_| invalid("page query: a primary-key read takes exactly one range"))?;
            ReadFrom::Keys(KeyRange { lower: key_bound(lo)?, upper: key_bound(hi)? })
        }
    };
    let after = match q.get("after") {
        None | Some(Value::Null) => None,
        Some(Value::Array(a)) => match a.as_slice() {
            [Value::Number(i), Value::String(entry)] if i.as_u64().is_some() => {
                Some(Resume::Entry(i.as_u64().unwrap_or(0) as usize, Key::from(entry.as_str())))
            }
            _ => return Err(invalid("page query: `after` must be a key or [range, entry]")),
        },
        Some(k) => Some(Resume::Key(key(k)?)),
    };
    let filter = match q.get("filter") {
        None | Some(Value::Null) => None,
        Some(spec) => Some(Filter::from_json(spec)?),
    };
    let options = PageOptions {
        limit: count("limit")?,
        examine: count("examine")?,
        reverse: flag("reverse"),
        filter,
        count_only: flag("count"),
        fresh: flag("fresh"),
    };
    Ok((from, after, options))
}

fn value_bound((v, closed): (Option<Value>, bool)) -> ValueBound {
    match v {
        None => ValueBound::Unbounded,
        Some(v) if closed => ValueBound::Closed(v),
        Some(v) => ValueBound::Open(v),
    }
}

fn key(v: &Value) -> wharf_engine::Result<Key> {
    Key::from_value(v).map_err(|e| invalid(format!("page query: bad primary key {v}: {e}")))?.checked()
}

fn key_bound((v, closed): (Option<Value>, bool)) -> wharf_engine::Result<Bound<Key>> {
    Ok(match v {
        None => Bound::Unbounded,
        Some(v) if closed => Bound::Included(key(&v)?),
        Some(v) => Bound::Excluded(key(&v)?),
    })
}

fn page_json(page: &Page) -> String {
    let mut out = String::with_capacity(64 + page.rows.iter().map(|r| r.doc.len() + 1).sum::<usize>());
    out.push_str("{\"rows\":[");
    for (i, row) in page.rows.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&row.doc);
    }
    out.push_str("],\"deferred\":[");
    let deferred: Vec<String> =
        page.rows.iter().enumerate().filter(|(_, r)| r.deferred).map(|(i, _)| i.to_string()).collect();
    out.push_str(&deferred.join(","));
    let after = match &page.resume {
        None => "null".to_string(),
        Some(Resume::Key(k)) => k.to_json(),
        Some(Resume::Entry(i, k)) => {
            // Index entries are string keys (value ‖ primary key, encoded); the other arms are
            // there for completeness.
            let entry = match k {
                Key::Str(s) => s.to_string(),
                Key::Num(n) => n.to_string(),
                Key::Datum(_) => k.to_json(),
            };
            format!("[{i},{}]", Value::String(entry))
        }
    };
    out.push_str(&format!("],\"counted\":{},\"examined\":{},\"after\":{after}}}", page.counted, page.examined));
    out
}
