//! Per-table reads and writes of `NativeDatabase`. Each takes the table name; JS has checked
//! every argument already, the engine checks them again.

use std::ops::Bound;
use std::time::Instant;

use napi::bindgen_prelude::{AsyncTask, Buffer, Either, Either3, FromNapiValue, TypeName, ValidateNapiValue};
use napi::Env;
use napi::ValueType;
use napi_derive::napi;
use wharf_engine::{Conflict, DocFormat, Durability, Key, KeyRange, PreparedDocs, WriteOptions};

use crate::database::{Live, NativeDatabase};
use crate::error::{invalid, to_napi, Result};
use crate::tasks::{Prepare, Read, Source};

/// Batches smaller than this are parsed on the JS thread: for a single document, a trip to the
/// libuv pool would cost more than the parse. Larger ones are parsed on the pool.
const INLINE_PARSE_BYTES: usize = 64 << 10;

/// A key as JavaScript gives it: a string, a number, or any other key value (an array, a
/// boolean, a time or binary object; see `Key::from_value`).
type JsKey = Either3<String, f64, DatumKey>;

/// Any JS value that is not a string or a number, read as JSON (the engine checks it is a key).
pub struct DatumKey(serde_json::Value);

impl TypeName for DatumKey {
    fn type_name() -> &'static str {
        "DatumKey"
    }
    fn value_type() -> ValueType {
        ValueType::Unknown
    }
}

impl ValidateNapiValue for DatumKey {
    unsafe fn validate(_: napi::sys::napi_env, _: napi::sys::napi_value) -> napi::Result<napi::sys::napi_value> {
        Ok(std::ptr::null_mut())
    }
}

impl FromNapiValue for DatumKey {
    unsafe fn from_napi_value(env: napi::sys::napi_env, value: napi::sys::napi_value) -> napi::Result<Self> {
        unsafe { serde_json::Value::from_napi_value(env, value) }.map(DatumKey)
    }
}

#[napi]
impl NativeDatabase {
    /// Inserts a batch; the outcome arrives through the completion callback under `id`.
    /// Returns a promise only when the batch is parsed on the pool; it never rejects (errors take
    /// the completion road too), so JS may ignore it.
    #[napi(ts_return_type = "Promise<void> | null")]
    #[allow(clippy::too_many_arguments)]
    pub fn insert(
        &self,
        env: Env,
        id: u32,
        table: String,
        data: Either<String, Buffer>,
        format: u32,
        durability: u32,
        conflict: u32,
        wait_for_indexes: bool,
    ) -> Result<Option<AsyncTask<Prepare>>> {
        let Live { db, order } = self.live()?;
        let format = doc_format(format)?;
        let options =
            WriteOptions { durability: durability_of(durability)?, conflict: conflict_of(conflict)?, wait_for_indexes };
        let primary_key = db.primary_key(&table).map_err(to_napi)?;
        let data = Source::from(data);
        if data.bytes().len() < INLINE_PARSE_BYTES {
            let docs = PreparedDocs::parse(data.bytes(), format, &primary_key).map_err(to_napi)?;
            let reply = self.completions.start(&env, id);
            order.hand_over(move || db.insert(&table, docs, options, Box::new(move |r| reply.write(r))));
            return Ok(None);
        }
        let reply = self.completions.start(&env, id);
        let task = Prepare {
            turn: Some(order.ticket()),
            db,
            table,
            data,
            format,
            options,
            primary_key,
            reply: Some(reply),
            created: Instant::now(),
        };
        Ok(Some(AsyncTask::new(task)))
    }

    /// Single-document inserts made in one tick of the JS thread, sent together in a few calls
    /// (`src/handle.ts`): line i of `ndjson` is the document of the i-th of the `count` request
    /// ids JS wrote into the shared memory's outbox (`completion.rs`), and each is a write of its
    /// own. Parsed here, on the JS thread: JS keeps each call small (`INSERT_BATCH_CHARS`).
    #[napi]
    #[allow(clippy::too_many_arguments)] // the JS call's arguments, flat: no object to convert per tick
    pub fn insert_each(
        &self,
        env: Env,
        count: u32,
        table: String,
        ndjson: String,
        durability: u32,
        conflict: u32,
        wait_for_indexes: bool,
    ) -> Result<()> {
        let Live { db, order } = self.live()?;
        let options =
            WriteOptions { durability: durability_of(durability)?, conflict: conflict_of(conflict)?, wait_for_indexes };
        let ids = self.completions.outbox(count as usize).map_err(to_napi)?;
        let primary_key = db.primary_key(&table).map_err(to_napi)?;
        // Parsed before any request is registered: a failure rejects them all. A line per
        // document (JSON.stringify never emits a raw newline, nor an empty text).
        let docs = PreparedDocs::parse(ndjson.as_bytes(), DocFormat::Ndjson, &primary_key).map_err(to_napi)?;
        if docs.len() != ids.len() {
            return Err(to_napi(invalid(format!("{} documents for {} writes", docs.len(), ids.len()))));
        }
        let reply = self.completions.start_each(&env, ids);
        order.hand_over(move || db.insert_each(&table, docs, Box::new(move |r| reply.write_each(r)), options));
        Ok(())
    }

