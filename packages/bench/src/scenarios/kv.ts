// `kv` (Voron's figure in seed 001): 8-byte keys and 8-byte values, sequential, in hard
// transactions of 10k puts: through the Rust core (packages/engine/core/examples/kv.rs; 100M puts,
// --quick 10M) and through the JS API (insertNdjson per transaction; 10M, --quick 1M).
// Voron's published figure (2.449M writes/s for 100M in 10k transactions, deferred journal
// purging, on its own hardware) is quoted for context only: it was not measured here.

import { join } from 'node:path';
import { runJsonChild } from '../lib/child.js';
import { buildExample } from '../lib/fsync-limit.js';
import { fmtRate } from '../lib/table.js';
import { type BenchContext, type ScenarioResult, worker } from './common.js';

interface RustKv {
  puts: number;
  transactions: number;
  seconds: number;
  puts_per_s: number;
  fdatasyncs: number;
  bytes_journaled: number;
  checkpoints: number;
  dir_bytes: number;
  build_and_parse_s: number;
}
interface JsKv {
  puts: number;
  transactions: number;
  total_ms: number;
  puts_per_s: number;
  build_ms: number;
  fdatasyncs: number;
}

const VORON = 2_449_000;

export async function kv(ctx: BenchContext, opts: { rustPuts?: number; jsPuts?: number }): Promise<ScenarioResult> {
  const rustN = opts.rustPuts ?? (ctx.quick ? 10_000_000 : 100_000_000);
  const jsN = opts.jsPuts ?? (ctx.quick ? 1_000_000 : 10_000_000);
  const batch = 10_000;
  ctx.log('building packages/engine/core/examples/kv.rs (cargo build --release --example kv) …');
  const bin = buildExample(ctx.repo!, 'kv');
  ctx.log(`kv: JS API, ${jsN.toLocaleString('en-US')} puts in ${jsN / batch} hard transactions …`);
  const js = await worker<JsKv>(ctx, [
    'kv-js',
    '--dir',
    join(ctx.dir, 'kv-js'),
    '--n',
    String(jsN),
    '--batch',
    String(batch),
  ]);
  ctx.log(`  ${fmtRate(js.puts_per_s, 'puts/s')} (${(js.total_ms / 1000).toFixed(1)} s)`);
  ctx.log(`kv: Rust core, ${rustN.toLocaleString('en-US')} puts in ${rustN / batch} hard transactions …`);
  const rust = (
    await runJsonChild<RustKv>(bin, [join(ctx.dir, 'kv-rust'), String(rustN), '--batch', String(batch)], {
      cwd: process.cwd(),
      timeoutMs: 60 * 60_000,
    })
  ).json;
  ctx.log(`  ${fmtRate(rust.puts_per_s, 'puts/s')} (${rust.seconds.toFixed(1)} s)`);
  return {
    name: 'kv',
    rows: [
      {
        scenario: 'kv',
        measure: `Rust core: ${rustN.toLocaleString('en-US')} puts (8 B key, 8 B value) in ${rust.transactions} hard txns`,
        value: `${fmtRate(rust.puts_per_s, 'puts/s')} (${rust.seconds.toFixed(1)} s, ${rust.fdatasyncs} fdatasyncs, ${(rust.dir_bytes / 1e9).toFixed(2)} GB on disk)`,
        reference: "Voron's 2.449M/s (published)",
        ratio: rust.puts_per_s / VORON,
        ratioText: `${(rust.puts_per_s / VORON).toFixed(2)}× (not same machine)`,
      },
      {
        scenario: 'kv',
        measure: `JS API: ${jsN.toLocaleString('en-US')} puts in ${js.transactions} hard txns (insertNdjson)`,
        value: `${fmtRate(js.puts_per_s, 'puts/s')} (${(js.total_ms / 1000).toFixed(1)} s, of which building the batches in JS ${(js.build_ms / 1000).toFixed(1)} s)`,
        reference: 'Rust core',
        ratio: js.puts_per_s / rust.puts_per_s,
        ratioText: `${(js.puts_per_s / rust.puts_per_s).toFixed(2)}× (not interleaved)`,
      },
    ],
    charts: [],
    samples: { voron_published_puts_per_s: VORON, rust, js },
  };
}
