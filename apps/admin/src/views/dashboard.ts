/**
 * Dashboard: live engine and server counters from /ws/stats over the last five minutes.
 * Commit latency is the engine's: from the committer taking a group to its fdatasync returning,
 * percentiles per interval from its power-of-two histogram.
 */
import { html } from 'htm/preact';
import { useMemo } from 'preact/hooks';
import type { FeedState } from '../api.ts';
import { TimeChart } from '../charts/time-chart.ts';
import { formatBytes, formatCount, formatDuration, formatNumber } from '../format.ts';
import type { RatePoint, StatsHistory } from '../stats-history.ts';

/** A latency in µs as text, from a bucket's upper bound. */
function micros(us: number | null | undefined): string {
  if (us === null || us === undefined) return '–';
  return us >= 1000 ? `${formatNumber(us / 1000)} ms` : `${formatNumber(us)} µs`;
}

export interface DashboardProps {
  history: StatsHistory;
  feed: FeedState;
  feedDetail?: string;
}

function col(points: RatePoint[], f: (p: RatePoint) => number | null): (number | null)[] {
  return points.map(f);
}

function last(points: RatePoint[], f: (p: RatePoint) => number | null): number | null {
  for (let i = points.length - 1; i >= 0; i--) {
    const v = f(points[i] as RatePoint);
    if (v !== null) return v;
  }
  return null;
}

function Stat(props: { id: string; label: string; value: string; hint?: string }) {
  return html`<div class="stat" data-testid=${`stat-${props.id}`}>
    <div class="stat-label">${props.label}</div>
    <div class="stat-value">${props.value}</div>
    ${props.hint ? html`<div class="stat-hint">${props.hint}</div>` : null}
  </div>`;
}

