/**
 * Turns successive /ws/stats snapshots into per-second rates over a rolling window. A counter that
 * goes down (the server restarted) breaks the series there instead of drawing a negative rate.
 */
import type { StatsSnapshot } from './api.ts';

export const WINDOW_SECONDS = 300;

export interface RatePoint {
  /** Seconds since the epoch (server clock). */
  t: number;
  writesPerSec: number | null;
  commitsPerSec: number | null;
  fdatasyncsPerSec: number | null;
  groupsPerSec: number | null;
  /** Documents per group over the interval (null when no group committed). */
  docsPerGroup: number | null;
  /** Write operations per group over the interval. */
  opsPerGroup: number | null;
  httpRequestsPerSec: number | null;
  driverQueriesPerSec: number | null;
  journalBytesPerSec: number | null;
  /** Read calls (get, scan, count…) per second. */
  readsPerSec: number | null;
  /** Commit latency percentiles over the interval (µs, bucket upper bounds); null with no commit. */
  commitP50Us: number | null;
  commitP99Us: number | null;
  journalBytesSinceCheckpoint: number;
  checkpoints: number;
  /** Engine memory (bytes): memtables (active + frozen), block cache, the budget (null on an engine without them). */
  memtableBytes: number | null;
  cacheBytes: number | null;
  memoryBudget: number | null;
  /** Pacing: the write-rate limit (bytes/s, 0 = none) and the debt behind it (bytes). */
  writeRateLimitBps: number | null;
  pacingDebtBytes: number | null;
}

export interface StatsHistory {
  latest: StatsSnapshot | null;
  points: RatePoint[];
}

export const emptyHistory: StatsHistory = { latest: null, points: [] };

/** A finite number, or null (fields an older engine does not report). */
function num(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

export function addSnapshot(h: StatsHistory, s: StatsSnapshot): StatsHistory {
  const prev = h.latest;
  const point: RatePoint = {
    t: s.time / 1000,
    writesPerSec: null,
    commitsPerSec: null,
    fdatasyncsPerSec: null,
    groupsPerSec: null,
    docsPerGroup: null,
    opsPerGroup: null,
    httpRequestsPerSec: null,
    driverQueriesPerSec: null,
    journalBytesPerSec: null,
    readsPerSec: null,
    commitP50Us: null,
    commitP99Us: null,
    journalBytesSinceCheckpoint: s.engine.journalBytesSinceCheckpoint,
    checkpoints: s.engine.checkpoints,
    memtableBytes:
      num(s.engine.memtableBytes) === null
        ? null
        : (num(s.engine.memtableBytes) ?? 0) + (num(s.engine.frozenMemtableBytes) ?? 0),
    cacheBytes: num(s.engine.cacheBytes),
    memoryBudget: num(s.engine.memoryBudget),
    writeRateLimitBps: num(s.engine.writeRateLimitBps),
    pacingDebtBytes: num(s.engine.pacingDebtBytes),
  };
  if (prev && s.time > prev.time) {
    const dt = (s.time - prev.time) / 1000;
    const rate = (a: number, b: number): number | null => (b >= a ? (b - a) / dt : null);
    point.writesPerSec = rate(prev.engine.documentsWritten, s.engine.documentsWritten);
    point.commitsPerSec = rate(prev.engine.commits, s.engine.commits);
    point.fdatasyncsPerSec = rate(prev.engine.fdatasyncs, s.engine.fdatasyncs);
    point.groupsPerSec = rate(prev.engine.groups, s.engine.groups);
    point.httpRequestsPerSec = rate(prev.server.httpRequests, s.server.httpRequests);
    point.driverQueriesPerSec = rate(prev.server.driverQueries, s.server.driverQueries);
    point.journalBytesPerSec = rate(prev.engine.bytesJournaled, s.engine.bytesJournaled);
    point.readsPerSec = rate(prev.engine.reads, s.engine.reads);
    const commits = s.engine.commitLatencyHistogramUs.map((n, i) => n - (prev.engine.commitLatencyHistogramUs[i] ?? 0));
    point.commitP50Us = histogramPercentile(commits, 0.5);
    point.commitP99Us = histogramPercentile(commits, 0.99);
    const groups = s.engine.groups - prev.engine.groups;
    if (groups > 0) {
      const docs = s.engine.documentsWritten - prev.engine.documentsWritten;
      const ops = s.engine.commits - prev.engine.commits;
      point.docsPerGroup = docs >= 0 ? docs / groups : null;
      point.opsPerGroup = ops >= 0 ? ops / groups : null;
    }
  }
  const cutoff = point.t - WINDOW_SECONDS;
  const points = h.points.filter((p) => p.t >= cutoff && p.t < point.t);
  points.push(point);
  return { latest: s, points };
}

/** The upper bound of the bucket holding quantile `q` of a power-of-two µs histogram (the engine's). */
export function histogramPercentile(buckets: number[], q: number): number | null {
  const total = buckets.reduce((a, b) => a + Math.max(0, b), 0);
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (let i = 0; i < buckets.length; i++) {
    seen += Math.max(0, buckets[i]);
    if (seen >= rank) return 2 ** (i + 1) - 1;
  }
  return null;
}
