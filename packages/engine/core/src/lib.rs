//! Wharf's storage engine: an embedded, durable JSON document store.
//!
//! All tables share one journal. A single committer thread takes every write waiting at that
//! moment as one *group*, applies it in memory, writes it with one `write` call and issues at most
//! one `fdatasync` for it. Each record carries its own sequence number, length and checksum, so
//! no pointer has to be synced after it.
//!
//! Durability is stated as two outcomes, worded the same everywhere:
//! - [`Durability::Soft`]: the callback runs once the write is applied and *visible* to reads.
//! - [`Durability::Hard`]: the callback runs once the write is *durable* (after the group's fdatasync).
//! - [`Database::sync`]: runs once everything acknowledged before it is durable.
//!
//! ```
//! use wharf_engine::{wait, Database, Durability, DocFormat, Options, PreparedDocs, WriteOptions};
//! let dir = tempfile::tempdir().unwrap();
//! let db = Database::open(dir.path(), Options::default()).unwrap();
//! wait(|done| db.create_table("people", "id", done)).unwrap();
//! let docs = PreparedDocs::parse(br#"{"id":1,"name":"Ada"}"#, DocFormat::Ndjson, "id").unwrap();
//! let result = wait(|done| db.insert("people", docs, WriteOptions::default(), done)).unwrap();
//! assert_eq!(result.inserted, 1);
//! assert!(db.get("people", &1.0.into()).unwrap().is_some());
//! db.close().unwrap();
//! ```
//!
//! ## Layers
//!
//! Each module sits in one layer and uses only modules of the layers below it; modules of one
//! layer do not use each other. Top to bottom (`tests/layers.rs` checks the code against this
//! list, and that `docs/ARCHITECTURE.md` shows the same one):
//!
//! ```text
//! fuzzing                                    bodies of the fuzz targets (tests and fuzz/ only)
//! db                                         the API: open and recovery, reads, close
//! committer                                  the writer thread: groups, journal writes, answers
//! merge, index                               background work on trees: merges; index upkeep and queries
//! checkpoint                                 frozen memtables to run files, manifest, recycling
//! table                                      tables, their indexes' definitions, the rules of a write
//! tree                                       one LSM tree: memtables and runs, reads across them
//! manifest, memtable, feed                   the manifest's two slots; one memtable; a change feed's queue
//! journal, run                               the journal's segment files; run files
//! doc, mutation, record, cache, pacing       documents, journal payloads and records, block cache, pacing
//! key, checksum, bloom, stats, options, io   keys, checksums, filters, counters, options, the disk seam
//! predicate                                  filter predicates on documents (ReQL's filter, pushed down)
//! error, csv                                 the error type; CSV records to NDJSON documents (for imports)
//! ```
//!
//! Where two modules need each other's types, the shared type lives in the lower one: a
//! table's index definition (`Index`, `Change`) is in `table` (a table lists
//! its indexes, and an index's entries live in a hidden table), and the signal from checkpoints
//! to merges (`MergeSignal`) is in `checkpoint`.

mod bloom;
mod cache;
mod checkpoint;
mod checksum;
mod committer;
/// CSV records to NDJSON documents, for `wharf import` (the storage engine does not use it).
pub mod csv;
mod db;
mod doc;
mod error;
mod feed;
/// The bodies of the fuzz targets (`fuzz/`) and of their stable short pass. Not a stable API.
#[doc(hidden)]
pub mod fuzzing;
mod index;
pub mod io;
mod journal;
mod key;
mod manifest;
mod memtable;
mod merge;
mod mutation;
mod options;
mod pacing;
pub mod predicate;
mod record;
mod run;
mod stats;
mod table;
mod tree;

pub use db::{wait, AckListener, Callback, ChangeFeed, Database, TableInfo};
// Paged reads (`Database::read_page`); a line of its own, as tests/layers.rs reads `pub use` lines.
pub use db::{Page, PageOptions, PageRow, ReadFrom, Resume};
pub use doc::{DocFormat, PreparedDocs, MAX_DOCUMENT_DEPTH};
pub use error::{Error, ErrorCode, Result};
pub use feed::{FeedBatch, FeedChange};
pub use index::{IndexInfo, ValueBound};
pub use key::{Key, KeyRange};
pub use options::{CommitterWait, Conflict, Durability, Options, WriteOptions, DEFAULT_SEGMENT_SIZE, MIN_SEGMENT_SIZE};
pub use stats::{LatencyHistogram, LatencySummary, Stats, WriteStages};
pub use table::{DocumentError, WriteResult};

/// What tests inject into the committer: its clock and its sync points. Not a stable API.
#[doc(hidden)]
pub mod testing {
    pub use crate::committer::{Clock, CommitterHooks, ManualClock, SyncPoint, SystemClock};
}

/// Format internals exposed for the crash and recovery tests in `tests/` and for benchmarks.
/// Not a stable API.
#[doc(hidden)]
pub mod internals {
    pub use crate::checksum::{fletcher64, record_checksum, seed_for_segment};
    pub use crate::journal::{segment_file_name, SEGMENT_HEADER_SIZE};
    pub use crate::manifest::MANIFEST_SLOTS;
    pub use crate::record::{RecordHeader, RECORD_HEADER_SIZE};
}
