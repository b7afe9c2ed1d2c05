// `sustained` (seed 003, and the acceptance scenario of the larger-than-memory issue): the loader
// (batched soft writes, 4 in flight) fed ~150 B documents at full speed for N minutes (default
// 10, --quick 1), on two targets one after the other, both opened with a memory budget
// (--memory-budget-mb, default 64 here):
//   embedded: the engine in the worker process;
//   server:   a real Wharf server process (lib/server-proc.ts, WHARF_MEMORY_BUDGET_MB), loaded
//             through the loader's wharf:// target.
// Alongside each load, a reader makes point gets of already-acknowledged keys at 200/s (embedded:
// table.get in the same process; server: GET /api/tables/:t/documents/:key). Per target: bytes
// loaded ÷ budget, zero-throughput 10-s intervals, worst ÷ median 10-s interval, max and p99.9
// insert latency, fdatasyncs vs groups + segment rotations, point-get p99, peak RSS vs budget,
// and the pacing counters at the end.
//
// Each target writes and then deletes ~20 GB. On this VM that leaves, for 30 s and more,
// fdatasync 2–4× slower with 40–95 ms peaks (a probe loop after deleting a 12 GB file), and CPU
// steal of 10–25%: the hypervisor holds a vCPU for up to a second, which stopped both the
// loader's and the server's event loops for 0.5–1.4 s in the server target's first 30 s (after
// writing and deleting 18 GB with dd, reproduced; lib/steal.ts). So before each target, and after
// the last (for the next scenario), the scenario waits until the raw fdatasync loop is back to the
// baseline it measured at the start and the steal is low (settle()).

import { join } from 'node:path';
import { median, round } from '../lib/stats.js';
import { cpuTimes, stealShare } from '../lib/steal.js';
import { fmtRate } from '../lib/table.js';
import { type BenchContext, type ChartSpec, limitRun, type Row, type ScenarioResult, worker } from './common.js';

/** The bench's default memory budget: small, so that 10 minutes write far more than 3 × it. */
export const SUSTAINED_MEMORY_BUDGET_MB = 64;
/** Point gets per second during the load. */
export const SUSTAINED_READS_PER_S = 200;

interface Interval {
  t: number;
  docs: number;
  seconds: number;
  p50?: number;
  p99?: number;
  max?: number;
}
interface EngineSample {
  t: number;
  rss: number;
  steal?: number;
  memtableBytes: number;
  frozenMemtableBytes: number;
  cacheBytes: number;
  runs: number;
  writeRateLimitBps: number;
  pacingDebtBytes: number;
  mergeBacklogRuns: number;
  pacedGroups: number;
  writeStops: number;
  stallsAvoided: number;
}
interface SustainedOut {
  target: 'embedded' | 'server';
  memory_budget_bytes: number;
  engine_memory_budget: number;
  docs: number;
  bytes_loaded: number;
  missing: number;
  wall_s: number;
  docs_per_s: number;
  latency_ms: { p50: number; p90: number; p99: number; 'p99.9': number; max: number; mean: number };
  batch_latency_ms: { p50: number; p90: number; p99: number; 'p99.9': number; max: number; mean: number };
  batch_size: number;
  final_sync_ms: number | null;
  zero_intervals: number;
  intervals: Interval[];
  intervals10s: Interval[];
  fdatasyncs_per_s_10s: { t: number; fdatasyncs: number; checkpoints: number }[];
  fdatasyncs: number;
  groups: number;
  segment_rotations: number;
  checkpoints: number;
  segments_recycled: number;
  engine_end: Record<string, number>;
  engine_samples: EngineSample[];
  max_write_rate_limit_bps: number;
  max_pacing_debt_bytes: number;
  peak_engine_memory_bytes: number;
  reads: {
    rate_per_s: number;
    gets: number;
    misses: number;
    errors: number;
    skipped: number;
    ms: { p50: number; p99: number; 'p99.9': number; max: number; mean: number } | null;
  };
  rss_start_mb: number;
  peak_rss_mb: number;
  rss_limit_mb: number;
  stopped_for_memory: { at_s: number; rss_mb: number } | null;
  stopped_for_disk: { at_s: number; free_gb: number } | null;
  inflight_limits?: number[];
  event_loop_delay_ms?: { p50: number; p99: number; 'p99.9': number; max: number };
  gc_pauses_ms?: Record<string, { count: number; total: number; max: number }>;
  server_event_loop_delay_ms?: { p99_median: number; max: number } | null;
  server_gc_pauses_ms?: Record<'major' | 'minor', { count: number; total: number }> | null;
  cpu_steal?: { median: number; max: number; seconds_over_20pct: number };
  write_stages?: Record<string, { count: number; over_4ms: number; over_8ms: number }> | null;
  slowest_seconds?: SlowSecond[];
}

