//! Adaptive write pacing: foreground writes slow down smoothly toward the rate the
//! background work actually achieves on this disk, instead of stopping when it falls behind.
//!
//! *Debt* is work the background owes:
//! - flush debt: memtable bytes in memory beyond one frozen memtable plus half an active one
//!   (`1.5 × memtable_limit`). A checkpoint writes the frozen memtable out; while it runs the
//!   active one refills, and if it fills before the flush ends a stop-the-world engine stops
//!   writes. Wharf paces instead.
//! - merge debt: level-0 sorted runs of a table beyond twice the merge fan-in (merges fell well behind
//!   checkpoints; a few extra runs cost reads little, thanks to the Bloom filters).
//!
//! Each debt, as a fraction `x` of its range, sets the limit to `rate × 4 × 16^(−x)`: four
//! times the measured background rate when the debt just appears, the rate itself a third of
//! the way in, a sixteenth at the end. The *rate* is measured, never configured: memtable
//! bytes a flush retires per second of flushing, and for merges the bytes merged per second
//! divided by the number of levels (each ingested byte is rewritten about once per level).
//! Both are exponentially smoothed. While a frozen memtable is written out, the limit is also at
//! most the memory left before the stop over the time that flush has left: its bytes at the
//! measured rate, and once it has run longer than that (a checkpoint's fdatasyncs behind other
//! writeback, a starved CPU), as long again as it has run so far. Only at the end of the
//! flush-debt range — memtables using the whole memtable share of the memory budget — do writes
//! stop, until the flush ends; that is the documented last resort (`write_stops` in stats),
//! which pacing is there to avoid.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::stats::Counters;

/// The flush and merge rates. Until a checkpoint or merge has reported its rate (a database's
/// first), the journal's measured write rate stands in: the same disk.
fn measured_rates(rates: &Rates, counters: &Counters) -> (f64, f64) {
    let journal_ns_per_byte = f64::from_bits(counters.write_ns_per_byte.load(Relaxed));
    let journal_rate = if journal_ns_per_byte > 0.0 { 1e9 / journal_ns_per_byte } else { 0.0 };
    let (flush, merge) = rates.get();
    let or_journal = |rate: f64| if rate > 0.0 { rate } else { journal_rate };
    (or_journal(flush), or_journal(merge))
}

/// Background write rates as measured, smoothed.
#[derive(Default)]
pub(crate) struct Rates {
    inner: Mutex<(f64, f64)>,
}

const SMOOTHING: f64 = 0.3;

fn smooth(old: f64, sample: f64) -> f64 {
    if old == 0.0 {
        sample
    } else {
        old + SMOOTHING * (sample - old)
    }
}

impl Rates {
    /// A flush wrote `bytes` of run file in `busy`. Run bytes are close to journal payload
    /// bytes, which is what the limit meters.
    pub fn record_flush(&self, bytes: u64, busy: Duration, counters: &Counters) {
        if busy.is_zero() || bytes == 0 {
            return;
        }
        let mut r = self.inner.lock().unwrap();
        r.0 = smooth(r.0, bytes as f64 / busy.as_secs_f64());
        counters.flush_rate_bps.store(r.0 as u64, Relaxed);
    }

    /// A merge wrote `bytes` in `busy` (time it yielded to flushes excluded).
    pub fn record_merge(&self, bytes: u64, busy: Duration, counters: &Counters) {
        if busy.is_zero() || bytes == 0 {
            return;
        }
        let mut r = self.inner.lock().unwrap();
        r.1 = smooth(r.1, bytes as f64 / busy.as_secs_f64());
        counters.merge_rate_bps.store(r.1 as u64, Relaxed);
    }

    fn get(&self) -> (f64, f64) {
        *self.inner.lock().unwrap()
    }
}

/// What the committer knows when it decides how long to wait before the next group.
pub(crate) struct Debt {
    pub memtable_bytes: u64,
    pub frozen_bytes: u64,
    /// Most level-0 sorted runs any table has (see `manifest::sorted_runs`), and the most levels any table has.
    pub level0_runs: usize,
    pub levels: u32,
    /// How long the checkpoint writing the frozen memtable has run.
    pub flush_elapsed: Duration,
}

pub(crate) enum Decision {
    /// Go ahead.
    Free,
    /// Wait this long before the next group.
    Wait(Duration),
    /// Memtables are at their limit: wait for the flush (last resort).
    Stop,
}

