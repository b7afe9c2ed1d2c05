// Small statistics helpers for the benchmarks. Pure functions, no I/O.

export function sorted(xs: readonly number[]): number[] {
  return [...xs].sort((a, b) => a - b);
}

/** Median (mean of the two middle values for an even count). NaN for an empty list. */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = sorted(xs);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Nearest-rank percentile, p in [0, 100]. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = sorted(xs);
  const idx = Math.min(s.length - 1, Math.max(0, Math.round((p / 100) * (s.length - 1))));
  return s[idx]!;
}

/**
 * The upper bound (µs) of the power-of-two bucket holding quantile q (0–1) of an engine latency
 * histogram (bucket i counts 2^i to 2^(i+1)-1 µs), as the engine itself reports it; 0 when empty.
 */
export function bucketPercentileUs(buckets: readonly number[], q: number): number {
  const total = buckets.reduce((s, n) => s + n, 0);
  if (total === 0) return 0;
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (let i = 0; i < buckets.length; i++) {
    seen += buckets[i]!;
    if (seen >= rank) return 2 ** (i + 1) - 1;
  }
  return 2 ** buckets.length - 1;
}

export function mean(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  let t = 0;
  for (const x of xs) t += x;
  return t / xs.length;
}

export interface Distribution {
  n: number;
  min: number;
  median: number;
  mean: number;
  p90: number;
  p99: number;
  max: number;
}

export function summarize(xs: readonly number[], digits = 1): Distribution {
  const r = (x: number) => round(x, digits);
  return {
    n: xs.length,
    min: r(percentile(xs, 0)),
    median: r(median(xs)),
    mean: r(mean(xs)),
    p90: r(percentile(xs, 90)),
    p99: r(percentile(xs, 99)),
    max: r(percentile(xs, 100)),
  };
}

/** Element-wise a[i] / b[i]: the ratio of each interleaved pair. */
export function pairRatios(a: readonly number[], b: readonly number[]): number[] {
  if (a.length !== b.length) throw new Error(`pairRatios: ${a.length} vs ${b.length} samples`);
  return a.map((x, i) => x / b[i]!);
}

/**
 * The figure every goal is judged on: the median over pairs of (measured / reference), each pair
 * run back to back. Taking the ratio inside a pair first cancels the disk's slow drift; the median
 * then drops a pair that one fdatasync stall spoiled.
 */
export function medianOfRatios(a: readonly number[], b: readonly number[]): number {
  return median(pairRatios(a, b));
}

export function round(x: number, digits = 3): number {
  if (!Number.isFinite(x)) return x;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