/** One of the seconds with the slowest documents, beside what the worker sampled in it. */
interface SlowSecond {
  t: number;
  max_ms: number;
  steal?: number;
  loop_max_ms?: number;
  gc_max_ms?: number;
  /** Per write stage, the lower bound of the slowest write's power-of-two bucket (ms). */
  stage_max_ms?: Record<string, number>;
}

const MB = 2 ** 20;
const fmtBytes = (b: number) => (b >= 1e9 ? `${(b / 1e9).toFixed(2)} GB` : `${(b / 1e6).toFixed(1)} MB`);
const fmtMBps = (bps: number) => (bps > 0 ? `${(bps / 1e6).toFixed(1)} MB/s` : 'none');

/** How late the loader's event loop ran (it receives every acknowledgement), V8's pauses there, the server's loop, CPU steal, and the engine's write stages. */
function attribution(s: SustainedOut): string {
  const parts: string[] = [];
  const l = s.event_loop_delay_ms;
  if (l) parts.push(`loader process event loop delay p99 ${l.p99}, p99.9 ${l['p99.9']}, max ${l.max} ms`);
  const gc = s.gc_pauses_ms;
  if (gc) {
    const all = Object.values(gc);
    parts.push(
      `GC pauses ${round(all.reduce((t, g) => t + g.total, 0) / 1000, 1)} s in all (${all.reduce((t, g) => t + g.count, 0).toLocaleString('en-US')}), longest ${Math.max(0, ...all.map((g) => g.max))} ms`,
    );
  }
  const srv = s.server_event_loop_delay_ms;
  if (srv)
    parts.push(
      `server event loop delay p99 ${round(srv.p99_median, 1)} ms (median of 10–20-s windows), max ${round(srv.max, 1)} ms`,
    );
  const sgc = s.server_gc_pauses_ms;
  if (sgc)
    parts.push(
      `server GC: ${sgc.major.count} mark-compacts (${sgc.major.total} ms), ${sgc.minor.count} scavenges (${sgc.minor.total} ms)`,
    );
  const st = s.cpu_steal;
  if (st)
    parts.push(
      `CPU stolen by the hypervisor: median ${round(100 * st.median, 1)}%, worst second ${round(100 * st.max, 1)}%, ${st.seconds_over_20pct} s over 20%`,
    );
  const ws = s.write_stages;
  if (ws) {
    const pct = (x: number) => `${round(100 * x, 2)}%`;
    const stage = (name: string, label: string) => {
      const st = ws[name];
      return st?.count ? `${label} ${pct(st.over_4ms)} / ${pct(st.over_8ms)}` : undefined;
    };
    const stages = [
      stage('poolWait', 'pool wait'),
      stage('parse', 'parse'),
      stage('queue', 'engine queue (pacing included)'),
      stage('commit', 'commit'),
      stage('delivery', 'delivery to the event loop'),
    ].filter(Boolean);
    parts.push(
      `${s.target === 'server' ? "the server's engine: writes" : 'writes'} whose stage took over 4 / 8 ms: ${stages.join(', ')}`,
    );
  }
  const lim = s.inflight_limits;
  if (lim?.length)
    parts.push(`batches in flight allowed: ${round(lim.reduce((a, b) => a + b, 0) / lim.length, 2)} on average`);
  return parts.join('; ') || '–';
}

