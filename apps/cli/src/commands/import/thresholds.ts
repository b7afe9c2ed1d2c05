/**
 * k6-style pass/fail thresholds: `--fail-if 'p99<5ms'` makes the import exit non-zero when the
 * condition is false at the end. Several may be given; each is checked against the report.
 *
 *   metric  op  value[unit]
 *   p50 p90 p99 p99.9 (also p(99), med) max mean|avg    per-document latency   (default unit ms)
 *   final_sync                                            final sync duration    (default unit ms)
 *   wall                                                  wall time              (default unit s)
 *   rate | docs_per_sec                                   documents per second   (k, M suffixes)
 *   rejected written read missing stalls retries          counts                 (k, M suffixes)
 *   op: < <= > >= == !=      time units: us, ms, s, m, h
 */

export type Op = '<' | '<=' | '>' | '>=' | '==' | '!=';

export interface Threshold {
  expr: string;
  metric: Metric;
  op: Op;
  /** In the metric's base unit (ms for latency and final_sync, s for wall, plain numbers otherwise). */
  value: number;
}

type Metric =
  | 'p50'
  | 'p90'
  | 'p99'
  | 'p99.9'
  | 'max'
  | 'mean'
  | 'final_sync'
  | 'wall'
  | 'rate'
  | 'rejected'
  | 'written'
  | 'read'
  | 'missing'
  | 'stalls'
  | 'retries';

const ALIASES: Record<string, Metric> = {
  p50: 'p50',
  med: 'p50',
  median: 'p50',
  p90: 'p90',
  p99: 'p99',
  'p99.9': 'p99.9',
  p999: 'p99.9',
  max: 'max',
  mean: 'mean',
  avg: 'mean',
  final_sync: 'final_sync',
  sync: 'final_sync',
  finalsync: 'final_sync',
  wall: 'wall',
  duration: 'wall',
  rate: 'rate',
  docs_per_sec: 'rate',
  throughput: 'rate',
  rejected: 'rejected',
  written: 'written',
  read: 'read',
  missing: 'missing',
  stalls: 'stalls',
  zero_intervals: 'stalls',
  retries: 'retries',
};

const TIME_MS: Record<string, number> = { us: 0.001, µs: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const COUNT: Record<string, number> = { '': 1, k: 1e3, K: 1e3, m: 1e6, M: 1e6 };

function kind(m: Metric): 'latency' | 'wall' | 'count' {
  if (m === 'wall') return 'wall';
  if (
    m === 'rate' ||
    m === 'rejected' ||
    m === 'written' ||
    m === 'read' ||
    m === 'missing' ||
    m === 'stalls' ||
    m === 'retries'
  )
    return 'count';
  return 'latency';
}

export const METRICS: readonly string[] = Object.keys(ALIASES);

/** Parses one threshold; throws an Error whose message says what is wrong. */
export function parseThreshold(expr: string): Threshold {
  const m =
    /^\s*([a-z_]+(?:\([\d.]+\))?|p[\d.]+)\s*(<=|>=|==|!=|<|>)\s*(-?[\d.]+(?:e[+-]?\d+)?)\s*([a-zµ/]*)\s*$/i.exec(expr);
  if (!m)
    throw new Error(
      `cannot read threshold ${JSON.stringify(expr)} (expected e.g. 'p99<5ms', 'rate>10000', 'rejected==0')`,
    );
  let name = m[1]!.toLowerCase();
  const pf = /^p\(([\d.]+)\)$/.exec(name);
  if (pf) name = `p${pf[1]}`;
  const metric = ALIASES[name];
  if (!metric)
    throw new Error(`unknown metric ${JSON.stringify(m[1])} in ${JSON.stringify(expr)} (known: ${METRICS.join(', ')})`);
  const op = m[2] as Op;
  const n = Number(m[3]);
  if (!Number.isFinite(n)) throw new Error(`bad number in ${JSON.stringify(expr)}`);
  let unit = m[4]!;
  const k = kind(metric);
  let value: number;
  if (k === 'count') {
    if (unit.endsWith('/s')) unit = unit.slice(0, -2);
    const f = COUNT[unit];
    if (f === undefined)
      throw new Error(`bad unit ${JSON.stringify(m[4])} in ${JSON.stringify(expr)} (counts take k or M)`);
    value = n * f;
  } else {
    const f = unit === '' ? (k === 'wall' ? 1000 : 1) : TIME_MS[unit];
    if (f === undefined)
      throw new Error(`bad unit ${JSON.stringify(m[4])} in ${JSON.stringify(expr)} (use us, ms, s, m or h)`);
    value = k === 'wall' ? (n * f) / 1000 : n * f;
  }
  return { expr, metric, op, value };
}

/** The figures thresholds are checked against (a subset of the report). */
export interface ThresholdInput {
  latencyMs: { p50: number; p90: number; p99: number; 'p99.9': number; max: number; mean: number };
  finalSyncMs: number | null;
  wallSeconds: number;
  docsPerSec: number;
  documents: { read: number; written: number; rejected: number; missing: number };
  zeroIntervals: number;
  retries: number;
}

export interface ThresholdResult {
  expr: string;
  metric: string;
  op: Op;
  limit: number;
  actual: number | null;
  ok: boolean;
}

function actualOf(t: Threshold, r: ThresholdInput): number | null {
  switch (t.metric) {
    case 'p50':
    case 'p90':
    case 'p99':
    case 'p99.9':
    case 'max':
    case 'mean':
      return r.latencyMs[t.metric];
    case 'final_sync':
      return r.finalSyncMs;
    case 'wall':
      return r.wallSeconds;
    case 'rate':
      return r.docsPerSec;
    case 'stalls':
      return r.zeroIntervals;
    case 'retries':
      return r.retries;
    default:
      return r.documents[t.metric];
  }
}

function compare(a: number, op: Op, b: number): boolean {
  switch (op) {
    case '<':
      return a < b;
    case '<=':
      return a <= b;
    case '>':
      return a > b;
    case '>=':
      return a >= b;
    case '==':
      return a === b;
    case '!=':
      return a !== b;
  }
}

/** Checks each threshold. A metric with no value (e.g. no final sync was made) fails. */
export function evaluateThresholds(ts: readonly Threshold[], r: ThresholdInput): ThresholdResult[] {
  return ts.map((t) => {
    const actual = actualOf(t, r);
    return {
      expr: t.expr,
      metric: t.metric,
      op: t.op,
      limit: t.value,
      actual,
      ok: actual !== null && compare(actual, t.op, t.value),
    };
  });
}
