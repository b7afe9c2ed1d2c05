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
  journalBytesSinceCheckpoint: number;
  checkpoints: number;
}

export interface StatsHistory {
  latest: StatsSnapshot | null;
  points: RatePoint[];
}

export const emptyHistory: StatsHistory = { latest: null, points: [] };

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
    journalBytesSinceCheckpoint: s.engine.journalBytesSinceCheckpoint,
    checkpoints: s.engine.checkpoints,
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