/** The three slowest seconds: each one's slowest document, and where the worker saw time go in it. */
function slowestSeconds(s: SustainedOut): string {
  const out = (s.slowest_seconds ?? []).slice(0, 3).map((x) => {
    const stages = Object.entries(x.stage_max_ms ?? {}).sort((a, b) => b[1] - a[1]);
    const [name, ms] = stages[0] ?? ['', 0];
    return `${x.t} s: ${round(x.max_ms, 1)} ms (loader event loop held ${x.loop_max_ms ?? '–'} ms, GC ${x.gc_max_ms ?? '–'} ms, steal ${round(100 * (x.steal ?? 0), 1)}%, slowest stage${s.target === 'server' ? " in the server's engine" : ''} ${name || '–'} ≥ ${ms >= 1 ? Math.floor(ms) : round(ms, 3)} ms)`;
  });
  return out.join('; ') || '–';
}

function rowsFor(s: SustainedOut, seconds: number, budgetMb: number): Row[] {
  const label = s.target === 'embedded' ? 'loader → embedded' : 'loader → server (wharf://)';
  const m = (measure: string) => `${s.target}: ${measure}`;
  const row = (measure: string, value: string, goal?: string, met?: boolean): Row => ({
    scenario: 'sustained',
    measure: m(measure),
    value,
    goal,
    met,
  });
  // Full 10-s intervals only (the last one may be short).
  const full = s.intervals10s.filter((i) => i.seconds >= 9.99);
  const per10 = full.map((i) => i.docs / i.seconds);
  const zero10 = full.filter((i) => i.docs === 0).length;
  const worst = per10.length ? Math.min(...per10) : 0;
  const med = per10.length ? median(per10) : 0;
  const wm = med > 0 ? worst / med : 0;
  const budget = s.memory_budget_bytes;
  const loadedX = s.bytes_loaded / budget;
  const l = s.latency_ms;
  const b = s.batch_latency_ms;
  const fdsLimit = s.groups + s.segment_rotations;
  const fds = s.fdatasyncs_per_s_10s.map((x) => x.fdatasyncs);
  const e = s.engine_end;
  const r = s.reads;
  const budgetOk = Math.abs(s.engine_memory_budget - budget) <= 1;
  const mem = s.stopped_for_memory
    ? `STOPPED EARLY at ${s.stopped_for_memory.at_s} s: RSS ${s.stopped_for_memory.rss_mb} MB > limit ${s.rss_limit_mb} MB`
    : `peak RSS ${s.peak_rss_mb} MB = ${((s.peak_rss_mb - s.rss_start_mb) / budgetMb).toFixed(1)}× budget above the ${s.rss_start_mb} MB at open (limit ${s.rss_limit_mb} MB); engine memory peak ${fmtBytes(s.peak_engine_memory_bytes)} (memtables + cache), run indexes ${fmtBytes(e.runIndexBytes ?? 0)}`;
  return [
    row(
      `${label}, ${seconds} s at full speed: docs/s overall`,
      `${fmtRate(s.docs_per_s)} (${s.docs.toLocaleString('en-US')} docs in ${s.wall_s.toFixed(1)} s, final sync ${s.final_sync_ms === null ? '–' : round(s.final_sync_ms, 1)} ms${s.missing ? `, ${s.missing} MISSING` : ''})${s.stopped_for_disk ? `; STOPPED EARLY at ${s.stopped_for_disk.at_s} s with ${s.stopped_for_disk.free_gb} GB of disk left` : ''}`,
      s.stopped_for_disk ? `run the full ${seconds} s` : undefined,
      s.stopped_for_disk ? false : undefined,
    ),
    row(
      'bytes loaded ÷ memory budget',
      `${fmtBytes(s.bytes_loaded)} ÷ ${budgetMb} MiB = ${loadedX.toFixed(1)}×${budgetOk ? '' : ` (engine reports a budget of ${fmtBytes(s.engine_memory_budget)}!)`}`,
      '≥ 3',
      loadedX >= 3 && budgetOk,
    ),
    row(
      'zero-throughput 10-s intervals',
      `${zero10} of ${full.length}; 1-s intervals with no completion: ${s.zero_intervals}`,
      '0',
      zero10 === 0 && full.length > 0,
    ),
    {
      ...row('per 10 s: worst ÷ median interval', `${fmtRate(worst)} / ${fmtRate(med)}`, '≥ 0.5', wm >= 0.5),
      ratio: wm,
      ratioText: `${wm.toFixed(2)} worst÷median`,
    },
    row(
      `max insert latency (one insert call: a batch of ${s.batch_size} documents, sent → acknowledged)`,
      `${round(b.max, 1)} ms`,
      '≤ 100 ms',
      b.max <= 100,
    ),
    row(
      'insert latency p99.9',
      `${round(b['p99.9'], 2)} ms (p50 ${round(b.p50, 2)}, p99 ${round(b.p99, 2)} ms)`,
      '≤ 10 ms',
      b['p99.9'] <= 10,
    ),
    row(
      'per document, from hand-over to the loader (queueing in the loader included)',
      `p50 ${round(l.p50, 2)}, p99 ${round(l.p99, 2)}, p99.9 ${round(l['p99.9'], 2)}, max ${round(l.max, 1)} ms`,
    ),
    row(
      'fdatasyncs vs groups + segment rotations',
      `${s.fdatasyncs.toLocaleString('en-US')} vs ${s.groups.toLocaleString('en-US')} + ${s.segment_rotations} = ${fdsLimit.toLocaleString('en-US')}; per s (10 s) median ${round(median(fds), 1)}, max ${round(Math.max(...fds, 0), 1)}`,
      'fdatasyncs ≤ groups + rotations',
      s.fdatasyncs <= fdsLimit,
    ),
    row(
      `point gets during the load (${r.rate_per_s}/s, random acknowledged keys): p99`,
      r.ms
        ? `${round(r.ms.p99, 2)} ms (p50 ${round(r.ms.p50, 2)}, p99.9 ${round(r.ms['p99.9'], 2)}, max ${round(r.ms.max, 1)} ms; ${r.gets.toLocaleString('en-US')} gets${r.misses ? `, ${r.misses} NOT FOUND` : ''}${r.errors ? `, ${r.errors} ERRORS` : ''}${r.skipped ? `, ${r.skipped} skipped` : ''}; ${e.reads ? Math.round((100 * (e.readsFromMemory ?? 0)) / e.reads) : 0}% answered from memory)`
        : `no gets (${r.errors} errors)`,
      '≤ 5 ms',
      !!r.ms && r.ms.p99 <= 5 && r.misses === 0 && r.errors === 0,
    ),
    row(
      "memory: peak RSS of the engine's process vs budget",
      mem,
      s.stopped_for_memory ? `run the full ${seconds} s` : undefined,
      s.stopped_for_memory ? false : undefined,
    ),
    row('where insert latency goes: event loops, GC, CPU steal', attribution(s)),
    row('the slowest seconds, each with what held it', slowestSeconds(s)),
    row(
      'pacing and merges at the end',
      `writeStops ${e.writeStops ?? 0} (${round(e.writeStopMs ?? 0, 0)} ms), stallsAvoided ${e.stallsAvoided ?? 0}, pacedGroups ${(e.pacedGroups ?? 0).toLocaleString('en-US')} (${round(e.pacingDelayMs ?? 0, 0)} ms), max write-rate limit ${fmtMBps(s.max_write_rate_limit_bps)}, merges ${e.merges ?? 0}, runs ${e.runs ?? 0} (${fmtBytes(e.runBytes ?? 0)}), checkpoints ${s.checkpoints}, compression ${e.compressionRatio ? round(e.compressionRatio, 2) : '–'}`,
    ),
  ];
}

