// `bulk`: 1M documents of ~150 B (lib/docs.ts; --quick 100k) loaded durably, and seed 002's ~900 KB
// blocks. Every round runs every system once, back to back; ratios are to better-sqlite3's
// one-transaction insert in the same round (the goals of the engine and server issues).
//
//   Wharf embedded       table.insertNdjson, 10k-line batches, 4 in flight, soft + one db.sync()
//                        (lib/engine-worker.ts bulk; the final sync is timed apart)
//   wharf import wharf:// the CLI (apps/cli) against a fresh server process: batched soft writes over
//                        the ws ingest path + final sync (from its --report: wall, finalSyncMs)
//   wharf import rethinkdb:// the same over the server's driver port (official rethinkdb driver)
//   better-sqlite3       WAL, synchronous=FULL, one transaction (lib/sqlite-worker.ts bulk)
//   PostgreSQL COPY      COPY FROM a server-side file into (id text primary key, doc jsonb), when installed
//
// Each Wharf row also reports the bytes the engine wrote (journal, runs, merges) per document byte
// loaded, against the goal ≤ 2× (issue 31), the close's final checkpoint included: embedded from
// its stats after close; the server rows from /api/stats before the server stops plus the run
// file its close leaves.
//
// Blocks (seed 002): Wharf embedded (one block per soft insert, one at a time, then sync), the
// seed's own loop `r.table(t).insert(r.json(BLOCK), {durability:'soft'})` through the driver to a
// Wharf server (then r.table(t).sync()), and better-sqlite3 (one transaction).

import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EngineStats } from '@wharf/engine';
import { docLines } from '../lib/docs.js';
import type { WrittenPerLoaded } from '../lib/engine-worker.js';
import { interleave, type Step } from '../lib/interleave.js';
import { startServerProc } from '../lib/server-proc.js';
import { median, pairRatios } from '../lib/stats.js';
import { fmtMs, fmtRate } from '../lib/table.js';
import { type BenchContext, engineWorker, type Row, type ScenarioResult, sqliteWorker, worker } from './common.js';
import { shareWithPostgres } from './postgres.js';

interface BulkSample {
  docs_per_s: number;
  total_ms: number;
  sync_ms?: number;
  mb_per_s?: number;
  /** Wharf rows: bytes written per byte loaded, from the engine's counters. */
  written?: WrittenPerLoaded;
}

/** The goal of issue 31: a bulk load into an empty table writes each byte at most twice. */
const WRITTEN_PER_LOADED_GOAL = 2;
interface BlockSample {
  blocks: number;
  total_ms: number;
  blocks_per_s: number;
  mb_per_s: number;
  sync_ms?: number;
}

