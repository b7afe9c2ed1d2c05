//! The memory one database shares with JS, and its layout: defined here once, and handed to JS by
//! [`shared_memory_layout`] (`src/binding.ts` reads it when the addon loads).
//!
//! The memory is a `SharedArrayBuffer` that JS creates and passes to `open` as a `Uint8Array`
//! over it, so that the engine's threads write, and JS reads with `Atomics`, memory the
//! ECMAScript memory model covers. (Node-API cannot make a `SharedArrayBuffer` over memory the
//! addon allocates; a plain `ArrayBuffer` written by another thread is outside the model.) The
//! binding holds a reference to the array from `open` until its [`Completions`] are dropped on
//! the JS thread ([`MemoryHold`]); after that no thread touches the memory.
//!
//! Bytes, from 0:
//! - two 32-bit words: [`SEALED_WORD`], the count of answers sealed, ever, mod 2^32, stored by
//!   the thread that seals; one unused;
//! - from [`ANSWER_OFFSET`], [`ANSWER_SLOTS`] answers of [`ANSWER_FIELDS`] `f64`s, written by
//!   `deliverAnswers` on the JS thread: at [`ANSWER_ID_FIELD`] the request id, from
//!   [`ANSWER_COUNTS_FIELD`] the counts of a write in the order of [`ANSWER_COUNTS`] (0 for
//!   requests without a result), at [`ANSWER_DETAILS_FIELD`] -1, or the index `d` of its details
//!   in `answerDetails()`: `[2d]` null for a success or the `WHARF_…` code of a failure, `[2d + 1]`
//!   the failure's message, or the whole result as JSON when it has more than counts;
//! - from [`OUTBOX_OFFSET`], [`OUTBOX_SLOTS`] `u32` request ids, written by JS for `insertEach`
//!   and read by the binding inside that call.
//!
//! Numbers in shared memory, not an object or an array per answer: building either natively
//! costs ~100 ns per value on the JS thread.
//!
//! [`Completions`]: crate::completion::Completions

use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::atomic::AtomicU32;

use napi::bindgen_prelude::Unknown;
use napi::{sys, Env, JsValue};
use napi_derive::napi;

pub const SEALED_WORD: usize = 0;
/// Bytes before the answer slots: two words, so the slots' `f64`s are 8-byte aligned.
pub const ANSWER_OFFSET: usize = 8;
/// Answers one `deliverAnswers` writes at most.
pub const ANSWER_SLOTS: usize = 512;
pub const ANSWER_FIELDS: usize = 8;
pub const ANSWER_ID_FIELD: usize = 0;
pub const ANSWER_COUNTS_FIELD: usize = 1;
/// The counts of a write, as `WriteResult` names them, from [`ANSWER_COUNTS_FIELD`] on.
pub const ANSWER_COUNTS: [&str; 6] = ["inserted", "replaced", "unchanged", "deleted", "skipped", "errors"];
pub const ANSWER_DETAILS_FIELD: usize = ANSWER_COUNTS_FIELD + ANSWER_COUNTS.len();
pub const OUTBOX_OFFSET: usize = ANSWER_OFFSET + ANSWER_SLOTS * ANSWER_FIELDS * 8;
/// Request ids one `insertEach` call carries at most.
pub const OUTBOX_SLOTS: usize = 4096;
pub const SHARED_BYTES: usize = OUTBOX_OFFSET + OUTBOX_SLOTS * 4;

const _: () = assert!(ANSWER_DETAILS_FIELD + 1 == ANSWER_FIELDS);
const _: () = assert!(ANSWER_OFFSET.is_multiple_of(8) && OUTBOX_OFFSET.is_multiple_of(8));

/// The layout above, for JS (camelCase there: `sharedBytes`, `sealedWord`, …).
#[napi(object)]
pub struct SharedMemoryLayout {
    pub shared_bytes: u32,
    pub sealed_word: u32,
    pub answer_offset: u32,
    pub answer_slots: u32,
    pub answer_fields: u32,
    pub answer_id_field: u32,
    pub answer_counts_field: u32,
    pub answer_counts: Vec<String>,
    pub answer_details_field: u32,
    pub outbox_offset: u32,
    pub outbox_slots: u32,
}

/// The layout of the memory each database shares with JS.
#[napi]
pub fn shared_memory_layout() -> SharedMemoryLayout {
    SharedMemoryLayout {
        shared_bytes: SHARED_BYTES as u32,
        sealed_word: SEALED_WORD as u32,
        answer_offset: ANSWER_OFFSET as u32,
        answer_slots: ANSWER_SLOTS as u32,
        answer_fields: ANSWER_FIELDS as u32,
        answer_id_field: ANSWER_ID_FIELD as u32,
        answer_counts_field: ANSWER_COUNTS_FIELD as u32,
        answer_counts: ANSWER_COUNTS.iter().map(|s| s.to_string()).collect(),
        answer_details_field: ANSWER_DETAILS_FIELD as u32,
        outbox_offset: OUTBOX_OFFSET as u32,
        outbox_slots: OUTBOX_SLOTS as u32,
    }
}

