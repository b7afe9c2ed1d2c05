//! Engine errors become JS errors whose `code` property is the engine's `WHARF_…` code.
//!
//! napi-rs writes an error's status string into the JS `code` property, so a status type that
//! holds the engine code is all it takes. The TS layer turns these into `WharfError`s.

use napi::bindgen_prelude::{JsError, Unknown};
use napi::{Env, Status};
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
        Code("WHARF_INVALID_ARGUMENT")
    }
}

/// What `#[napi]` methods return: their errors carry the engine's code.
pub type Result<T> = std::result::Result<T, napi::Error<Code>>;

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
    let js = unsafe { JsError::from(to_napi(e)).into_value(env.raw()) };
    Err(napi::Error::from(unsafe { Unknown::from_raw_unchecked(env.raw(), js) }))
}
