// `sustained` (seed 003): the loader (batched soft writes, 4 in flight) on the embedded engine,
// fed ~150 B documents at full speed for N minutes (default 10, --quick 1), crossing many
// checkpoints. Per-10-s throughput, 1-s intervals with no completion (stalls), worst / median
// 10-s interval, max and p99.9 insert latency, fdatasyncs per second (seed 004).

import { join } from 'node:path';
import { median, round } from '../lib/stats.js';
import { fmtRate } from '../lib/table.js';
import { worker, type BenchContext, type ScenarioResult } from './common.js';

interface Interval { t: number; docs: number; seconds: number; p50?: number; p99?: number; max?: number }
interface SustainedOut {
  docs: number; wall_s: number; docs_per_s: number;
  latency_ms: { p50: number; p90: number; p99: number; 'p99.9': number; max: number; mean: number };
  final_sync_ms: number | null; zero_intervals: number; intervals: Interval[]; intervals10s: Interval[];
  fdatasyncs_per_s_10s: { t: number; fdatasyncs: number; checkpoints: number }[]; fdatasyncs: number; checkpoints: number; segments_recycled: number;
  peak_rss_mb: number; rss_limit_mb: number; stopped_for_memory: { at_s: number; rss_mb: number } | null;
}

export async function sustained(ctx: BenchContext): Promise<ScenarioResult> {
  const seconds = Math.round(ctx.minutes * 60);
  ctx.log(`sustained: the loader on the embedded engine at full speed for ${seconds} s …`);
  const s = await worker<SustainedOut>(ctx, ['sustained', '--dir', join(ctx.dir, 'sustained'), '--seconds', String(seconds)]);
  // Full 10-s intervals only (the last one may be short).
  const full = s.intervals10s.filter((i) => i.seconds >= 9.99);
  const per10 = full.map((i) => i.docs / i.seconds);
  const worst = Math.min(...per10);
  const med = median(per10);
  const fds = s.fdatasyncs_per_s_10s.map((x) => x.fdatasyncs);
  ctx.log(`  ${s.docs.toLocaleString('en-US')} docs in ${s.wall_s.toFixed(1)} s, ${fmtRate(s.docs_per_s)}, ${s.zero_intervals} zero intervals, ${s.checkpoints} checkpoints`);
  const l = s.latency_ms;
  const mem = s.stopped_for_memory
    ? `STOPPED EARLY at ${s.stopped_for_memory.at_s} s: RSS ${s.stopped_for_memory.rss_mb} MB > limit ${s.rss_limit_mb} MB (the engine keeps every table in memory)`
    : `peak RSS ${s.peak_rss_mb} MB (limit ${s.rss_limit_mb} MB)`;
  if (s.stopped_for_memory) ctx.log(`  ${mem}`);
  return {
    name: 'sustained',
    rows: [
      { scenario: 'sustained', measure: `loader → embedded, ${seconds} s at full speed: docs/s overall`, value: `${fmtRate(s.docs_per_s)} (${s.docs.toLocaleString('en-US')} docs, final sync ${s.final_sync_ms === null ? '–' : round(s.final_sync_ms, 1)} ms)` },
      { scenario: 'sustained', measure: 'memory of the loading process', value: mem, met: s.stopped_for_memory ? false : undefined, goal: s.stopped_for_memory ? `run the full ${seconds} s` : undefined },
      { scenario: 'sustained', measure: 'per 10 s: worst / median interval', value: `${fmtRate(worst / 1)} / ${fmtRate(med)}`, ratio: worst / med, ratioText: `${(worst / med).toFixed(2)} worst÷median` },
      { scenario: 'sustained', measure: '1-s intervals with zero completions (stalls)', value: String(s.zero_intervals), goal: '0 (seed 003)', met: s.zero_intervals === 0 },
      { scenario: 'sustained', measure: 'insert latency: p99.9 / max', value: `${round(l['p99.9'], 1)} ms / ${round(l.max, 1)} ms (p50 ${round(l.p50, 1)}, p99 ${round(l.p99, 1)} ms; from hand-over to the loader)` },
      { scenario: 'sustained', measure: 'fdatasyncs per second (per 10 s: median / max)', value: `${round(median(fds), 1)} / ${round(Math.max(...fds, 0), 1)}; ${s.checkpoints} checkpoints, ${s.segments_recycled} segments recycled` },
    ],
    charts: [
      { id: 'sustained-10s', title: 'sustained: docs/s per 10-s interval', xLabel: 's', yLabel: 'docs/s', x: s.intervals10s.map((i) => i.t), series: [{ label: 'docs/s (10 s)', values: s.intervals10s.map((i) => Math.round(i.docs / Math.max(i.seconds, 1e-9))) }], bars: true },
      { id: 'sustained-1s', title: 'sustained: docs/s per 1-s interval, and fdatasyncs/s per 10 s', xLabel: 's', yLabel: 'docs/s', y2Label: 'fdatasyncs/s', x: s.intervals.map((i) => i.t), series: [
        { label: 'docs/s (1 s)', values: s.intervals.map((i) => Math.round(i.docs / Math.max(i.seconds, 1e-9))) },
        { label: 'fdatasyncs/s (10 s)', values: s.intervals.map((i) => { const f = s.fdatasyncs_per_s_10s.find((x) => x.t >= i.t - 1e-6); return f ? round(f.fdatasyncs, 1) : null; }), axis: 'y2' },
      ] },
      { id: 'sustained-latency', title: 'sustained: insert latency per 1-s interval (ms): p50, p99, max', xLabel: 's', yLabel: 'ms', logY: true, x: s.intervals.map((i) => i.t), series: [
        { label: 'p50', values: s.intervals.map((i) => i.p50 ?? null) },
        { label: 'p99', values: s.intervals.map((i) => i.p99 ?? null) },
        { label: 'max', values: s.intervals.map((i) => i.max ?? null) },
      ] },
    ],
    samples: { seconds, ...s },
  };
}