    #[napi]
    pub fn delete(&self, env: Env, id: u32, table: String, keys: Vec<JsKey>, durability: u32) -> Result<()> {
        let Live { db, order } = self.live()?;
        let durability = durability_of(durability)?;
        let keys = keys.into_iter().map(key_of).collect::<Result<Vec<_>>>()?;
        let reply = self.completions.start(&env, id);
        order.hand_over(move || db.delete(&table, keys, durability, Box::new(move |r| reply.write(r))));
        Ok(())
    }

    /// The document as JSON text, or `"null"`.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn get(&self, table: String, key: JsKey) -> Result<AsyncTask<Read>> {
        let db = self.live()?.db;
        let key = key_of(key)?;
        Ok(Read::new(move || Ok(db.get(&table, &key)?.as_deref().unwrap_or("null").to_string())))
    }

    /// One JSON array text, `null` where a key is absent, so JS parses once.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn get_many(&self, table: String, keys: Vec<JsKey>) -> Result<AsyncTask<Read>> {
        let db = self.live()?.db;
        let keys = keys.into_iter().map(key_of).collect::<Result<Vec<_>>>()?;
        Ok(Read::new(move || {
            let docs = db.get_many(&table, &keys)?;
            Ok(json_array(docs.iter().map(|d| d.as_deref().unwrap_or("null"))))
        }))
    }

    /// `get` answered here on the JS thread when that needs no wait (the document, or its
    /// absence, is in memory: memtables, block cache or page cache); `null` when it would wait,
    /// and then JS calls `get`, which reads on the pool.
    #[napi]
    pub fn get_from_memory(&self, table: String, key: JsKey) -> Result<Option<String>> {
        let key = key_of(key)?;
        let docs = self.live()?.db.get_many_from_memory(&table, std::slice::from_ref(&key)).map_err(to_napi)?;
        Ok(docs.map(|d| d[0].as_deref().unwrap_or("null").to_string()))
    }

    /// `getMany` answered on the JS thread when no document needs a wait; `null` otherwise.
    #[napi]
    pub fn get_many_from_memory(&self, table: String, keys: Vec<JsKey>) -> Result<Option<String>> {
        let keys = keys.into_iter().map(key_of).collect::<Result<Vec<_>>>()?;
        let docs = self.live()?.db.get_many_from_memory(&table, &keys).map_err(to_napi)?;
        Ok(docs.map(|d| json_array(d.iter().map(|d| d.as_deref().unwrap_or("null")))))
    }

    /// Documents in key order (reversed if asked) as one JSON array text.
    #[napi(ts_return_type = "Promise<string>")]
    #[allow(clippy::too_many_arguments)]
    pub fn scan(
        &self,
        table: String,
        lower: Option<JsKey>,
        lower_inclusive: bool,
        upper: Option<JsKey>,
        upper_inclusive: bool,
        limit: Option<u32>,
        reverse: bool,
    ) -> Result<AsyncTask<Read>> {
        let db = self.live()?.db;
        let range = KeyRange { lower: bound(lower, lower_inclusive)?, upper: bound(upper, upper_inclusive)? };
        Ok(Read::new(move || {
            let rows = db.scan(&table, &range, limit.map(|n| n as usize), reverse)?;
            Ok(json_array(rows.iter().map(|(_, doc)| &**doc)))
        }))
    }

    /// The number of documents, as JSON text.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn count(&self, table: String) -> Result<AsyncTask<Read>> {
        let db = self.live()?.db;
        Ok(Read::new(move || Ok(db.count(&table)?.to_string())))
    }
}

fn key_of(key: JsKey) -> Result<Key> {
    let key = match key {
        Either3::A(s) => Key::from(s),
        Either3::B(n) => Key::from(n),
        Either3::C(DatumKey(v)) => Key::from_value(&v).map_err(|why| to_napi(invalid(why)))?,
    };
    key.checked().map_err(to_napi)
}

fn bound(key: Option<JsKey>, inclusive: bool) -> Result<Bound<Key>> {
    Ok(match key {
        None => Bound::Unbounded,
        Some(k) if inclusive => Bound::Included(key_of(k)?),
        Some(k) => Bound::Excluded(key_of(k)?),
    })
}

pub(crate) fn json_array<'a>(docs: impl Iterator<Item = &'a str>) -> String {
    let mut out = String::from("[");
    for (i, doc) in docs.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(doc);
    }
    out.push(']');
    out
}

// Enums cross as small integers, not strings: a string argument costs two napi calls and an
// allocation, and these are on every write. The numbering is mirrored in `src/binding.ts`.

fn doc_format(format: u32) -> Result<DocFormat> {
    match format {
        0 => Ok(DocFormat::Ndjson),
        1 => Ok(DocFormat::JsonArray),
        other => Err(to_napi(invalid(format!("unknown document format {other}")))),
    }
}

fn durability_of(durability: u32) -> Result<Durability> {
    match durability {
        0 => Ok(Durability::Hard),
        1 => Ok(Durability::Soft),
        other => Err(to_napi(invalid(format!("unknown durability {other}")))),
    }
}

fn conflict_of(conflict: u32) -> Result<Conflict> {
    match conflict {
        0 => Ok(Conflict::Error),
        1 => Ok(Conflict::Replace),
        2 => Ok(Conflict::Update),
        other => Err(to_napi(invalid(format!("unknown conflict mode {other}")))),
    }
}