/// The committer's side: turns debt and rates into a delay, as a token bucket.
pub(crate) struct Pacer {
    pub memtable_limit: u64,
    pub fan_in: usize,
    next_free: Instant,
    rushing: bool,
}

impl Pacer {
    pub fn new(memtable_limit: u64, fan_in: usize) -> Self {
        Pacer { memtable_limit, fan_in, next_free: Instant::now(), rushing: false }
    }

    /// Whether writes stop: memtables (active and frozen) would be at their limit, `stop_at`,
    /// with `in_memory` bytes while a flush (`frozen` bytes) runs. The committer asks it before a
    /// group, with the group's bytes counted in; pacing after one.
    pub fn stops(&self, in_memory: u64, frozen: u64) -> bool {
        frozen > 0 && in_memory >= self.stop_at()
    }

    fn stop_at(&self) -> u64 {
        self.memtable_limit * 3
    }

    /// The write-rate limit for this debt, bytes/s; `None` when writes need no limit, and
    /// `Some(0.0)` for a stop.
    #[cfg(test)]
    pub fn limit(&self, debt: &Debt, rates: &Rates, counters: &Counters) -> Option<f64> {
        let rates = measured_rates(rates, counters);
        self.limit_at(debt, rates, self.flush_left(debt, rates.0), counters)
    }

