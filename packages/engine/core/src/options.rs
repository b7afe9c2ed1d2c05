//! Tunables and per-write options.

use std::time::Duration;

/// When a write's callback runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// After the group holding the write is on disk (its fdatasync returned). The default.
    #[default]
    Hard,
    /// As soon as the write is applied and visible to reads. It reaches disk within
    /// [`Options::flush_interval`], or at the next hard write or [`crate::Database::sync`].
    Soft,
}

/// What an insert does when a document's primary key already exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Conflict {
    /// Reject that document (the rest of the batch is still written). The default.
    #[default]
    Error,
    /// Replace the stored document with the new one.
    Replace,
    /// Merge the new document's fields into the stored one (nested objects merge recursively).
    Update,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions {
    pub durability: Durability,
    pub conflict: Conflict,
    /// Acknowledge only once every index of the table reflects the write (and, for `Hard`,
    /// once it is durable). Indexes are otherwise updated just after, in the background.
    pub wait_for_indexes: bool,
}

/// Database tunables. Every field has a default that suits a bulk load on one disk.
#[derive(Debug, Clone)]
pub struct Options {
    /// Size of each preallocated journal segment file of a *new* database; at least 64 KiB.
    /// `None`: 64 MiB. It shapes the files on disk, so it is recorded in the manifest at
    /// creation and an existing database always keeps its own size: a different value passed
    /// here is ignored, with a note in [`crate::Stats::open_notes`]. The only such option: the
    /// others tune timing and memory and may change between opens.
    pub segment_size: Option<u64>,
    /// A checkpoint starts once this many journal bytes were written since the last one.
    /// Default 256 MiB.
    pub checkpoint_bytes: u64,
    /// Longest time soft writes stay in the page cache before the committer syncs them.
    /// Default 200 ms (PostgreSQL's walwriter and sled use the same window).
    pub flush_interval: Duration,
    /// Number of retired segments kept for recycling. Default 4.
    pub recycle_segments: usize,
    /// Memory the engine may use for memtables and the block cache, in bytes. A quarter fills
    /// the active memtable before a checkpoint starts; memtables may use three quarters while a
    /// checkpoint runs (pacing slows writes well before that, and only there do writes stop);
    /// the block cache gets a quarter. Run indexes and filters (about 1.3 bytes per document)
    /// come on top. Default 256 MiB; at least 4 MiB.
    pub memory_budget: u64,
    /// Merge a table's runs when this many share a level (size-tiered; see `merge.rs`).
    /// Default 4; at least 2.
    pub merge_fan_in: usize,
    /// For tests and benchmarks of pacing: checkpoints and merges sleep this long per MiB they
    /// write, as on a slow disk. Default zero.
    pub background_delay_per_mib: Duration,
    /// After a group that merged several hard writers, the longest the committer waits for them
    /// to come back before it writes the next group (PostgreSQL's `commit_delay`, but only when
    /// concurrency was just seen: a lone writer never waits). Default 1 ms, which gathers
    /// writers in the same process; a server whose clients are a network round trip away wants
    /// several milliseconds. Zero disables the wait.
    pub group_commit_window: Duration,
    /// How the committer waits for requests (see [`CommitterWait`]).
    pub committer_wait: CommitterWait,
}

/// How the committer waits for requests, in one place: the write path's only spin/yield/park
/// primitive reads these (see `docs/design/write-path.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitterWait {
    /// How long an idle committer keeps looking for a request (yielding its CPU between looks)
    /// before it parks, when callers have been coming back within that time. A caller awaiting
    /// its last write often sends the next one within microseconds, while waking a parked
    /// thread costs a syscall on the caller's side and a context switch. Default 300 µs (about
    /// one wake-up of the caller's thread plus its turn-around). Zero: always park.
    pub spin: Duration,
    /// At most this many yields per spin, whatever the clock says. Default 2,000.
    pub spin_yields: u32,
    /// While it gathers a cohort of hard writers, the parked committer is woken only once the
    /// whole rest of the cohort is queued (or its gap runs out), not by each arrival: each
    /// wake-up costs the submitting thread a syscall. Default true. False: woken by each request.
    pub wake_on_whole_cohort: bool,
}

impl Default for CommitterWait {
    fn default() -> Self {
        CommitterWait { spin: Duration::from_micros(300), spin_yields: 2_000, wake_on_whole_cohort: true }
    }
}

/// Journal segment size of a new database when [`Options::segment_size`] is `None`.
pub const DEFAULT_SEGMENT_SIZE: u64 = 64 << 20;
/// Smallest journal segment size accepted.
pub const MIN_SEGMENT_SIZE: u64 = 64 << 10;

impl Default for Options {
    fn default() -> Self {
        Options {
            segment_size: None,
            checkpoint_bytes: 256 << 20,
            flush_interval: Duration::from_millis(200),
            recycle_segments: 4,
            memory_budget: 256 << 20,
            merge_fan_in: 4,
            background_delay_per_mib: Duration::ZERO,
            group_commit_window: Duration::from_millis(1),
            committer_wait: CommitterWait::default(),
        }
    }
}
