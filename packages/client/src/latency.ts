/**
 * Latency and throughput: per-document latency from the moment a document was handed to the
 * loader (its intended start, so slow acknowledgements are not hidden behind backpressure) to its
 * acknowledgement, in HdrHistograms (perf_hooks.createHistogram, microseconds, 3 significant
 * digits); completions per interval; intervals with none are stalls.
 */
import { createHistogram, type RecordableHistogram } from 'node:perf_hooks';
import type { Interval, LatencyMs } from './types.js';

const LOWEST_US = 1;
const HIGHEST_US = 3_600_000_000; // one hour

function newHistogram(): RecordableHistogram {
  return createHistogram({ lowest: LOWEST_US, highest: HIGHEST_US, figures: 3 });
}

/** Summarizes a histogram of microseconds in milliseconds. */
export function latencyOf(h: RecordableHistogram): LatencyMs {
  if (h.count === 0) return { count: 0, p50: 0, p90: 0, p99: 0, 'p99.9': 0, max: 0, mean: 0 };
  const ms = (us: number) => Math.round(us) / 1000;
  return {
    count: h.count,
    p50: ms(h.percentile(50)),
    p90: ms(h.percentile(90)),
    p99: ms(h.percentile(99)),
    'p99.9': ms(h.percentile(99.9)),
    max: ms(h.max),
    mean: Math.round(h.mean) / 1000,
  };
}

function clampUs(ms: number): number {
  const us = Math.round(ms * 1000);
  return us < LOWEST_US ? LOWEST_US : Math.min(us, HIGHEST_US);
}

/** Aggregates intervals into windows of `n` intervals (e.g. 1 s → 10 s). */
export function aggregateIntervals(intervals: readonly Interval[], n: number): Interval[] {
  const out: Interval[] = [];
  for (let i = 0; i < intervals.length; i += n) {
    const group = intervals.slice(i, i + n);
    const docs = group.reduce((s, x) => s + x.docs, 0);
    const seconds = group.reduce((s, x) => s + x.seconds, 0);
    const withDocs = group.filter((x) => x.docs > 0);
    const item: Interval = { t: group[group.length - 1]!.t, docs, seconds: Math.round(seconds * 1000) / 1000 };
    if (withDocs.length > 0) {
      // The exact per-window percentiles need the raw histograms; this is the max of the
      // per-interval figures, an upper bound that is exact for `max`.
      item.p50 = Math.max(...withDocs.map((x) => x.p50 ?? 0));
      item.p99 = Math.max(...withDocs.map((x) => x.p99 ?? 0));
      item.max = Math.max(...withDocs.map((x) => x.max ?? 0));
    }
    out.push(item);
  }
  return out;
}

export class LatencyRecorder {
  readonly total = newHistogram();
  readonly batches = newHistogram();
  /** Reset at each interval boundary. */
  #interval = newHistogram();
  /** Reset when the caller takes a window (e.g. a YCSB-style status line every 10 s). */
  #window = newHistogram();
  #windowDocs = 0;
  #intervalDocs = 0;
  #intervalStart = 0;
  #origin = 0;
  #started = false;
  readonly intervals: Interval[] = [];
  zeroIntervals = 0;

  /** Starts the clock (the first write). */
  start(now: number): void {
    if (this.#started) return;
    this.#started = true;
    this.#origin = now;
    this.#intervalStart = now;
  }

  get started(): boolean {
    return this.#started;
  }

  get origin(): number {
    return this.#origin;
  }

  /**
   * Records `count` documents acknowledged at `ackMs`, handed over at `startsMs[0..count)`.
   * Only the interval's histogram is touched per document; it is merged into the totals (and the
   * window) when the interval closes.
   */
  recordDocs(startsMs: ArrayLike<number>, count: number, ackMs: number): void {
    const interval = this.#interval;
    for (let i = 0; i < count; i++) interval.record(clampUs(ackMs - startsMs[i]!));
    this.#intervalDocs += count;
  }

  /** Records `count` documents handed over together at `startMs` (one block) and acknowledged at `ackMs`. */
  recordSame(startMs: number, count: number, ackMs: number): void {
    const interval = this.#interval;
    const us = clampUs(ackMs - startMs);
    for (let i = 0; i < count; i++) interval.record(us);
    this.#intervalDocs += count;
  }

  recordBatch(ms: number): void {
    this.batches.record(clampUs(ms));
  }

  /**
   * Closes the current interval at `now`. `outstanding` says whether documents were waiting for
   * an acknowledgement during it: only then does an empty interval count as a stall.
   */
  tick(now: number, outstanding: boolean): Interval {
    const seconds = (now - this.#intervalStart) / 1000;
    const item: Interval = {
      t: Math.round(((now - this.#origin) / 1000) * 1000) / 1000,
      docs: this.#intervalDocs,
      seconds: Math.round(seconds * 1000) / 1000,
    };
    if (this.#intervalDocs > 0) {
      const l = latencyOf(this.#interval);
      item.p50 = l.p50;
      item.p99 = l.p99;
      item.max = l.max;
    } else if (outstanding) {
      this.zeroIntervals++;
    }
    this.intervals.push(item);
    this.total.add(this.#interval);
    this.#window.add(this.#interval);
    this.#windowDocs += this.#intervalDocs;
    this.#interval.reset();
    this.#intervalDocs = 0;
    this.#intervalStart = now;
    return item;
  }

  /** Latency of the interval in progress (for a live "current p99"). */
  current(): LatencyMs {
    return latencyOf(this.#interval);
  }

  /** Documents and latency of the intervals closed since the previous call; resets the window. */
  takeWindow(): { docs: number; latency: LatencyMs } {
    const out = { docs: this.#windowDocs, latency: latencyOf(this.#window) };
    this.#window.reset();
    this.#windowDocs = 0;
    return out;
  }
}
