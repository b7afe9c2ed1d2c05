// `seed000`: seed 000's table. 1000 sequential single-document hard inserts from one client, each
// awaited, on: Wharf embedded; a freshly started Wharf server through the official `rethinkdb`
// driver; better-sqlite3 (WAL, synchronous=FULL, autocommit); PostgreSQL (autocommit,
// synchronous_commit on) when installed; a freshly started real RethinkDB when RETHINKDB_BIN names
// its binary (or `rethinkdb` is on PATH). Each round runs the raw fdatasync loop first, then every
// system; the figure is each system's time ÷ the loop's time in the same round, median over rounds.
//
// The driver's goal is against its floor: on the same fresh server, after the inserts, the same
// driver's bare `r.expr(i)` loop (n round trips, nothing written), plus the raw loop of the round.
// A driver insert can cost no less than one round trip plus one fdatasync.

import { join } from 'node:path';
import type { OpStats } from '../lib/fsync-limit.js';
import { interleave, type Step } from '../lib/interleave.js';
import { findRethinkdb, RETHINKDB_MISSING } from '../lib/rethinkdb-proc.js';
import { type Distribution, median, pairRatios, round } from '../lib/stats.js';
import { fmtMs } from '../lib/table.js';
import { type BenchContext, engineWorker, fmtUs, limitRun, type Row, type ScenarioResult, worker } from './common.js';

interface SeqSample {
  total_ms: number;
  latency_us: Distribution;
  fdatasyncs?: number;
  engine?: Record<string, number>;
  /** driver loops: the n bare `r.expr(i)` round trips on the same server, after the inserts */
  expr_ms?: number;
  expr_latency_us?: Distribution;
  /** driver loops: CPU (ms) the server process used during the inserts, and during the r.expr loop */
  server_cpu_ms?: number;
  expr_server_cpu_ms?: number;
}

/** The driver's goal: its inserts ÷ (its r.expr loop + the raw fdatasync loop), same round. */
export const DRIVER_FLOOR_GOAL = { goal: '≤ 1.15× floor (r.expr loop + limit)', max: 1.15 } as const;

/** Per round: the insert loop's time ÷ its floor, the r.expr loop's time plus the raw loop's. */
export function floorRatios(samples: { total_ms: number; expr_ms?: number }[], limitMs: number[]): number[] {
  return samples.map((s, i) => {
    if (s.expr_ms === undefined) throw new Error('a driver sample without its r.expr loop');
    return s.total_ms / (s.expr_ms + (limitMs[i] as number));
  });
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
  const rdbBin = findRethinkdb();
  if (rdbBin)
    steps.push({
      name: 'rethinkdb-driver',
      run: () =>
        worker<SeqSample>(ctx, [
          'rethinkdb-seq',
          '--bin',
          rdbBin,
          '--dir',
          join(ctx.dir, 'rethinkdb-seq'),
          '--n',
          String(n),
        ]),
      describe: (s) => fmtMs(s.total_ms),
    });
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
  };
  const labels: Record<string, string> = {
    'wharf-embedded': 'Wharf embedded (JS API)',
    'wharf-server-driver': 'Wharf server, official rethinkdb driver',
    sqlite: 'better-sqlite3 WAL synchronous=FULL',
    postgres: `PostgreSQL ${pg?.version ?? ''} (node pg, autocommit)`,
    'rethinkdb-driver': 'RethinkDB (fresh server), official rethinkdb driver',
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
    const syncs = xs[0]?.fdatasyncs !== undefined ? `, ${median(xs.map((s) => s.fdatasyncs ?? 0))} fdatasyncs` : '';
    rows.push({
      scenario: 'seed000',
      measure: `${labels[name]}: ${n} hard inserts`,
      value: `${fmtMs(median(ms))} (${fmtUs(median(xs.map((s) => s.latency_us.median)))} median${syncs})`,
      reference: 'limit',
      ratio,
      ratios,
      goal: g?.goal,
      met: g ? ratio <= g.max : undefined,
    });
    if (xs[0]?.expr_ms !== undefined) {
      // The driver's floor on the same fresh server: one round trip (r.expr) + one fdatasync (limit).
      const expr = xs.map((s) => s.expr_ms as number);
      rows.push({
        scenario: 'seed000',
        measure: `${labels[name]}: ${n} bare r.expr(i) round trips, same server`,
        value: `${fmtMs(median(expr))} (${fmtUs(median(xs.map((s) => s.expr_latency_us?.median ?? 0)))} median)`,
        reference: 'limit',
        ratio: median(pairRatios(expr, limMs)),
        ratios: pairRatios(expr, limMs),
      });
      const fr = floorRatios(xs, limMs);
      // The server's CPU per query (all its threads; 10 ms ticks), which the disk does not blur.
      const perQuery = (k: 'server_cpu_ms' | 'expr_server_cpu_ms') =>
        xs.every((s) => s[k] !== undefined) ? fmtUs(median(xs.map((s) => ((s[k] as number) * 1000) / n))) : '?';
      const cpu = `server CPU ${perQuery('server_cpu_ms')}/insert, ${perQuery('expr_server_cpu_ms')}/r.expr`;
      const fg = name === 'wharf-server-driver' ? DRIVER_FLOOR_GOAL : undefined;
      rows.push({
        scenario: 'seed000',
        measure: `${labels[name]}: inserts ÷ floor (r.expr loop + limit)`,
        value: `${fmtMs(median(xs.map((s, i) => (s.expr_ms as number) + (limMs[i] as number))))} floor; ${cpu}`,
        reference: 'floor',
        ratio: median(fr),
        ratios: fr,
        goal: fg?.goal,
        met: fg ? median(fr) <= fg.max : undefined,
      });
    }
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
  if (!rdbBin) {
    ctx.log(`seed000: ${RETHINKDB_MISSING}`);
    rows.push({ scenario: 'seed000', measure: 'RethinkDB', value: RETHINKDB_MISSING });
  }
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
