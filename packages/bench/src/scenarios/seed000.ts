// `seed000`: seed 000's table. 1000 sequential single-document hard inserts from one client, each
// awaited, on: Wharf embedded; a Wharf server through the official `rethinkdb` driver;
// better-sqlite3 (WAL, synchronous=FULL, autocommit); PostgreSQL (autocommit, synchronous_commit
// on) when installed. Each round runs the raw fdatasync loop first, then every system; the figure
// is each system's time ÷ the loop's time in the same round, median over rounds.

import { join } from 'node:path';
import type { OpStats } from '../lib/fsync-limit.js';
import { interleave, type Step } from '../lib/interleave.js';
import { type Distribution, median, pairRatios, round } from '../lib/stats.js';
import { fmtMs } from '../lib/table.js';
import { type BenchContext, engineWorker, fmtUs, limitRun, type Row, type ScenarioResult, worker } from './common.js';

interface SeqSample {
  total_ms: number;
  latency_us: Distribution;
  fdatasyncs?: number;
  engine?: Record<string, number>;
}

export async function seed000(ctx: BenchContext): Promise<ScenarioResult> {
  const n = 1000;
  const pg = await ctx.postgres();
  type S = OpStats | SeqSample;
  const steps: Step<S>[] = [
    { name: 'limit', run: () => limitRun(ctx, n, 'overwrite'), describe: (s) => fmtMs((s as OpStats).total_ms) },
    {
      name: 'wharf-embedded',
      run: () => engineWorker<SeqSample>(ctx, ['seq', '--dir', join(ctx.dir, 'seq'), '--n', String(n)]),
      describe: (s) => fmtMs(s.total_ms),
    },
    {
      name: 'wharf-server-driver',
      run: () => worker<SeqSample>(ctx, ['driver-seq', '--dir', join(ctx.dir, 'driver-seq'), '--n', String(n)]),
      describe: (s) => fmtMs(s.total_ms),
    },
    {
      name: 'sqlite',
      run: () => worker<SeqSample>(ctx, ['sqlite-seq', '--dir', join(ctx.dir, 'sqlite-seq'), '--n', String(n)]),
      describe: (s) => fmtMs(s.total_ms),
    },
  ];
  if (pg)
    steps.push({
      name: 'postgres',
      run: () =>
        worker<SeqSample>(ctx, ['pg-seq', '--port', String(pg.port), '--user', pg.conn.user, '--n', String(n)]),
      describe: (s) => fmtMs(s.total_ms),
    });
  ctx.log(`seed000: ${ctx.rounds} rounds of [${steps.map((s) => s.name).join(', ')}], ${n} hard inserts each`);
  const r = await interleave<S>(ctx.rounds, steps, ctx.log);
  const lim = r.limit as OpStats[];
  const limMs = lim.map((s) => s.total_ms);
  const goals: Record<string, { goal: string; max: number }> = {
    'wharf-embedded': { goal: '≤ 1.10× (engine issue)', max: 1.1 },
    'wharf-server-driver': { goal: '≤ 1.25× (server issue)', max: 1.25 },
  };
  const labels: Record<string, string> = {
    'wharf-embedded': 'Wharf embedded (JS API)',
    'wharf-server-driver': 'Wharf server, official rethinkdb driver',
    sqlite: 'better-sqlite3 WAL synchronous=FULL',
    postgres: `PostgreSQL ${pg?.version ?? ''} (node pg, autocommit)`,
  };
  const rows: Row[] = [
    {
      scenario: 'seed000',
      measure: `raw 4 KiB overwrite+fdatasync ×${n} (limit)`,
      value: `${fmtMs(median(limMs))} (${fmtUs(median(lim.map((s) => s.op_us.median)))}/op)`,
    },
  ];
  const latSeries: { label: string; values: number[] }[] = [];
  for (const name of Object.keys(r)) {
    if (name === 'limit') continue;
    const xs = r[name] as SeqSample[];
    const ms = xs.map((s) => s.total_ms);
    const ratios = pairRatios(ms, limMs);
    const ratio = median(ratios);
    const g = goals[name];
    rows.push({
      scenario: 'seed000',
      measure: `${labels[name]}: ${n} hard inserts`,
      value: `${fmtMs(median(ms))} (${fmtUs(median(xs.map((s) => s.latency_us.median)))} median)`,
      reference: 'limit',
      ratio,
      ratios,
      goal: g?.goal,
      met: g ? ratio <= g.max : undefined,
    });
    const p = (k: keyof Distribution) => round(median(xs.map((s) => s.latency_us[k] as number)), 1);
    latSeries.push({ label: labels[name]!, values: [p('median'), p('p90'), p('p99'), p('max')] });
  }
  // Attribution: what the server + driver add on top of the engine, same rounds.
  if (r['wharf-server-driver'] && r['wharf-embedded']) {
    const a = pairRatios(
      (r['wharf-server-driver'] as SeqSample[]).map((s) => s.total_ms),
      (r['wharf-embedded'] as SeqSample[]).map((s) => s.total_ms),
    );
    const perInsert = median(
      (r['wharf-server-driver'] as SeqSample[]).map(
        (s, i) => ((s.total_ms - (r['wharf-embedded'] as SeqSample[])[i]!.total_ms) * 1000) / n,
      ),
    );
    rows.push({
      scenario: 'seed000',
      measure: 'attribution: Wharf server via driver ÷ Wharf embedded',
      value: `+${fmtUs(perInsert)} per insert (driver, TCP, server)`,
      reference: 'Wharf embedded',
      ratio: median(a),
      ratios: a,
    });
  }
  latSeries.push({
    label: 'raw fdatasync loop (per op)',
    values: (['median', 'p90', 'p99', 'max'] as const).map((k) => round(median(lim.map((s) => s.op_us[k])), 1)),
  });
  if (!pg)
    rows.push({
      scenario: 'seed000',
      measure: 'PostgreSQL',
      value: 'not installed, skipped (apt-get install postgresql)',
    });
  return {
    name: 'seed000',
    rows,
    charts: [
      {
        id: 'seed000-latency',
        title: 'seed 000: insert latency (µs) by percentile, median over rounds',
        xLabel: 'percentile',
        yLabel: 'µs',
        logY: true,
        x: [50, 90, 99, 100],
        series: latSeries,
      },
    ],
    samples: r as unknown as Record<string, unknown>,
  };
}