function chartsFor(s: SustainedOut): ChartSpec[] {
  const id = (x: string) => `sustained-${s.target}-${x}`;
  const title = (x: string) => `sustained (${s.target}): ${x}`;
  const es = s.engine_samples;
  return [
    {
      id: id('10s'),
      title: title('docs/s per 10-s interval'),
      xLabel: 's',
      yLabel: 'docs/s',
      x: s.intervals10s.map((i) => i.t),
      series: [
        { label: 'docs/s (10 s)', values: s.intervals10s.map((i) => Math.round(i.docs / Math.max(i.seconds, 1e-9))) },
      ],
      bars: true,
    },
    {
      id: id('1s'),
      title: title('docs/s per 1-s interval, and fdatasyncs/s per 10 s'),
      xLabel: 's',
      yLabel: 'docs/s',
      y2Label: 'fdatasyncs/s',
      x: s.intervals.map((i) => i.t),
      series: [
        { label: 'docs/s (1 s)', values: s.intervals.map((i) => Math.round(i.docs / Math.max(i.seconds, 1e-9))) },
        {
          label: 'fdatasyncs/s (10 s)',
          values: s.intervals.map((i) => {
            const f = s.fdatasyncs_per_s_10s.find((x) => x.t >= i.t - 1e-6);
            return f ? round(f.fdatasyncs, 1) : null;
          }),
          axis: 'y2',
        },
      ],
    },
    {
      id: id('latency'),
      title: title('insert latency per 1-s interval (ms): p50, p99, max'),
      xLabel: 's',
      yLabel: 'ms',
      logY: true,
      x: s.intervals.map((i) => i.t),
      series: [
        { label: 'p50', values: s.intervals.map((i) => i.p50 ?? null) },
        { label: 'p99', values: s.intervals.map((i) => i.p99 ?? null) },
        { label: 'max', values: s.intervals.map((i) => i.max ?? null) },
      ],
    },
    {
      id: id('pacing'),
      title: title('write-rate limit (MB/s, 0 = none) and pacing debt (MB), per second'),
      xLabel: 's',
      yLabel: 'MB/s',
      y2Label: 'MB',
      x: es.map((x) => x.t),
      series: [
        { label: 'write-rate limit (MB/s)', values: es.map((x) => round(x.writeRateLimitBps / 1e6, 2)) },
        { label: 'pacing debt (MB)', values: es.map((x) => round(x.pacingDebtBytes / 1e6, 2)), axis: 'y2' },
      ],
    },
    {
      id: id('memory'),
      title: title("memory (MiB): memtables, cache, the budget; RSS of the engine's process"),
      xLabel: 's',
      yLabel: 'MiB',
      x: es.map((x) => x.t),
      series: [
        {
          label: 'memtables (active + frozen)',
          values: es.map((x) => round((x.memtableBytes + x.frozenMemtableBytes) / MB, 1)),
        },
        { label: 'block cache', values: es.map((x) => round(x.cacheBytes / MB, 1)) },
        { label: 'budget', values: es.map(() => round(s.memory_budget_bytes / MB, 1)) },
        { label: 'RSS', values: es.map((x) => round(x.rss / MB, 1)) },
      ],
    },
  ];
}

