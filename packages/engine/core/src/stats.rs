//! Counters the server, CLI and UI show. Names are the same in Rust, HTTP, the CLI and the UI.

use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Groups are bucketed by how many write operations they merged: 1, 2–3, 4–7, … (powers of two).
pub const GROUP_SIZE_BUCKETS: usize = 12;
/// Commit latencies are bucketed by powers of two of microseconds: 1, 2–3, 4–7, … up to ~67 s.
pub const LATENCY_BUCKETS: usize = 27;

/// A snapshot of the engine's counters (all since open, unless said otherwise).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Stats {
    /// Write operations (insert/delete/table batches) committed.
    pub commits: u64,
    /// Documents inserted, replaced or deleted.
    pub documents_written: u64,
    /// Groups the committer wrote: each is one `write` call to the journal.
    pub groups: u64,
    /// fdatasync calls on journal segments (group commits, background flushes, rotations).
    pub fdatasyncs: u64,
    /// Of those, the ones made because a segment filled up.
    pub segment_rotations: u64,
    /// Largest group, in write operations.
    pub max_group_ops: u64,
    /// Groups by operations merged: bucket i holds groups of 2^i ..= 2^(i+1)-1 operations.
    pub group_ops_histogram: Vec<u64>,
    /// Bytes appended to the journal (record headers included).
    pub bytes_journaled: u64,
    /// Groups stored LZ4-compressed (at least one record of the group smaller compressed).
    pub groups_compressed: u64,
    /// Record payload bytes before compression, for all groups.
    pub journal_bytes_uncompressed: u64,
    /// Payload bytes compression kept off the disk.
    pub journal_bytes_saved: u64,
    /// Stored / uncompressed payload bytes of the compressed groups (0 before any).
    pub compression_ratio: f64,
    /// The journal's running estimates: LZ4 time per input byte, write + fdatasync time per byte
    /// written (0 before the first measurement).
    pub compress_ns_per_byte: f64,
    pub write_ns_per_byte: f64,
    /// Read calls (get, get_many, scan, count) and the documents they returned.
    pub reads: u64,
    pub documents_read: u64,
    /// Point reads (`get`, `get_many`) answered from memory on the caller's thread: memtables,
    /// block cache or OS page cache, no disk wait and no thread hop.
    pub reads_from_memory: u64,
    /// Time from the committer taking a group to that group's fdatasync returning, for groups
    /// with hard writes or `sync()` calls: bucket i holds 2^i ..= 2^(i+1)-1 µs.
    pub commit_latency_histogram_us: Vec<u64>,
    /// Percentiles of that histogram since open (upper bucket bounds, µs; 0 before any).
    pub commit_latency_p50_us: u64,
    pub commit_latency_p99_us: u64,
    /// Sequence number of the newest group applied (visible).
    pub applied_seq: u64,
    /// Sequence number of the newest group known durable.
    pub durable_seq: u64,
    /// Journal bytes written since the last checkpoint.
    pub journal_bytes_since_checkpoint: u64,
    /// Checkpoints completed.
    pub checkpoints: u64,
    /// Merges of runs done by the merge thread.
    pub merges: u64,
    /// The memory budget (bytes), and what uses it now: the active memtables, the memtables
    /// being checkpointed, and the block cache.
    pub memory_budget: u64,
    pub memtable_bytes: u64,
    pub frozen_memtable_bytes: u64,
    pub cache_bytes: u64,
    pub cache_hits: u64,
    pub cache_misses: u64,
    /// Run files of all tables, their bytes on disk, and the memory their indexes and filters use.
    pub runs: u64,
    pub run_bytes: u64,
    pub run_index_bytes: u64,
    /// Pacing: the current write-rate limit (bytes/s; 0 = none), the debt behind it (memtable
    /// bytes beyond where pacing starts; level-0 runs beyond twice the merge fan-in), and the measured
    /// background rates it follows (bytes/s).
    pub write_rate_limit_bps: u64,
    pub pacing_debt_bytes: u64,
    pub merge_backlog_runs: u64,
    pub flush_rate_bps: u64,
    pub merge_rate_bps: u64,
    /// Groups that waited for pacing, and the time they waited in all.
    pub paced_groups: u64,
    pub pacing_delay_ms: f64,
    /// Times the active memtable was full while a checkpoint still ran — where a stop-the-world
    /// engine stops writes — that pacing rode through.
    pub stalls_avoided: u64,
    /// Last-resort stops (memtables at their limit), and their total time. Pacing keeps this 0.
    pub write_stops: u64,
    pub write_stop_ms: f64,
    /// Segment files created (each zero-filled once) and reused from the recycle pool.
    pub segments_created: u64,
    pub segments_recycled: u64,
    /// Time the last open spent in recovery, and the journal records it replayed.
    pub recovery_ms: f64,
    pub records_replayed: u64,
    /// Document bytes accepted by writes: each inserted or replaced document's JSON as stored.
    /// What "bytes loaded" means in `bytes_written_per_byte_loaded`.
    pub bytes_loaded: u64,
    /// Bytes written to disk since open, by kind: journal records and segment headers; run files
    /// written by checkpoints (tables' and indexes' memtables); run files written by merges
    /// (abandoned ones included); everything else (zero-filling new journal segments, once per
    /// segment file, and manifests). Counted at each write call, so they are what reached the
    /// page cache: the kernel writes them to disk.
    pub bytes_written_journal: u64,
    pub bytes_written_flushes: u64,
    pub bytes_written_merges: u64,
    pub bytes_written_other: u64,
    /// The four kinds together.
    pub bytes_written: u64,
    /// (journal + flushes + merges) / `bytes_loaded`: how many times each loaded byte was
    /// written (0 before any). Segment preallocation and manifests are left out: they are paid
    /// once per file, not per byte loaded, and show in `bytes_written_other`.
    pub bytes_written_per_byte_loaded: f64,
    /// True once a write or fdatasync failed: every later write fails until reopened.
    pub poisoned: bool,
    /// The database's journal segment size (fixed at creation).
    pub segment_size: u64,
    /// What the open did differently from what it was asked, one sentence each (an option
    /// ignored because the database's own value wins). Empty when nothing.
    pub open_notes: Vec<String>,
    /// The engine's stages of each write (insert, delete); the Node binding adds its own to them.
    pub write_stages: WriteStages,
}

