// `limit`: the physical reference. N × (4 KiB pwrite + fdatasync) on a preallocated file
// (overwrite) and appended to a growing file (append), in the data directory, interleaved. Where
// the reference is the Rust loop, the Node loop (the reference of an npm install) runs in the same
// rounds too, and its time ÷ the Rust loop's shows what Node adds to the same syscalls.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fsyncLimitRunner, type OpStats } from '../lib/fsync-limit.js';
import { interleave, type Step } from '../lib/interleave.js';
import { median, medianOfRatios, pairRatios, round } from '../lib/stats.js';
import { fmtMs } from '../lib/table.js';
import { type BenchContext, fmtUs, limitRun, type Row, type ScenarioResult } from './common.js';

export async function limit(ctx: BenchContext): Promise<ScenarioResult> {
  const n = 1000;
  ctx.log(`limit: ${ctx.rounds} rounds of [${n} × 4 KiB overwrite+fdatasync, ${n} × 4 KiB append+fdatasync]`);
  const describe = (s: OpStats) => `${fmtMs(s.total_ms)}, fdatasync median ${fmtUs(s.fdatasync_us.median)}`;
  const steps: Step<OpStats>[] = [
    { name: 'overwrite', run: () => limitRun(ctx, n, 'overwrite'), describe },
    { name: 'append', run: () => limitRun(ctx, n, 'append'), describe },
  ];
  if (ctx.limit.kind === 'rust') {
    const node = fsyncLimitRunner({ prefer: 'node' });
    const dir = join(ctx.dir, 'limit');
    steps.push({
      name: 'overwrite-node',
      run: async () => {
        mkdirSync(dir, { recursive: true });
        return (await node.run(dir, n, 'overwrite')).json.results.overwrite!;
      },
      describe,
    });
  }
  const r = await interleave<OpStats>(ctx.rounds, steps, ctx.log);
  const ow = r.overwrite!;
  const ap = r.append!;
  const nodeLoop = r['overwrite-node'];
  const nodeRows: Row[] = nodeLoop
    ? [
        {
          scenario: 'limit',
          measure: `${n} × 4 KiB overwrite + fdatasync, Node loop (fs.writeSync + fs.fdatasyncSync)`,
          value: `${fmtMs(median(nodeLoop.map((s) => s.total_ms)))} (${fmtUs(median(nodeLoop.map((s) => s.op_us.median)))}/op median)`,
          reference: 'overwrite (Rust loop)',
          ratio: medianOfRatios(
            nodeLoop.map((s) => s.total_ms),
            ow.map((s) => s.total_ms),
          ),
          ratios: pairRatios(
            nodeLoop.map((s) => s.total_ms),
            ow.map((s) => s.total_ms),
          ),
        },
      ]
    : [];
  const ratios = pairRatios(
    ap.map((s) => s.total_ms),
    ow.map((s) => s.total_ms),
  );
  const pct = (xs: OpStats[], k: 'median' | 'p90' | 'p99' | 'max') =>
    round(median(xs.map((s) => s.fdatasync_us[k])), 1);
  return {
    name: 'limit',
    rows: [
      {
        scenario: 'limit',
        measure: `${n} × 4 KiB overwrite + fdatasync (preallocated, ${ctx.limit.kind === 'rust' ? 'Rust' : 'Node'} loop)`,
        value: `${fmtMs(median(ow.map((s) => s.total_ms)))} (${fmtUs(median(ow.map((s) => s.op_us.median)))}/op median)`,
      },
      {
        scenario: 'limit',
        measure: `${n} × 4 KiB append + fdatasync (growing file)`,
        value: `${fmtMs(median(ap.map((s) => s.total_ms)))} (${fmtUs(median(ap.map((s) => s.op_us.median)))}/op median)`,
        reference: 'overwrite',
        ratio: medianOfRatios(
          ap.map((s) => s.total_ms),
          ow.map((s) => s.total_ms),
        ),
        ratios,
      },
      ...nodeRows,
    ],
    charts: [
      {
        id: 'limit-latency',
        title: 'fdatasync latency (µs) by percentile, median over rounds',
        xLabel: 'percentile',
        yLabel: 'µs',
        logY: true,
        x: [50, 90, 99, 100],
        series: [
          { label: 'overwrite', values: [pct(ow, 'median'), pct(ow, 'p90'), pct(ow, 'p99'), pct(ow, 'max')] },
          { label: 'append', values: [pct(ap, 'median'), pct(ap, 'p90'), pct(ap, 'p99'), pct(ap, 'max')] },
        ],
      },
    ],
    samples: {
      n,
      loop: ctx.limit.kind,
      overwrite: ow,
      append: ap,
      append_over_overwrite: ratios,
      ...(nodeLoop ? { overwrite_node: nodeLoop } : {}),
    },
  };
}
