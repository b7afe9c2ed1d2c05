// `group-commit`: 1, 4, 16, 64, 256 concurrent hard writers in one process (async loops, each
// awaiting its own single-document inserts). docs/s and fdatasyncs per document (db.stats()).
// Each round starts with the raw fdatasync loop; each level's docs/s is divided by the loop's
// ops/s of the same round ("documents made durable per fdatasync time"), and the 64-writer rate
// by the single writer's of the same round (the engine issue's ≥ 32× goal).

import { join } from 'node:path';
import type { OpStats } from '../lib/fsync-limit.js';
import { interleave, type Step } from '../lib/interleave.js';
import { median, pairRatios, round } from '../lib/stats.js';
import { fmtRate } from '../lib/table.js';
import { type BenchContext, engineWorker, limitRun, type Row, type ScenarioResult } from './common.js';

interface ConcSample {
  writers: number;
  docs: number;
  total_ms: number;
  docs_per_s: number;
  fdatasyncs_per_doc: number;
  docs_per_group: number;
  latency_us: { median: number; p99: number; max: number };
  max_group_ops?: number;
}

export const LEVELS = [1, 4, 16, 64, 256];

export async function groupCommit(ctx: BenchContext): Promise<ScenarioResult> {
  const perWriter = (w: number) => (ctx.quick ? Math.max(5, Math.ceil(500 / w)) : Math.max(25, Math.ceil(2000 / w)));
  type S = OpStats | ConcSample;
  const steps: Step<S>[] = [
    {
      name: 'limit',
      run: () => limitRun(ctx, 500, 'overwrite'),
      describe: (s) => `${fmtRate((s as OpStats).ops_per_s, 'fdatasync/s')}`,
    },
    ...LEVELS.map(
      (w): Step<S> => ({
        name: `writers-${w}`,
        run: () =>
          engineWorker<ConcSample>(ctx, [
            'concurrent',
            '--dir',
            join(ctx.dir, 'gc'),
            '--writers',
            String(w),
            '--per-writer',
            String(perWriter(w)),
          ]),
        describe: (s) => {
          const c = s as ConcSample;
          return `${fmtRate(c.docs_per_s)}, ${c.fdatasyncs_per_doc.toFixed(4)} fdatasyncs/doc`;
        },
      }),
    ),
  ];
  ctx.log(`group-commit: ${ctx.rounds} rounds of [limit, ${LEVELS.join(', ')} writers]`);
  const r = await interleave<S>(ctx.rounds, steps, ctx.log);
  const lim = (r.limit as OpStats[]).map((s) => s.ops_per_s);
  const one = (r['writers-1'] as ConcSample[]).map((s) => s.docs_per_s);
  const rows: Row[] = [];
  const curve = { docsPerS: [] as number[], perDoc: [] as number[], perLimit: [] as number[], p99: [] as number[] };
  for (const w of LEVELS) {
    const xs = r[`writers-${w}`] as ConcSample[];
    const rate = xs.map((s) => s.docs_per_s);
    const perDoc = median(xs.map((s) => s.fdatasyncs_per_doc));
    const vsLimit = pairRatios(rate, lim);
    curve.docsPerS.push(round(median(rate), 0));
    curve.perDoc.push(round(perDoc, 5));
    curve.perLimit.push(round(median(vsLimit), 2));
    curve.p99.push(round(median(xs.map((s) => s.latency_us.p99)) / 1000, 2));
    rows.push({
      scenario: 'group-commit',
      measure: `${w} writer${w > 1 ? 's' : ''} × ${perWriter(w)} hard inserts: docs/s`,
      value: `${fmtRate(median(rate))}, ${perDoc.toFixed(4)} fdatasyncs/doc, ${round(median(xs.map((s) => s.docs_per_group)), 1)} docs/group`,
      reference: 'limit fdatasync/s',
      ratio: median(vsLimit),
      ratios: vsLimit,
    });
    if (w === 64) {
      rows.push({
        scenario: 'group-commit',
        measure: '64 writers: fdatasyncs per document',
        value: perDoc.toFixed(4),
        goal: '≤ 1/32 = 0.0313 (engine issue)',
        met: perDoc <= 1 / 32,
      });
      const vsOne = pairRatios(rate, one);
      const m = median(vsOne);
      rows.push({
        scenario: 'group-commit',
        measure: '64 writers ÷ 1 writer: throughput',
        value: `${fmtRate(median(rate))} vs ${fmtRate(median(one))}`,
        reference: '1 writer',
        ratio: m,
        ratios: vsOne,
        goal: '≥ 32× (engine issue)',
        met: m >= 32,
      });
    }
  }
  return {
    name: 'group-commit',
    rows,
    charts: [
      {
        id: 'group-commit-curve',
        title: 'group commit: docs/s and fdatasyncs per document by concurrent hard writers',
        xLabel: 'writers',
        yLabel: 'docs/s',
        y2Label: 'fdatasyncs/doc',
        logX: true,
        x: LEVELS,
        series: [
          { label: 'docs/s', values: curve.docsPerS },
          { label: 'fdatasyncs per doc', values: curve.perDoc, axis: 'y2' },
        ],
      },
      {
        id: 'group-commit-p99',
        title: 'group commit: insert latency p99 (ms) by writers',
        xLabel: 'writers',
        yLabel: 'ms',
        logX: true,
        x: LEVELS,
        series: [{ label: 'p99 ms', values: curve.p99 }],
      },
    ],
    samples: { ...r, per_writer: Object.fromEntries(LEVELS.map((w) => [w, perWriter(w)])), curve } as unknown as Record<
      string,
      unknown
    >,
  };
}
