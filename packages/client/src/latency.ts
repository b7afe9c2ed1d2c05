/**
 * Latency and throughput: per-document latency from the moment a document was handed to the
 * loader (its intended start, so slow acknowledgements are not hidden behind backpressure) to its
 * acknowledgement, in HDR histograms (microseconds, 3 significant digits); completions per
 * interval; intervals with none are stalls.
 */
import type { Interval, LatencyMs } from './types.js';

const LOWEST_US = 1;
const HIGHEST_US = 3_600_000_000; // one hour

/** What latencyOf reads: a CountHistogram, or one of node:perf_hooks' histograms. */
export interface HistogramLike {
  readonly count: number;
  readonly max: number;
  readonly mean: number;
  percentile(p: number): number;
}

// HdrHistogram's layout for values 1 to 2^32 at 3 significant digits: 2048 sub-buckets, the
// lower half of each bucket after the first shared with the bucket before.
const SUB_BUCKET_HALF_MAGNITUDE = 10;
const SUB_BUCKET_HALF = 1 << SUB_BUCKET_HALF_MAGNITUDE;
const SUB_BUCKET_MASK = 2 * SUB_BUCKET_HALF - 1;
const COUNTS = (32 - SUB_BUCKET_HALF_MAGNITUDE + 1) * SUB_BUCKET_HALF; // indexes of values below 2^32

function indexOf(v: number): number {
  const bucket = 32 - Math.clz32(v | SUB_BUCKET_MASK) - (SUB_BUCKET_HALF_MAGNITUDE + 1);
  return ((bucket + 1) << SUB_BUCKET_HALF_MAGNITUDE) + ((v >>> bucket) - SUB_BUCKET_HALF);
}

/** [lowest, highest] value counted at index i. */
function rangeOf(i: number): [number, number] {
  let bucket = (i >> SUB_BUCKET_HALF_MAGNITUDE) - 1;
  let sub = (i & (SUB_BUCKET_HALF - 1)) + SUB_BUCKET_HALF;
  if (bucket < 0) {
    sub -= SUB_BUCKET_HALF;
    bucket = 0;
  }
  const low = sub * 2 ** bucket;
  return [low, low + 2 ** bucket - 1];
}

/**
 * An HDR histogram of integer microseconds (1 µs to one hour, 3 significant digits, as
 * node:perf_hooks' createHistogram) that records a value many times in one call: a block's
 * documents share one latency, and recording each on its own was a sixth of an import's time.
 */
export class CountHistogram implements HistogramLike {
  #counts = new Float64Array(COUNTS);
  #lo = COUNTS; // lowest and highest index in use
  #hi = -1;
  #count = 0;
  #sum = 0;
  #min = 0;
  #max = 0;

  /** Records `value` (µs, clamped to 1 µs … one hour) `times` times. */
  record(value: number, times = 1): void {
    if (!(times > 0)) return;
    const v = Math.min(HIGHEST_US, Math.max(LOWEST_US, Math.round(value)));
    const i = indexOf(v);
    this.#counts[i]! += times;
    if (i < this.#lo) this.#lo = i;
    if (i > this.#hi) this.#hi = i;
    if (this.#count === 0 || v < this.#min) this.#min = v;
    if (v > this.#max) this.#max = v;
    this.#count += times;
    this.#sum += v * times;
  }

  add(other: CountHistogram): void {
    if (other.#count === 0) return;
    const from = other.#counts;
    const to = this.#counts;
    for (let i = other.#lo; i <= other.#hi; i++) to[i]! += from[i]!;
    if (this.#count === 0 || other.#min < this.#min) this.#min = other.#min;
    if (other.#max > this.#max) this.#max = other.#max;
    this.#lo = Math.min(this.#lo, other.#lo);
    this.#hi = Math.max(this.#hi, other.#hi);
    this.#count += other.#count;
    this.#sum += other.#sum;
  }

  reset(): void {
    if (this.#hi >= 0) this.#counts.fill(0, this.#lo, this.#hi + 1);
    this.#lo = COUNTS;
    this.#hi = -1;
    this.#count = 0;
    this.#sum = 0;
    this.#min = 0;
    this.#max = 0;
  }

  get count(): number {
    return this.#count;
  }

  get min(): number {
    return this.#count === 0 ? 0 : rangeOf(indexOf(this.#min))[0];
  }

  /** The highest value equivalent to the largest recorded (as HdrHistogram reports it). */
  get max(): number {
    return this.#count === 0 ? 0 : rangeOf(indexOf(this.#max))[1];
  }

  get mean(): number {
    return this.#count === 0 ? 0 : this.#sum / this.#count;
  }

  /** The value at percentile p (0–100): the highest value equivalent to the one there. */
  percentile(p: number): number {
    if (this.#count === 0) return 0;
    const target = Math.max(1, Math.floor((Math.min(100, Math.max(0, p)) / 100) * this.#count + 0.5));
    let seen = 0;
    for (let i = this.#lo; i <= this.#hi; i++) {
      seen += this.#counts[i]!;
      if (seen >= target) return rangeOf(i)[1];
    }
    return this.max;
  }
}

function newHistogram(): CountHistogram {
  return new CountHistogram();
}

/** Summarizes a histogram of microseconds in milliseconds. */
export function latencyOf(h: HistogramLike): LatencyMs {
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
    this.#interval.record(clampUs(ackMs - startMs), count);
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