/// Where a write's time goes inside the engine.
#[derive(Debug, Clone, Default, Serialize)]
pub struct WriteStages {
    /// Submitted → the committer takes it into a group: waiting behind the group before it,
    /// for the cohort being gathered, and for pacing.
    pub queue: LatencySummary,
    /// Taken → acknowledged: applying, the journal write, and for a hard write the fdatasync.
    pub commit: LatencySummary,
}

/// Live counters, updated with relaxed atomics by the committer and background threads.
#[derive(Default)]
pub(crate) struct Counters {
    pub commits: AtomicU64,
    pub documents_written: AtomicU64,
    pub groups: AtomicU64,
    pub fdatasyncs: AtomicU64,
    pub segment_rotations: AtomicU64,
    pub max_group_ops: AtomicU64,
    pub group_ops_histogram: [AtomicU64; GROUP_SIZE_BUCKETS],
    pub bytes_journaled: AtomicU64,
    pub groups_compressed: AtomicU64,
    pub journal_bytes_uncompressed: AtomicU64,
    pub journal_bytes_saved: AtomicU64,
    /// f64 bits, like the two estimates after it.
    pub compression_ratio: AtomicU64,
    pub compress_ns_per_byte: AtomicU64,
    pub write_ns_per_byte: AtomicU64,
    pub reads: AtomicU64,
    pub documents_read: AtomicU64,
    pub reads_from_memory: AtomicU64,
    pub commit_latency: LatencyHistogram,
    pub write_queue: LatencyHistogram,
    pub write_commit: LatencyHistogram,
    pub applied_seq: AtomicU64,
    pub durable_seq: AtomicU64,
    pub journal_bytes_since_checkpoint: AtomicU64,
    pub checkpoints: AtomicU64,
    pub merges: AtomicU64,
    pub memtable_bytes: AtomicU64,
    pub frozen_memtable_bytes: AtomicU64,
    pub write_rate_limit_bps: AtomicU64,
    pub pacing_debt_bytes: AtomicU64,
    pub merge_backlog_runs: AtomicU64,
    pub flush_rate_bps: AtomicU64,
    pub merge_rate_bps: AtomicU64,
    pub paced_groups: AtomicU64,
    pub pacing_delay_us: AtomicU64,
    pub stalls_avoided: AtomicU64,
    pub write_stops: AtomicU64,
    pub write_stop_us: AtomicU64,
    pub segments_created: AtomicU64,
    pub segments_recycled: AtomicU64,
    pub recovery_us: AtomicU64,
    pub records_replayed: AtomicU64,
    pub bytes_loaded: AtomicU64,
    pub bytes_written_journal: AtomicU64,
    pub bytes_written_flushes: AtomicU64,
    pub bytes_written_merges: AtomicU64,
    pub bytes_written_other: AtomicU64,
    pub poisoned: AtomicBool,
}

