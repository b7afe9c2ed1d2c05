//! Counters the server, CLI and UI show. Names are the same in Rust, HTTP, the CLI and the UI.

use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

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
    /// Read calls (get, get_many, scan, count) and the documents they returned.
    pub reads: u64,
    pub documents_read: u64,
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
    /// Checkpoint files merged into one.
    pub merges: u64,
    /// Segment files created (each zero-filled once) and reused from the recycle pool.
    pub segments_created: u64,
    pub segments_recycled: u64,
    /// Time the last open spent in recovery, and the journal records it replayed.
    pub recovery_ms: f64,
    pub records_replayed: u64,
    /// True once a write or fdatasync failed: every later write fails until reopened.
    pub poisoned: bool,
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
    pub reads: AtomicU64,
    pub documents_read: AtomicU64,
    pub commit_latency_histogram_us: [AtomicU64; LATENCY_BUCKETS],
    pub applied_seq: AtomicU64,
    pub durable_seq: AtomicU64,
    pub journal_bytes_since_checkpoint: AtomicU64,
    pub checkpoints: AtomicU64,
    pub merges: AtomicU64,
    pub segments_created: AtomicU64,
    pub segments_recycled: AtomicU64,
    pub recovery_us: AtomicU64,
    pub records_replayed: AtomicU64,
    pub poisoned: AtomicBool,
}

impl Counters {
    pub fn record_group(&self, ops: u64) {
        self.groups.fetch_add(1, Relaxed);
        self.max_group_ops.fetch_max(ops, Relaxed);
        let bucket = (63 - ops.max(1).leading_zeros() as usize).min(GROUP_SIZE_BUCKETS - 1);
        self.group_ops_histogram[bucket].fetch_add(1, Relaxed);
    }

    pub fn record_commit_latency(&self, micros: u64) {
        let bucket = (63 - micros.max(1).leading_zeros() as usize).min(LATENCY_BUCKETS - 1);
        self.commit_latency_histogram_us[bucket].fetch_add(1, Relaxed);
    }

    pub fn record_read(&self, documents: u64) {
        self.reads.fetch_add(1, Relaxed);
        self.documents_read.fetch_add(documents, Relaxed);
    }

    pub fn snapshot(&self) -> Stats {
        let latency: Vec<u64> = self.commit_latency_histogram_us.iter().map(|c| c.load(Relaxed)).collect();
        Stats {
            commits: self.commits.load(Relaxed),
            documents_written: self.documents_written.load(Relaxed),
            groups: self.groups.load(Relaxed),
            fdatasyncs: self.fdatasyncs.load(Relaxed),
            segment_rotations: self.segment_rotations.load(Relaxed),
            max_group_ops: self.max_group_ops.load(Relaxed),
            group_ops_histogram: self.group_ops_histogram.iter().map(|c| c.load(Relaxed)).collect(),
            bytes_journaled: self.bytes_journaled.load(Relaxed),
            reads: self.reads.load(Relaxed),
            documents_read: self.documents_read.load(Relaxed),
            commit_latency_p50_us: percentile(&latency, 0.50),
            commit_latency_p99_us: percentile(&latency, 0.99),
            commit_latency_histogram_us: latency,
            applied_seq: self.applied_seq.load(Relaxed),
            durable_seq: self.durable_seq.load(Relaxed),
            journal_bytes_since_checkpoint: self.journal_bytes_since_checkpoint.load(Relaxed),
            checkpoints: self.checkpoints.load(Relaxed),
            merges: self.merges.load(Relaxed),
            segments_created: self.segments_created.load(Relaxed),
            segments_recycled: self.segments_recycled.load(Relaxed),
            recovery_ms: self.recovery_us.load(Relaxed) as f64 / 1000.0,
            records_replayed: self.records_replayed.load(Relaxed),
            poisoned: self.poisoned.load(Relaxed),
        }
    }
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
        for _ in 0..98 {
            c.record_commit_latency(200); // bucket 7: 128..=255
        }
        c.record_commit_latency(5000); // bucket 12: 4096..=8191
        c.record_commit_latency(5000);
        let s = c.snapshot();
        assert_eq!((s.commit_latency_p50_us, s.commit_latency_p99_us), (255, 8191));
        assert_eq!(percentile(&[0; 4], 0.5), 0);
    }
}