export function Dashboard({ history, feed, feedDetail }: DashboardProps) {
  const { latest, points } = history;
  const data = useMemo(() => {
    const xs = points.map((p) => p.t);
    return {
      writes: [
        xs,
        col(points, (p) => p.writesPerSec),
        col(points, (p) => p.commitsPerSec),
        col(points, (p) => p.fdatasyncsPerSec),
      ] as [number[], ...(number | null)[][]],
      groups: [xs, col(points, (p) => p.docsPerGroup), col(points, (p) => p.opsPerGroup)] as [
        number[],
        ...(number | null)[][],
      ],
      requests: [xs, col(points, (p) => p.httpRequestsPerSec), col(points, (p) => p.driverQueriesPerSec)] as [
        number[],
        ...(number | null)[][],
      ],
      journal: [xs, col(points, (p) => p.journalBytesSinceCheckpoint), col(points, (p) => p.journalBytesPerSec)] as [
        number[],
        ...(number | null)[][],
      ],
      memory: [
        xs,
        col(points, (p) => p.memtableBytes),
        col(points, (p) => p.cacheBytes),
        col(points, (p) => p.memoryBudget),
      ] as [number[], ...(number | null)[][]],
      pacing: [xs, col(points, (p) => p.writeRateLimitBps), col(points, (p) => p.pacingDebtBytes)] as [
        number[],
        ...(number | null)[][],
      ],
    };
  }, [points]);

  if (!latest) {
    return html`<section class="view" data-testid="view-dashboard">
      <h2>Dashboard</h2>
      <p class="muted">${feed === 'live' ? 'Waiting for the first stats message…' : `Connecting to /ws/stats… ${feedDetail ?? ''}`}</p>
    </section>`;
  }
  const e = latest.engine;
  const s = latest.server;
  const n = (v: number | null, suffix = ''): string => (v === null ? '–' : `${formatNumber(v)}${suffix}`);
  // Memory, pacing, runs and compression (engines with a memory budget; '–' when a field is absent).
  const f = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  const bytes = (v: unknown): string => {
    const x = f(v);
    return x === null ? '–' : formatBytes(x);
  };
  const count = (v: unknown): string => {
    const x = f(v);
    return x === null ? '–' : formatCount(x);
  };
  const memtables = f(e.memtableBytes) === null ? null : (f(e.memtableBytes) ?? 0) + (f(e.frozenMemtableBytes) ?? 0);
  const budget = f(e.memoryBudget);
  const used = memtables === null ? null : memtables + (f(e.cacheBytes) ?? 0);
  const hits = f(e.cacheHits) ?? 0;
  const lookups = hits + (f(e.cacheMisses) ?? 0);
  const limit = f(e.writeRateLimitBps);
  const ratio = f(e.compressionRatio);

  return html`<section class="view" data-testid="view-dashboard">
    <h2>Dashboard</h2>
    ${e.poisoned ? html`<div class="error" role="alert">The engine is poisoned: a write or fdatasync failed. Every write fails until the server is restarted (see the server log).</div>` : null}
    <div class="stats-grid">
      <${Stat} id="writes" label="documents written / s" value=${n(last(points, (p) => p.writesPerSec))} hint=${`${formatCount(e.documentsWritten)} since open`} />
      <${Stat} id="fdatasyncs" label="fdatasyncs / s" value=${n(last(points, (p) => p.fdatasyncsPerSec))} hint=${`${formatCount(e.fdatasyncs)} since open`} />
      <${Stat} id="group" label="documents / group" value=${n(last(points, (p) => p.docsPerGroup))} hint=${`largest group: ${formatNumber(e.maxGroupOps)} ops`} />
      <${Stat} id="reads" label="reads / s" value=${n(last(points, (p) => p.readsPerSec))} hint=${`${formatCount(e.reads)} reads, ${formatCount(e.documentsRead)} documents since open`} />
      <${Stat} id="commit-latency" label="commit latency p50 / p99" value=${`${micros(last(points, (p) => p.commitP50Us))} / ${micros(last(points, (p) => p.commitP99Us))}`} hint=${`since open: ${micros(e.commitLatencyP50Us || null)} / ${micros(e.commitLatencyP99Us || null)} (≤, µs buckets)`} />
      <${Stat} id="requests" label="HTTP requests / s" value=${n(last(points, (p) => p.httpRequestsPerSec))} hint=${`driver queries: ${n(
        last(points, (p) => p.driverQueriesPerSec),
        '/s',
      )}`} />
      <${Stat} id="journal" label="journal since checkpoint" value=${formatBytes(e.journalBytesSinceCheckpoint)} hint=${`${formatBytes(e.bytesJournaled)} journaled since open`} />
      <${Stat} id="checkpoints" label="checkpoints" value=${formatCount(e.checkpoints)} hint=${`${formatNumber(e.merges)} merges, ${formatNumber(e.segmentsCreated)} segments created, ${formatNumber(e.segmentsRecycled)} recycled`} />
      <${Stat} id="memory" label="memory: memtables + cache / budget" value=${`${used === null ? '–' : formatBytes(used)} / ${budget === null ? '–' : formatBytes(budget)}`} hint=${`memtables ${memtables === null ? '–' : formatBytes(memtables)} (${bytes(e.frozenMemtableBytes)} being checkpointed), cache ${bytes(e.cacheBytes)}${lookups > 0 ? ` (${formatNumber((100 * hits) / lookups)} % hits)` : ''}`} />
      <${Stat} id="write-rate-limit" label="write-rate limit" value=${limit === null ? '–' : limit > 0 ? `${formatBytes(limit)}/s` : 'none'} hint=${`pacing debt ${bytes(e.pacingDebtBytes)}; flush ${bytes(e.flushRateBps)}/s, merge ${bytes(e.mergeRateBps)}/s`} />
      <${Stat} id="stalls" label="stalls avoided / write stops" value=${`${count(e.stallsAvoided)} / ${count(e.writeStops)}`} hint=${`${count(e.pacedGroups)} paced groups (${formatDuration(f(e.pacingDelayMs) ?? 0)} waited), stops ${formatDuration(f(e.writeStopMs) ?? 0)}`} />
      <${Stat} id="runs" label="runs / merges" value=${`${count(e.runs)} / ${count(e.merges)}`} hint=${`${bytes(e.runBytes)} on disk, ${bytes(e.runIndexBytes)} of indexes and filters; ${count(e.mergeBacklogRuns)} runs waiting to merge`} />
      <${Stat} id="compression" label="journal compression ratio" value=${ratio === null ? '–' : ratio > 0 ? formatNumber(ratio) : 'none yet'} hint=${`${bytes(e.journalBytesSaved)} saved of ${bytes(e.journalBytesUncompressed)}; ${count(e.groupsCompressed)} groups compressed`} />
      <${Stat} id="durable" label="durable / applied seq" value=${`${e.durableSeq} / ${e.appliedSeq}`} hint=${`${formatNumber(s.inflightWrites)} writes in flight`} />
      <${Stat} id="uptime" label="server uptime" value=${formatDuration(s.uptimeMs)} hint=${`${s.wsConnections} ws, ${s.driverConnections} driver connections`} />
    </div>
    <div class="charts">
      <${TimeChart} id="chart-writes" title="Writes and fdatasyncs per second" data=${data.writes} series=${[
        { label: 'documents/s', color: '#2563eb' },
        { label: 'write ops/s', color: '#7c3aed' },
        { label: 'fdatasyncs/s', color: '#dc2626', scale: 'y2' },
      ]} />
      <${TimeChart} id="chart-groups" title="Average group size" data=${data.groups} series=${[
        { label: 'documents/group', color: '#059669' },
        { label: 'ops/group', color: '#d97706', scale: 'y2' },
      ]} />
      <${TimeChart} id="chart-requests" title="Requests per second" data=${data.requests} series=${[
        { label: 'HTTP requests/s', color: '#0891b2' },
        { label: 'driver queries/s', color: '#be185d' },
      ]} />
      <${TimeChart} id="chart-journal" title="Journal" data=${data.journal} series=${[
        { label: 'bytes since checkpoint', color: '#4b5563', format: formatBytes },
        { label: 'journaled/s', color: '#2563eb', scale: 'y2', format: (v: number) => `${formatBytes(v)}/s` },
      ]} yFormat=${formatBytes} y2Format=${(v: number) => `${formatBytes(v)}/s`} />
      <${TimeChart} id="chart-memory" title="Memory vs budget" data=${data.memory} series=${[
        { label: 'memtables', color: '#2563eb', format: formatBytes },
        { label: 'block cache', color: '#059669', format: formatBytes },
        { label: 'budget', color: '#dc2626', format: formatBytes },
      ]} yFormat=${formatBytes} />
      <${TimeChart} id="chart-pacing" title="Write pacing" data=${data.pacing} series=${[
        { label: 'write-rate limit (0 = none)', color: '#7c3aed', format: (v: number) => `${formatBytes(v)}/s` },
        { label: 'pacing debt', color: '#d97706', scale: 'y2', format: formatBytes },
      ]} yFormat=${(v: number) => `${formatBytes(v)}/s`} y2Format=${formatBytes} />
    </div>
    <p class="muted small" data-testid="dashboard-notes">
      Live from <code>/ws/stats</code> (one snapshot a second, the last ${Math.round(300 / 60)} minutes, kept while this page is open).
      Commit latency is the engine's, from taking a group to its fdatasync returning, for groups with hard writes or <code>sync()</code>;
      percentiles are upper bounds of power-of-two buckets.
      Recovery at open: ${formatNumber(e.recordsReplayed)} records replayed in ${formatDuration(e.recoveryMs)}.
    </p>
  </section>`;
}