function runCli(ctx: BenchContext, args: string[]): Promise<void> {
  return new Promise((res, rej) => {
    const p = spawn(process.execPath, [ctx.cliBin!, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    p.on('error', rej);
    p.on('close', (code) =>
      code === 0 ? res() : rej(new Error(`wharf ${args.join(' ')} exited ${code}:\n${err.slice(-2000)}`)),
    );
  });
}

/**
 * Bytes of run files a stopped server's close left beyond the `runBytes` it reported before it:
 * the run its final checkpoint wrote (a merge the close abandons leaves no file).
 */
function closeRunBytes(data: string, runBytesBefore: number): number {
  const onDisk = readdirSync(data)
    .filter((name) => /^run-\d+\.wrun$/.test(name))
    .reduce((sum, name) => sum + statSync(join(data, name)).size, 0);
  return Math.max(0, onDisk - runBytesBefore);
}

/** `wharf import FILE` against a fresh server process over `scheme`. */
async function cliImport(
  ctx: BenchContext,
  file: string,
  docs: number,
  scheme: 'wharf' | 'rethinkdb',
): Promise<BulkSample> {
  const data = join(ctx.dir, `srv-${scheme}`);
  rmSync(data, { recursive: true, force: true });
  const server = await startServerProc(data);
  const report = join(ctx.dir, `import-${scheme}.json`);
  let stopped = false;
  try {
    const target =
      scheme === 'wharf'
        ? `wharf://127.0.0.1:${server.httpPort}`
        : `rethinkdb://admin@127.0.0.1:${server.driverPort}/test`;
    await runCli(ctx, [
      'import',
      file,
      '--table',
      'bulk',
      '--target',
      target,
      '--report',
      report,
      '--checkpoint',
      join(ctx.dir, `import-${scheme}.checkpoint`),
      '--progress',
      'none',
    ]);
    const r = JSON.parse(readFileSync(report, 'utf8')) as {
      documents: { written: number };
      wallSeconds: number;
      docsPerSec: number;
      finalSyncMs: number | null;
    };
    if (r.documents.written !== docs)
      throw new Error(`wharf import over ${scheme}:// wrote ${r.documents.written} of ${docs}`);
    // The server's counters, read before it stops; the run its close's checkpoint writes (the
    // last memtable) is then counted from the files it leaves (see `closeRunBytes`).
    const e = (await (await fetch(`${server.url}/api/stats`)).json()).engine as EngineStats;
    stopped = true;
    await server.stop();
    const flushes = e.bytesWrittenFlushes + closeRunBytes(data, e.runBytes);
    const written: WrittenPerLoaded = {
      loaded: e.bytesLoaded,
      journal: e.bytesWrittenJournal,
      flushes,
      merges: e.bytesWrittenMerges,
      other: e.bytesWrittenOther,
      perByte: (e.bytesWrittenJournal + flushes + e.bytesWrittenMerges) / e.bytesLoaded,
    };
    return { docs_per_s: r.docsPerSec, total_ms: r.wallSeconds * 1000, sync_ms: r.finalSyncMs ?? undefined, written };
  } finally {
    if (!stopped) await server.stop();
    rmSync(data, { recursive: true, force: true });
    rmSync(join(ctx.dir, `import-${scheme}.checkpoint`), { force: true });
  }
}

export async function bulk(ctx: BenchContext, opts: { docs?: number; blocks?: number }): Promise<ScenarioResult> {
  const docs = opts.docs ?? (ctx.quick ? 100_000 : 1_000_000);
  const blocks = opts.blocks ?? (ctx.quick ? 100 : 10_000);
  const pg = await ctx.postgres();
  const fileDir = join(ctx.dir, 'bulk-input');
  mkdirSync(fileDir, { recursive: true });
  const ndjson = join(fileDir, 'docs.ndjson');
  const parts: string[] = [];
  for (const { line } of docLines(docs)) parts.push(`${line}\n`);
  writeFileSync(ndjson, parts.join(''));
  const copyFile = join(fileDir, 'docs.copy');
  if (pg) {
    await worker(ctx, ['copy-file', '--file', copyFile, '--docs', String(docs)]);
    shareWithPostgres(fileDir);
  }

  const steps: Step<BulkSample>[] = [
    {
      name: 'sqlite',
      run: () => sqliteWorker<BulkSample>(ctx, ['bulk', '--dir', join(ctx.dir, 'sqlite-bulk'), '--docs', String(docs)]),
    },
    {
      name: 'wharf-embedded',
      run: () => engineWorker<BulkSample>(ctx, ['bulk', '--dir', join(ctx.dir, 'bulk'), '--docs', String(docs)]),
    },
    { name: 'import-wharf', run: () => cliImport(ctx, ndjson, docs, 'wharf') },
    { name: 'import-rethinkdb', run: () => cliImport(ctx, ndjson, docs, 'rethinkdb') },
  ];
  if (pg)
    steps.push({
      name: 'postgres-copy',
      run: () =>
        worker<BulkSample>(ctx, [
          'pg-copy',
          '--port',
          String(pg.port),
          '--user',
          pg.conn.user,
          '--file',
          copyFile,
          '--docs',
          String(docs),
        ]),
    });
  for (const s of steps)
    s.describe = (x) =>
      `${fmtRate(x.docs_per_s)} (${fmtMs(x.total_ms)}${x.sync_ms !== undefined ? `, final sync ${fmtMs(x.sync_ms)}` : ''})`;
  ctx.log(
    `bulk: ${ctx.rounds} rounds of [${steps.map((s) => s.name).join(', ')}], ${docs.toLocaleString('en-US')} docs of ~150 B`,
  );
  const r = await interleave<BulkSample>(ctx.rounds, steps, ctx.log);
  const sq = r.sqlite!.map((s) => s.docs_per_s);
  const labels: Record<string, string> = {
    sqlite: 'better-sqlite3, one transaction (WAL, FULL)',
    'wharf-embedded': 'Wharf embedded NDJSON, soft + final sync',
    'import-wharf': 'wharf import over wharf:// (server)',
    'import-rethinkdb': 'wharf import over rethinkdb:// (server driver port)',
    'postgres-copy': `PostgreSQL ${pg?.version ?? ''} COPY (jsonb), one transaction`,
  };
  const goals: Record<string, [string, number]> = {
    'wharf-embedded': ['≥ 2.5× (engine issue)', 2.5],
    'import-wharf': ['≥ 1.0× (server issue)', 1.0],
    'import-rethinkdb': ['≥ 0.5× (server issue)', 0.5],
  };
  const rows: Row[] = [];
  const barX: number[] = [];
  const barY: number[] = [];
  let i = 0;
  for (const [name, xs] of Object.entries(r)) {
    const rate = xs.map((s) => s.docs_per_s);
    const sync = xs.map((s) => s.sync_ms).filter((x): x is number => x !== undefined);
    const ratios = pairRatios(rate, sq);
    const m = median(ratios);
    const g = goals[name];
    rows.push({
      scenario: 'bulk',
      measure: `${docs.toLocaleString('en-US')} docs: ${labels[name]}`,
      value: `${fmtRate(median(rate))} (${fmtMs(median(xs.map((s) => s.total_ms)))}${sync.length ? `, final sync ${fmtMs(median(sync))}` : ''})`,
      reference: name === 'sqlite' ? undefined : 'sqlite',
      ratio: name === 'sqlite' ? undefined : m,
      ratios: name === 'sqlite' ? undefined : ratios,
      goal: g?.[0],
      met: g ? m >= g[1] : undefined,
    });
    barX.push(++i);
    barY.push(Math.round(median(rate)));
  }
  // Bytes written per byte loaded (journal + runs + merges), per Wharf row.
  for (const [name, xs] of Object.entries(r)) {
    const ws = xs.map((s) => s.written).filter((w): w is WrittenPerLoaded => w !== undefined && w.loaded > 0);
    if (ws.length === 0) continue;
    const m = median(ws.map((w) => w.perByte));
    const share = (kind: 'journal' | 'flushes' | 'merges') => median(ws.map((w) => w[kind] / w.loaded)).toFixed(2);
    const otherMiB = median(ws.map((w) => w.other)) / 2 ** 20;
    rows.push({
      scenario: 'bulk',
      measure: `${docs.toLocaleString('en-US')} docs: ${labels[name]}: bytes written per byte loaded`,
      value: `journal ${share('journal')} + runs ${share('flushes')} + merges ${share('merges')}; ${otherMiB.toFixed(0)} MiB more for new journal segments and manifests`,
      ratio: m,
      ratioText: `${m.toFixed(2)}×`,
      ratios: ws.map((w) => w.perByte),
      goal: `≤ ${WRITTEN_PER_LOADED_GOAL}× (issue 31)`,
      met: m <= WRITTEN_PER_LOADED_GOAL,
    });
  }
  if (!pg)
    rows.push({
      scenario: 'bulk',
      measure: 'PostgreSQL COPY',
      value: 'not installed, skipped (apt-get install postgresql)',
    });
  rmSync(fileDir, { recursive: true, force: true });

  // ---- seed 002: ~900 KB blocks ----
  // [step name, the workers.ts mode (also its directory)]
  const blockModes = [
    ['sqlite-blocks', 'sqlite-blocks'],
    ['wharf-embedded-blocks', 'wharf-blocks'],
    ['wharf-driver-blocks', 'driver-blocks'],
  ] as const;
  const bsteps: Step<BlockSample>[] = blockModes.map(([name, mode]) => ({
    name,
    run: () => worker<BlockSample>(ctx, [mode, '--dir', join(ctx.dir, mode), '--blocks', String(blocks)]),
  }));
  for (const s of bsteps)
    s.describe = (x) =>
      `${x.blocks_per_s.toFixed(0)} blocks/s, ${x.mb_per_s.toFixed(0)} MB/s${x.sync_ms !== undefined ? `, final sync ${fmtMs(x.sync_ms)}` : ''}`;
  const bRounds = ctx.quick || blocks <= 2000 ? ctx.rounds : 1;
  ctx.log(
    `bulk blocks (seed 002): ${bRounds} round(s) of [${bsteps.map((s) => s.name).join(', ')}], ${blocks} blocks of ~900 KB`,
  );
  const b = await interleave<BlockSample>(bRounds, bsteps, ctx.log);
  const bsq = b['sqlite-blocks']!.map((s) => s.blocks_per_s);
  const blabels: Record<string, string> = {
    'sqlite-blocks': 'better-sqlite3, one transaction',
    'wharf-embedded-blocks': 'Wharf embedded, one soft insert per block + sync',
    'wharf-driver-blocks': "Wharf server, seed 002's driver loop (r.json, soft) + sync",
  };
  for (const [name, xs] of Object.entries(b)) {
    const rate = xs.map((s) => s.blocks_per_s);
    const ratios = pairRatios(rate, bsq);
    const sync = xs.map((s) => s.sync_ms).filter((x): x is number => x !== undefined);
    rows.push({
      scenario: 'bulk',
      measure: `${blocks} blocks of ~900 KB: ${blabels[name]}`,
      value: `${median(rate).toFixed(0)} blocks/s, ${median(xs.map((s) => s.mb_per_s)).toFixed(0)} MB/s${sync.length ? `, final sync ${fmtMs(median(sync))}` : ''}`,
      reference: name === 'sqlite-blocks' ? undefined : 'sqlite',
      ratio: name === 'sqlite-blocks' ? undefined : median(ratios),
      ratios: name === 'sqlite-blocks' ? undefined : ratios,
    });
  }
  return {
    name: 'bulk',
    rows,
    charts: [
      {
        id: 'bulk-rates',
        title: `bulk: ${docs.toLocaleString('en-US')} docs, docs/s (median) — ${Object.keys(r)
          .map((k, j) => `${j + 1} = ${labels[k]}`)
          .join('; ')}`,
        xLabel: 'system',
        yLabel: 'docs/s',
        x: barX,
        series: [{ label: 'docs/s', values: barY }],
        bars: true,
      },
    ],
    samples: { docs, blocks, block_rounds: bRounds, bulk: r, blocks_samples: b },
  };
}