/** Settled: this many seconds in a row like the baseline; the longest wait. */
const SETTLED_SECONDS = 10;
const SETTLE_MAX_MS = 300_000;
const MAX_CALM_STEAL = 0.05;

interface Probe {
  fdatasyncP99Us: number;
  steal: number;
}

/** The raw fdatasync loop's p99, and the CPU steal while it ran. */
async function probe(ctx: BenchContext, ops: number): Promise<Probe> {
  const before = cpuTimes();
  const r = await limitRun(ctx, ops, 'overwrite');
  return { fdatasyncP99Us: r.fdatasync_us.p99, steal: stealShare(before, cpuTimes()) };
}

/**
 * Waits until `SETTLED_SECONDS` of probes in a row have an fdatasync p99 within 2× the
 * baseline's (or 2 ms) and a CPU steal under 5%; returns the wait (ms). On an idle machine here
 * a 500-op p99 moves between 0.3 and 1.3 ms and the steal between 0 and 4%; after a 20-GB
 * write, 5–40 ms and 10–25%.
 */
async function settle(ctx: BenchContext, baseline: Probe): Promise<number> {
  const t0 = performance.now();
  let calmSince = t0;
  let calm = false;
  let p: Probe;
  do {
    p = await probe(ctx, 500);
    if (p.fdatasyncP99Us > Math.max(2 * baseline.fdatasyncP99Us, 2000) || p.steal > MAX_CALM_STEAL)
      calmSince = performance.now();
    calm = performance.now() - calmSince >= SETTLED_SECONDS * 1000;
  } while (!calm && performance.now() - t0 < SETTLE_MAX_MS);
  const waited = performance.now() - t0;
  const last = `; last probe: p99 ${round(p.fdatasyncP99Us, 0)} µs, steal ${round(100 * p.steal, 1)}%`;
  ctx.log(
    `  disk and CPU ${calm ? 'settled' : 'NOT settled'} after ${(waited / 1000).toFixed(1)} s (fdatasync p99 baseline ${round(baseline.fdatasyncP99Us, 0)} µs; steal under ${100 * MAX_CALM_STEAL}%${last})`,
  );
  return waited;
}