    fn limit_at(
        &self,
        debt: &Debt,
        (flush_rate, merge_rate): (f64, f64),
        flush_left: Option<Duration>,
        counters: &Counters,
    ) -> Option<f64> {
        let start = self.memtable_limit * 3 / 2;
        let end = self.stop_at();
        let in_memory = debt.memtable_bytes + debt.frozen_bytes;
        counters.pacing_debt_bytes.store(in_memory.saturating_sub(start), Relaxed);
        counters.merge_backlog_runs.store(debt.level0_runs.saturating_sub(2 * self.fan_in) as u64, Relaxed);
        if self.stops(in_memory, debt.frozen_bytes) {
            return Some(0.0);
        }
        let x_flush = in_memory.saturating_sub(start) as f64 / (end - start) as f64;
        let x_merge = debt.level0_runs.saturating_sub(2 * self.fan_in) as f64 / (4 * self.fan_in) as f64;
        let candidates = [(x_flush, flush_rate), (x_merge.min(1.0), merge_rate / debt.levels.max(1) as f64)];
        let curve = candidates
            .iter()
            .filter(|(x, rate)| *x > 0.0 && *rate > 0.0)
            .map(|(x, rate)| rate * 4.0 * 16f64.powf(-x))
            .min_by(|a, b| a.total_cmp(b));
        // While a frozen memtable is written out, writes may fill at most the memory left before
        // the stop. The curve alone let a fast writer reach it when frozen memtables had grown
        // past the limit (the pacing test, 3 runs in 25); this bound falls to zero at the end
        // instead.
        let until_flushed =
            flush_left.filter(|_| x_flush > 0.0).map(|left| (end - in_memory) as f64 / left.as_secs_f64());
        match (curve, until_flushed) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// How long the frozen memtable's flush may still take: its bytes at the measured rate, and
    /// at least as long again as it has run so far. The second part covers a flush that overran
    /// its estimate (fdatasyncs queued behind other writeback, a starved CPU) and the first flush,
    /// before any rate is measured: in either case writes that assumed it would end sooner still
    /// reached the stop (1 run in 12 of the pacing test with a disk and CPU hog beside it).
    fn flush_left(&self, debt: &Debt, flush_rate: f64) -> Option<Duration> {
        let at_rate = if flush_rate > 0.0 { debt.frozen_bytes as f64 / flush_rate } else { 0.0 };
        (debt.frozen_bytes > 0)
            .then(|| Duration::from_secs_f64(at_rate).max(debt.flush_elapsed).max(Duration::from_micros(1)))
    }

    /// Decides for a group of `bytes` just committed.
    pub fn decide(&mut self, bytes: u64, debt: &Debt, rates: &Rates, counters: &Counters) -> Decision {
        // A stop-the-world engine stops here: the active memtable is full while the previous
        // one is still being written. Count each such episode that pacing rides through.
        let rushing = debt.frozen_bytes > 0 && debt.memtable_bytes >= self.memtable_limit;
        if rushing && !self.rushing {
            counters.stalls_avoided.fetch_add(1, Relaxed);
        }
        self.rushing = rushing;
        let now = Instant::now();
        let rates = measured_rates(rates, counters);
        let flush_left = self.flush_left(debt, rates.0);
        match self.limit_at(debt, rates, flush_left, counters) {
            None => {
                counters.write_rate_limit_bps.store(0, Relaxed);
                self.next_free = now;
                Decision::Free
            }
            Some(0.0) => Decision::Stop,
            Some(rate) => {
                counters.write_rate_limit_bps.store(rate as u64, Relaxed);
                self.next_free = self.next_free.max(now) + Duration::from_secs_f64(bytes as f64 / rate);
                // No group waits longer than the frozen memtable may take to write out: the debt is
                // different after that.
                if let Some(left) = flush_left {
                    self.next_free = self.next_free.min(now + left);
                }
                if self.next_free > now {
                    Decision::Wait(self.next_free - now)
                } else {
                    Decision::Free
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn debt(memtable: u64, frozen: u64, level0: usize) -> Debt {
        Debt {
            memtable_bytes: memtable,
            frozen_bytes: frozen,
            level0_runs: level0,
            levels: 1,
            flush_elapsed: Duration::ZERO,
        }
    }

    #[test]
    fn the_limit_falls_smoothly_with_debt_and_stops_only_at_the_end() {
        let counters = Counters::default();
        let rates = Rates::default();
        rates.record_flush(10 << 20, Duration::from_secs(1), &counters);
        rates.record_merge(40 << 20, Duration::from_secs(1), &counters);
        let p = Pacer::new(100, 4);
        assert_eq!(p.limit(&debt(50, 100, 0), &rates, &counters), None, "a flush running is not debt");
        let limits: Vec<f64> =
            [160, 200, 250, 299].iter().map(|m| p.limit(&debt(*m - 100, 100, 0), &rates, &counters).unwrap()).collect();
        assert!(limits.windows(2).all(|w| w[1] < w[0]), "{limits:?}");
        assert!(limits[0] > (10 << 20) as f64 && *limits.last().unwrap() > 0.0);
        assert_eq!(p.limit(&debt(200, 100, 0), &rates, &counters), Some(0.0));
        // Merge debt paces toward the merge rate, and never stops.
        let m = p.limit(&debt(0, 0, 100), &rates, &counters).unwrap();
        assert!(m > 0.0 && m < (40 << 20) as f64);
    }

    #[test]
    fn before_any_background_rate_is_known_the_flushs_running_time_and_the_journals_rate_pace() {
        let counters = Counters::default();
        let p = Pacer::new(100, 4);
        // Nothing measured: the flush, 10 ms in, takes at least as long again, so the 40 bytes
        // left before the stop may fill at 4,000 bytes/s.
        let blind = Debt { flush_elapsed: Duration::from_millis(10), ..debt(160, 100, 0) };
        let limit = p.limit(&blind, &Rates::default(), &counters).unwrap();
        assert!((limit - 4000.0).abs() < 1.0, "{limit}");
        assert_eq!(p.limit(&debt(160, 0, 0), &Rates::default(), &counters), None, "no flush, nothing measured");
        counters.write_ns_per_byte.store(10f64.to_bits(), Relaxed); // 100 MB/s
        let limit = p.limit(&debt(260, 0, 0), &Rates::default(), &counters).unwrap();
        assert!(limit > 0.0 && limit < 4e8, "{limit}");
    }

    #[test]
    fn writes_never_fill_the_memory_left_before_the_frozen_memtable_is_written() {
        let counters = Counters::default();
        let rates = Rates::default();
        rates.record_flush(10 << 20, Duration::from_secs(1), &counters);
        let p = Pacer::new(100, 4);
        // 250 of the 300 bytes at which writes stop are in memory, 160 of them frozen: at 10 MiB/s
        // that flush has 16 µs to go, and writes may add at most 50 bytes meanwhile.
        let limit = p.limit(&debt(90, 160, 0), &rates, &counters).unwrap();
        let most = 50.0 * (10 << 20) as f64 / 160.0;
        assert!(limit > 0.0 && limit <= most, "{limit} > {most}");
        // The bound falls toward zero at the end, smoothly.
        let nearer = p.limit(&debt(139, 160, 0), &rates, &counters).unwrap();
        assert!(nearer < limit / 10.0, "{nearer}");
        // A flush that has overrun its estimate is assumed to need as long again.
        let overdue = Debt { flush_elapsed: Duration::from_millis(1), ..debt(90, 160, 0) };
        let slower = p.limit(&overdue, &rates, &counters).unwrap();
        let most = 50.0 / 1e-3;
        assert!(slower > 0.0 && slower <= most, "{slower} > {most}");
    }
}