impl Counters {
    pub fn record_group(&self, ops: u64) {
        self.groups.fetch_add(1, Relaxed);
        self.max_group_ops.fetch_max(ops, Relaxed);
        let bucket = (63 - ops.max(1).leading_zeros() as usize).min(GROUP_SIZE_BUCKETS - 1);
        self.group_ops_histogram[bucket].fetch_add(1, Relaxed);
    }

    pub fn record_read(&self, documents: u64) {
        self.reads.fetch_add(1, Relaxed);
        self.documents_read.fetch_add(documents, Relaxed);
    }

    pub fn snapshot(&self) -> Stats {
        let latency = self.commit_latency.buckets();
        let bytes_loaded = self.bytes_loaded.load(Relaxed);
        let [journal, flushes, merges, other] = [
            &self.bytes_written_journal,
            &self.bytes_written_flushes,
            &self.bytes_written_merges,
            &self.bytes_written_other,
        ]
        .map(|c| c.load(Relaxed));
        Stats {
            commits: self.commits.load(Relaxed),
            documents_written: self.documents_written.load(Relaxed),
            groups: self.groups.load(Relaxed),
            fdatasyncs: self.fdatasyncs.load(Relaxed),
            segment_rotations: self.segment_rotations.load(Relaxed),
            max_group_ops: self.max_group_ops.load(Relaxed),
            group_ops_histogram: self.group_ops_histogram.iter().map(|c| c.load(Relaxed)).collect(),
            bytes_journaled: self.bytes_journaled.load(Relaxed),
            groups_compressed: self.groups_compressed.load(Relaxed),
            journal_bytes_uncompressed: self.journal_bytes_uncompressed.load(Relaxed),
            journal_bytes_saved: self.journal_bytes_saved.load(Relaxed),
            compression_ratio: f64::from_bits(self.compression_ratio.load(Relaxed)),
            compress_ns_per_byte: f64::from_bits(self.compress_ns_per_byte.load(Relaxed)),
            write_ns_per_byte: f64::from_bits(self.write_ns_per_byte.load(Relaxed)),
            reads: self.reads.load(Relaxed),
            documents_read: self.documents_read.load(Relaxed),
            reads_from_memory: self.reads_from_memory.load(Relaxed),
            commit_latency_p50_us: percentile(&latency, 0.50),
            commit_latency_p99_us: percentile(&latency, 0.99),
            commit_latency_histogram_us: latency,
            applied_seq: self.applied_seq.load(Relaxed),
            durable_seq: self.durable_seq.load(Relaxed),
            journal_bytes_since_checkpoint: self.journal_bytes_since_checkpoint.load(Relaxed),
            checkpoints: self.checkpoints.load(Relaxed),
            merges: self.merges.load(Relaxed),
            memtable_bytes: self.memtable_bytes.load(Relaxed),
            frozen_memtable_bytes: self.frozen_memtable_bytes.load(Relaxed),
            write_rate_limit_bps: self.write_rate_limit_bps.load(Relaxed),
            pacing_debt_bytes: self.pacing_debt_bytes.load(Relaxed),
            merge_backlog_runs: self.merge_backlog_runs.load(Relaxed),
            flush_rate_bps: self.flush_rate_bps.load(Relaxed),
            merge_rate_bps: self.merge_rate_bps.load(Relaxed),
            paced_groups: self.paced_groups.load(Relaxed),
            pacing_delay_ms: self.pacing_delay_us.load(Relaxed) as f64 / 1000.0,
            stalls_avoided: self.stalls_avoided.load(Relaxed),
            write_stops: self.write_stops.load(Relaxed),
            write_stop_ms: self.write_stop_us.load(Relaxed) as f64 / 1000.0,
            segments_created: self.segments_created.load(Relaxed),
            segments_recycled: self.segments_recycled.load(Relaxed),
            recovery_ms: self.recovery_us.load(Relaxed) as f64 / 1000.0,
            records_replayed: self.records_replayed.load(Relaxed),
            bytes_loaded,
            bytes_written_journal: journal,
            bytes_written_flushes: flushes,
            bytes_written_merges: merges,
            bytes_written_other: other,
            bytes_written: journal + flushes + merges + other,
            bytes_written_per_byte_loaded: if bytes_loaded == 0 {
                0.0
            } else {
                (journal + flushes + merges) as f64 / bytes_loaded as f64
            },
            poisoned: self.poisoned.load(Relaxed),
            write_stages: WriteStages { queue: self.write_queue.summary(), commit: self.write_commit.summary() },
            ..Default::default() // memory and runs: filled in by `Database::stats`
        }
    }
}

