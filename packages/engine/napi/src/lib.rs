//! Node binding for `wharf-engine`: a thin napi-rs layer with no engine logic.
//!
//! The JS side (`packages/engine/src`) validates every argument and owns the public API; this
//! crate only converts values and moves work off the event loop:
//! - writes, `sync`, and table and index creation/removal answer through memory shared with JS,
//!   with one long-lived threadsafe function per database as its doorbell (`completion.rs`), keyed
//!   by a request id that JS chooses;
//! - open, close and reads run as `AsyncTask`s on the libuv pool (`tasks.rs`);
//! - requests reach the engine in the order JS made them, large batches parsed on the pool
//!   included (`sequencer.rs`);
//! - documents cross as JSON text, one string per call, which JS parses once;
//! - `csvToNdjson` runs the core's CSV transcoder on the JS thread, one call per block (`csv.rs`).
//!
//! Errors keep the engine's `WHARF_ERR_…` code as the JS error's `code` (`error.rs`). Small blocks
//! come from mimalloc, large ones from glibc (`alloc.rs`).

mod alloc;
mod completion;
mod csv;
mod database;
mod error;
mod feed;
mod index;
mod pages;
mod sequencer;
mod shared_memory;
mod table;
mod tasks;

pub use database::{NativeDatabase, OpenOptions};
pub use shared_memory::{shared_memory_layout, SharedMemoryLayout};

#[global_allocator]
static ALLOCATOR: alloc::SplitAllocator = alloc::SplitAllocator;
