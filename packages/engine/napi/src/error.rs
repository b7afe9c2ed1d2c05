//! Engine errors become JS errors whose `code` property is the engine's `WHARF_ERR_…` code.
//!
//! napi-rs writes an error's status string into the JS `code` property, so a status type that
//! holds the engine code is all it takes. Errors rejected from the pool (`reject`) also carry the
//! core error's `table` and `index` as properties. The TS layer turns these into `WharfError`s.

use std::ffi::CStr;

use napi::bindgen_prelude::{JsError, Unknown};
use napi::{sys, Env, Status};
use wharf_engine::{Error as EngineError, ErrorCode};

/// The `code` of a JS error thrown by the binding.
pub struct Code(&'static str);

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        self.0
    }
}

impl From<Status> for Code {
    /// A napi failure (not an engine error): argument conversion is the only one expected, and
    /// the TS layer validates arguments first, so reaching this is a bug in the binding.
    fn from(_: Status) -> Self {
        Code(ErrorCode::InvalidArgument.as_str())
    }
}

/// What `#[napi]` methods return: their errors carry the engine's code.
pub type Result<T> = std::result::Result<T, napi::Error<Code>>;

/// Every engine error code (`ErrorCode::ALL`), for the test that keeps the TS catalogue equal to it.
#[napi_derive::napi]
#[cfg_attr(test, allow(dead_code))] // called from JS only
pub fn error_codes() -> Vec<&'static str> {
    ErrorCode::ALL.iter().map(|c| c.as_str()).collect()
}

pub fn to_napi(e: EngineError) -> napi::Error<Code> {
    napi::Error::new(Code(e.code.as_str()), e.message)
}

pub fn invalid(message: impl Into<String>) -> EngineError {
    EngineError::new(ErrorCode::InvalidArgument, message)
}

/// For an `AsyncTask`'s `resolve`: its errors must be `napi::Error<Status>`, whose `code` would be
/// napi's status name. Building the JS error here and wrapping it keeps the engine's code, because
/// a rejection hands a wrapped JS value back as is.
pub fn reject<T>(env: &Env, e: EngineError) -> napi::Result<T> {
    let (table, index) = (e.table.clone(), e.index.clone());
    let js = unsafe { JsError::from(to_napi(e)).into_value(env.raw()) };
    set_string(env, js, c"table", table.as_deref());
    set_string(env, js, c"index", index.as_deref());
    Err(napi::Error::from(unsafe { Unknown::from_raw_unchecked(env.raw(), js) }))
}

/// `object[name] = value` for a present value. A failure leaves the property unset: the error
/// still has its code and message, which is what matters.
fn set_string(env: &Env, object: sys::napi_value, name: &CStr, value: Option<&str>) {
    let Some(value) = value else { return };
    let mut string = std::ptr::null_mut();
    unsafe {
        if sys::napi_create_string_utf8(env.raw(), value.as_ptr().cast(), value.len() as isize, &mut string)
            == sys::Status::napi_ok
        {
            sys::napi_set_named_property(env.raw(), object, name.as_ptr(), string);
        }
    }
}
