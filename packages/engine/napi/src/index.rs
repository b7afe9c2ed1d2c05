//! Secondary indexes of `NativeDatabase`. Creation and removal answer through the completion
//! channel like table creation; queries and waits run on the libuv pool (a fresh query may
//! wait for the index to catch up, which must not block the event loop).

use std::time::Duration;

use napi::bindgen_prelude::AsyncTask;
use napi::Env;
use napi_derive::napi;
use serde_json::Value;
use wharf_engine::ValueBound;

use crate::database::{Live, NativeDatabase};
use crate::error::{invalid, to_napi, Result};
use crate::table::json_array;
use crate::tasks::Read;

#[napi]
impl NativeDatabase {
    #[napi]
    pub fn create_index(
        &self,
        env: Env,
        id: u32,
        table: String,
        name: String,
        field: String,
        multi: bool,
    ) -> Result<()> {
        let Live { db, order } = self.live()?;
        let reply = self.completions.start(&env, id);
        order.hand_over(move || db.create_index(&table, &name, &field, multi, Box::new(move |r| reply.done(r))));
        Ok(())
    }

    #[napi]
    pub fn drop_index(&self, env: Env, id: u32, table: String, name: String) -> Result<()> {
        let Live { db, order } = self.live()?;
        let reply = self.completions.start(&env, id);
        order.hand_over(move || db.drop_index(&table, &name, Box::new(move |r| reply.done(r))));
        Ok(())
    }

    /// The table's indexes as JSON text (snake_case, as `IndexInfo` serializes).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn list_indexes(&self, table: String) -> Result<AsyncTask<Read>> {
        let db = self.live()?.db;
        Ok(Read::new(move || Ok(serde_json::to_string(&db.list_indexes(&table)?).unwrap_or_default())))
    }

    #[napi(ts_return_type = "Promise<string>")]
    pub fn index_wait(&self, table: String, names: Vec<String>, timeout_ms: f64) -> Result<AsyncTask<Read>> {
        let db = self.live()?.db;
        let timeout = Duration::from_secs_f64(timeout_ms / 1000.0);
        Ok(Read::new(move || Ok(serde_json::to_string(&db.index_wait(&table, &names, timeout)?).unwrap_or_default())))
    }

    /// `values_json`: a JSON array of values. Documents as one JSON array text.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn get_all(&self, table: String, index: String, values_json: String, fresh: bool) -> Result<AsyncTask<Read>> {
        let db = self.live()?.db;
        let values: Vec<Value> =
            serde_json::from_str(&values_json).map_err(|e| to_napi(invalid(format!("index values: {e}"))))?;
        Ok(Read::new(move || Ok(docs(db.get_all(&table, &index, &values, fresh)?))))
    }

    /// Bounds as JSON text (`None` = unbounded).
    #[napi(ts_return_type = "Promise<string>")]
    #[allow(clippy::too_many_arguments)]
    pub fn between(
        &self,
        table: String,
        index: String,
        lower_json: Option<String>,
        lower_closed: bool,
        upper_json: Option<String>,
        upper_closed: bool,
        limit: Option<u32>,
        reverse: bool,
        fresh: bool,
    ) -> Result<AsyncTask<Read>> {
        let db = self.live()?.db;
        let lower = value_bound(lower_json, lower_closed)?;
        let upper = value_bound(upper_json, upper_closed)?;
        Ok(Read::new(move || {
            Ok(docs(db.between(&table, &index, &lower, &upper, limit.map(|n| n as usize), reverse, fresh)?))
        }))
    }
}

fn value_bound(json: Option<String>, closed: bool) -> Result<ValueBound> {
    let Some(json) = json else { return Ok(ValueBound::Unbounded) };
    let v: Value = serde_json::from_str(&json).map_err(|e| to_napi(invalid(format!("index bound: {e}"))))?;
    Ok(if closed { ValueBound::Closed(v) } else { ValueBound::Open(v) })
}

fn docs(rows: Vec<(wharf_engine::Key, std::sync::Arc<str>)>) -> String {
    json_array(rows.iter().map(|(_, doc)| &**doc))
}