export async function sustained(ctx: BenchContext): Promise<ScenarioResult> {
  const seconds = Math.round(ctx.minutes * 60);
  const budgetMb = ctx.memoryBudgetMb ?? SUSTAINED_MEMORY_BUDGET_MB;
  const rows: Row[] = [];
  const charts: ChartSpec[] = [];
  const samples: Record<string, unknown> = { seconds, memory_budget_mb: budgetMb };
  const errors: string[] = [];
  const baseline = await probe(ctx, 2000);
  const settleMs: number[] = [];
  samples.settle_ms = settleMs;
  for (const target of ['embedded', 'server'] as const) {
    settleMs.push(await settle(ctx, baseline));
    ctx.log(
      `sustained (${target}): the loader at full speed for ${seconds} s, memory budget ${budgetMb} MiB, point gets at ${SUSTAINED_READS_PER_S}/s …`,
    );
    try {
      const s = await worker<SustainedOut>(ctx, [
        'sustained',
        '--target',
        target,
        '--dir',
        join(ctx.dir, `sustained-${target}`),
        '--seconds',
        String(seconds),
        '--memory-budget-mb',
        String(budgetMb),
        '--reads-per-s',
        String(SUSTAINED_READS_PER_S),
      ]);
      ctx.log(
        `  ${s.docs.toLocaleString('en-US')} docs (${fmtBytes(s.bytes_loaded)}, ${(s.bytes_loaded / s.memory_budget_bytes).toFixed(1)}× the budget) in ${s.wall_s.toFixed(1)} s, ${fmtRate(s.docs_per_s)}, max latency ${round(s.latency_ms.max, 1)} ms, get p99 ${s.reads.ms ? round(s.reads.ms.p99, 2) : '–'} ms, peak RSS ${s.peak_rss_mb} MB`,
      );
      if (s.stopped_for_memory)
        ctx.log(
          `  STOPPED EARLY at ${s.stopped_for_memory.at_s} s: RSS ${s.stopped_for_memory.rss_mb} MB > limit ${s.rss_limit_mb} MB`,
        );
      if (s.stopped_for_disk)
        ctx.log(`  STOPPED EARLY at ${s.stopped_for_disk.at_s} s: ${s.stopped_for_disk.free_gb} GB of disk left`);
      rows.push(...rowsFor(s, seconds, budgetMb));
      charts.push(...chartsFor(s));
      samples[target] = s;
    } catch (e) {
      const msg = (e as Error).message ?? String(e);
      ctx.log(`sustained (${target}) FAILED: ${(e as Error).stack ?? msg}`);
      errors.push(`${target}: ${msg}`);
      rows.push({ scenario: 'sustained', measure: `${target}: FAILED`, value: msg.split('\n')[0]!.slice(0, 200) });
    }
  }
  settleMs.push(await settle(ctx, baseline));
  if (errors.length === 2) throw new Error(errors.join('; '));
  return { name: 'sustained', rows, charts, samples, ...(errors.length ? { error: errors.join('\n') } : {}) };
}