/// A latency histogram: bucket i counts 2^i ..= 2^(i+1)-1 µs. Recorded with relaxed atomics
/// from any thread; cheap enough for every write (one leading-zeros count, one increment).
#[derive(Default)]
pub struct LatencyHistogram {
    buckets: [AtomicU64; LATENCY_BUCKETS],
}

impl LatencyHistogram {
    pub fn record(&self, elapsed: Duration) {
        self.record_n(elapsed, 1);
    }

    /// Records `n` events that took `elapsed` each (the writes of one group).
    pub fn record_n(&self, elapsed: Duration, n: u64) {
        let micros = elapsed.as_micros().min(u64::MAX as u128) as u64;
        let bucket = (63 - micros.max(1).leading_zeros() as usize).min(LATENCY_BUCKETS - 1);
        self.buckets[bucket].fetch_add(n, Relaxed);
    }

    pub fn buckets(&self) -> Vec<u64> {
        self.buckets.iter().map(|c| c.load(Relaxed)).collect()
    }

    pub fn summary(&self) -> LatencySummary {
        let histogram_us = self.buckets();
        LatencySummary {
            count: histogram_us.iter().sum(),
            p50_us: percentile(&histogram_us, 0.50),
            p99_us: percentile(&histogram_us, 0.99),
            p999_us: percentile(&histogram_us, 0.999),
            max_us: percentile(&histogram_us, 1.0),
            histogram_us,
        }
    }
}

/// A [`LatencyHistogram`] as reported: percentiles are upper bucket bounds (µs; 0 when empty).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LatencySummary {
    pub count: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub max_us: u64,
    pub histogram_us: Vec<u64>,
}

/// The upper bound (µs) of the bucket holding the `q` quantile of a power-of-two histogram.
fn percentile(buckets: &[u64], q: f64) -> u64 {
    let total: u64 = buckets.iter().sum();
    if total == 0 {
        return 0;
    }
    let rank = (q * total as f64).ceil().max(1.0) as u64;
    let mut seen = 0;
    for (i, n) in buckets.iter().enumerate() {
        seen += n;
        if seen >= rank {
            return (1u64 << (i + 1)) - 1;
        }
    }
    u64::MAX
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_come_from_the_right_buckets() {
        let c = Counters::default();
        for _ in 0..998 {
            c.commit_latency.record(Duration::from_micros(200)); // bucket 7: 128..=255
        }
        c.commit_latency.record(Duration::from_micros(5000)); // bucket 12: 4096..=8191
        c.commit_latency.record(Duration::from_secs(1)); // bucket 19: 524288..=1048575
        let s = c.snapshot();
        assert_eq!((s.commit_latency_p50_us, s.commit_latency_p99_us), (255, 255));
        let summary = c.commit_latency.summary();
        assert_eq!((summary.count, summary.p999_us, summary.max_us), (1000, 8191, 1048575));
        assert_eq!(percentile(&[0; 4], 0.5), 0);
        assert_eq!(LatencyHistogram::default().summary().max_us, 0);
    }
}