/// The shared bytes as the binding reaches them. Valid while the [`MemoryHold`] made with it
/// lives; its owner clears every copy (under the lock that guards it) before dropping that.
#[derive(Clone, Copy)]
pub struct SharedMemory {
    base: NonNull<u8>,
}

// The words are accessed atomically only; the slots and the outbox by the JS thread only.
unsafe impl Send for SharedMemory {}
unsafe impl Sync for SharedMemory {}

/// The binding's reference to the `Uint8Array` over the shared memory: it keeps the
/// `SharedArrayBuffer` alive. Created and deleted on the JS thread.
pub struct MemoryHold {
    env: sys::napi_env,
    reference: sys::napi_ref,
}

// Moved to the pool with the open task and back; dropped only on the JS thread (see `Drop`).
unsafe impl Send for MemoryHold {}
unsafe impl Sync for MemoryHold {}

impl Drop for MemoryHold {
    /// On the JS thread: the owner ([`crate::completion::Completions`]) is dropped by the
    /// `NativeDatabase`'s finalizer or by the open task's completion, both on the JS thread.
    fn drop(&mut self) {
        unsafe { sys::napi_delete_reference(self.env, self.reference) };
    }
}

impl SharedMemory {
    /// Checks that `array` is a `Uint8Array` of [`SHARED_BYTES`] bytes over the whole of a
    /// `SharedArrayBuffer`, and holds it.
    pub fn attach(env: &Env, array: &Unknown<'_>) -> napi::Result<(SharedMemory, MemoryHold)> {
        let value = array.value().value;
        let mut kind = sys::TypedarrayType::uint8_array;
        let (mut length, mut data, mut buffer, mut offset) =
            (0usize, std::ptr::null_mut::<c_void>(), std::ptr::null_mut(), 0usize);
        let status = unsafe {
            sys::napi_get_typedarray_info(env.raw(), value, &mut kind, &mut length, &mut data, &mut buffer, &mut offset)
        };
        let wrong = |what: String| {
            napi::Error::from_reason(format!(
                "the shared memory must be a Uint8Array over a whole SharedArrayBuffer of {SHARED_BYTES} bytes; {what}"
            ))
        };
        if status != sys::Status::napi_ok {
            return Err(wrong("got no typed array".into()));
        }
        if kind != sys::TypedarrayType::uint8_array || length != SHARED_BYTES || offset != 0 {
            return Err(wrong(format!("got a typed array of type {kind}, {length} elements from byte {offset}")));
        }
        let mut plain = true;
        unsafe { sys::napi_is_arraybuffer(env.raw(), buffer, &mut plain) };
        if plain {
            // Another thread writes the words: only a SharedArrayBuffer is covered by the model.
            return Err(wrong("got a plain ArrayBuffer".into()));
        }
        let base = NonNull::new(data.cast::<u8>()).ok_or_else(|| wrong("got no bytes".into()))?;
        if base.as_ptr().align_offset(8) != 0 {
            return Err(wrong("its bytes are not 8-byte aligned".into()));
        }
        let mut reference = std::ptr::null_mut();
        let status = unsafe { sys::napi_create_reference(env.raw(), value, 1, &mut reference) };
        if status != sys::Status::napi_ok {
            return Err(napi::Error::from_reason(format!("cannot hold the shared memory (napi status {status})")));
        }
        Ok((SharedMemory { base }, MemoryHold { env: env.raw(), reference }))
    }

    pub fn word(&self, i: usize) -> &AtomicU32 {
        assert!(i < ANSWER_OFFSET / 4);
        unsafe { &*self.base.as_ptr().cast::<AtomicU32>().add(i) }
    }

    /// # Safety
    /// On the JS thread only, inside a call from JS (JS is not reading them meanwhile).
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn slots(&self) -> &mut [f64] {
        let first = self.base.as_ptr().add(ANSWER_OFFSET).cast::<f64>();
        std::slice::from_raw_parts_mut(first, ANSWER_SLOTS * ANSWER_FIELDS)
    }

    /// # Safety
    /// On the JS thread only, inside a call from JS.
    pub unsafe fn outbox(&self) -> &[u32] {
        let first = self.base.as_ptr().add(OUTBOX_OFFSET).cast::<u32>();
        std::slice::from_raw_parts(first, OUTBOX_SLOTS)
    }
}
