// Wharf server benchmark: the driver-port goals of the server issue, each a ratio measured in the
// same run (see packages/bench/README.md for why: fdatasync time swings 10× within minutes).
//
//   npx tsx packages/bench/src/goals/server.ts [--pairs 5] [--n 1000] [--writers 64] [--per-writer 100]
//        [--conc-rounds 3] [--dir DIR]
//
// a. The official `rethinkdb` driver, seed 000's loop: 1000 sequential single-document hard inserts
//    over the driver port of a real server process, vs the raw preallocated fdatasync loop
//    (packages/engine/core/examples/fsync_limit.rs --mode overwrite, same directory), interleaved
//    A B A B …; figure: median of the per-round time ratios; goal ≤ 1.25×.
// b. 64 driver connections inserting hard concurrently (each awaiting its own inserts):
//    fdatasyncs per document from GET /api/stats (engine.fdatasyncs delta ÷ documents);
//    goal ≤ 1/32.
//
// Every round starts a fresh server process on a fresh data directory; connect, tableCreate and
// shutdown are outside the timers. Prints a table and writes results/server-<timestamp>.json.

import { mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import rethinkdb from 'rethinkdb';
import { numOpt, parseArgs, strOpt } from '../lib/args.js';
import { moduleArgv, runJsonChild } from '../lib/child.js';
import { buildFsyncLimit, findRepoRoot, runFsyncLimit } from '../lib/fsync-limit.js';
import { interleave } from '../lib/interleave.js';
import { machineInfo, writeResults } from '../lib/results.js';
import { type ServerProc, startServerProc } from '../lib/server-proc.js';
import { median, pairRatios, round, summarize } from '../lib/stats.js';
import { fmtMs, fmtRate, fmtRatio, formatTable } from '../lib/table.js';

// biome-ignore lint/suspicious/noExplicitAny: the official driver has no types; its results are checked where they are used
const r: any = rethinkdb;
// A repository script: results and scratch data go under the clone (findRepoRoot), else the cwd.
const ROOT = findRepoRoot() ?? process.cwd();
const log = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

const startServer = (dataDir: string): Promise<ServerProc> => startServerProc(dataDir);

async function engineStats(url: string): Promise<Record<string, number>> {
  const res = await fetch(`${url}/api/stats`);
  return ((await res.json()) as { engine: Record<string, number> }).engine;
}

function doc(i: number, writer = 0): Record<string, unknown> {
  return { id: `w${writer}-${i}`, writer, seq: i, name: `user ${i}`, payload: 'x'.repeat(64) };
}

interface SeqSample {
  total_ms: number;
  per_insert_us: number;
  fdatasyncs: number;
  latency_us: ReturnType<typeof summarize>;
  /** n round trips of `r.expr(i)` on the same connection: the driver and server without the engine. */
  expr_ms: number;
  /** CPU of this (the driver's) process per `r.expr` round trip, µs. */
  driver_cpu_us: number;
}

async function driverSequential(dir: string, n: number): Promise<SeqSample> {
  rmSync(dir, { recursive: true, force: true });
  const server = await startServer(dir);
  try {
    const conn = await r.connect({ host: '127.0.0.1', port: server.driverPort });
    await r.tableCreate('bench').run(conn);
    const before = await engineStats(server.url);
    const lat: number[] = [];
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      const res = await r.table('bench').insert(doc(i), { durability: 'hard' }).run(conn);
      lat.push((performance.now() - t) * 1000);
      if (res.inserted !== 1) throw new Error(`insert ${i}: ${JSON.stringify(res)}`);
    }
    const total = performance.now() - t0;
    const after = await engineStats(server.url);
    // Attribution: the same number of round trips that never reach the engine.
    const cpu0 = process.cpuUsage();
    const e0 = performance.now();
    for (let i = 0; i < n; i++) await r.expr(i).run(conn);
    const exprMs = performance.now() - e0;
    const cpu = process.cpuUsage(cpu0);
    await conn.close();
    return {
      total_ms: round(total, 2),
      per_insert_us: round((total * 1000) / n, 1),
      fdatasyncs: (after.fdatasyncs ?? 0) - (before.fdatasyncs ?? 0),
      latency_us: summarize(lat),
      expr_ms: round(exprMs, 2),
      driver_cpu_us: round((cpu.user + cpu.system) / n, 1),
    };
  } finally {
    await server.stop();
  }
}

interface RawSample {
  total_ms: number;
  per_op_us: number;
}

async function rawLoop(bin: string, dir: string, n: number): Promise<RawSample> {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const res = await runFsyncLimit(bin, dir, n, 'overwrite', { cwd: ROOT });
  const op = res.json.results.overwrite;
  if (!op) throw new Error('fsync_limit printed no overwrite result');
  return { total_ms: round(op.total_ms, 2), per_op_us: round((op.total_ms * 1000) / n, 1) };
}

/** The same 1000 hard inserts straight into the engine (no server, no driver), for attribution. */
async function engineDirect(dir: string, n: number): Promise<RawSample> {
  const [cmd, args] = moduleArgv('lib/engine-worker', ['seq', '--dir', dir, '--n', String(n)]);
  const res = await runJsonChild<{ total_ms: number }>(cmd, args, { cwd: ROOT });
  return { total_ms: round(res.json.total_ms, 2), per_op_us: round((res.json.total_ms * 1000) / n, 1) };
}

interface ConcSample {
  writers: number;
  docs: number;
  total_ms: number;
  docs_per_s: number;
  fdatasyncs: number;
  fdatasyncs_per_doc: number;
  groups: number;
  max_group_ops: number;
}

async function driverConcurrent(dir: string, writers: number, perWriter: number): Promise<ConcSample> {
  rmSync(dir, { recursive: true, force: true });
  const server = await startServer(dir);
  try {
    const setup = await r.connect({ host: '127.0.0.1', port: server.driverPort });
    await r.tableCreate('conc').run(setup);
    await setup.close();
    const conns = await Promise.all(
      Array.from({ length: writers }, () => r.connect({ host: '127.0.0.1', port: server.driverPort })),
    );
    const before = await engineStats(server.url);
    const t0 = performance.now();
    await Promise.all(
      conns.map(async (c, w) => {
        for (let i = 0; i < perWriter; i++) {
          const res = await r.table('conc').insert(doc(i, w), { durability: 'hard' }).run(c);
          if (res.inserted !== 1) throw new Error(`writer ${w} insert ${i}: ${JSON.stringify(res)}`);
        }
      }),
    );
    const total = performance.now() - t0;
    const after = await engineStats(server.url);
    await Promise.all(conns.map((c) => c.close()));
    const docs = writers * perWriter;
    const fdatasyncs = (after.fdatasyncs ?? 0) - (before.fdatasyncs ?? 0);
    return {
      writers,
      docs,
      total_ms: round(total, 1),
      docs_per_s: round((docs * 1000) / total, 0),
      fdatasyncs,
      fdatasyncs_per_doc: round(fdatasyncs / docs, 5),
      groups: (after.groups ?? 0) - (before.groups ?? 0),
      max_group_ops: after.maxGroupOps ?? 0,
    };
  } finally {
    await server.stop();
  }
}

async function main(): Promise<void> {
  const { opts } = parseArgs(process.argv.slice(2));
  const pairs = numOpt(opts, 'pairs', 5);
  const n = numOpt(opts, 'n', 1000);
  const writers = numOpt(opts, 'writers', 64);
  const perWriter = numOpt(opts, 'per-writer', 100);
  const concRounds = numOpt(opts, 'conc-rounds', 3);
  const base = resolve(strOpt(opts, 'dir', join(ROOT, '.wharf-tmp', `bench-server-${process.pid}`)));
  mkdirSync(base, { recursive: true });
  const started = new Date();
  log(`server benchmark in ${base}: ${pairs} pairs of ${n} inserts; ${concRounds} × ${writers} writers × ${perWriter}`);
  const machine = machineInfo(base);
  const bin = buildFsyncLimit(ROOT);

  try {
    log('a. official driver, sequential hard inserts vs the raw fdatasync loop');
    const seq = await interleave<SeqSample | RawSample>(
      pairs,
      [
        {
          name: 'driver-hard-inserts',
          run: () => driverSequential(join(base, 'seq'), n),
          describe: (s) => `${fmtMs((s as SeqSample).total_ms)}`,
        },
        {
          name: 'raw-fdatasync-loop',
          run: () => rawLoop(bin, join(base, 'raw'), n),
          describe: (s) => `${fmtMs((s as RawSample).total_ms)}`,
        },
        {
          name: 'engine-direct',
          run: () => engineDirect(join(base, 'engine'), n),
          describe: (s) => `${fmtMs((s as RawSample).total_ms)}`,
        },
      ],
      log,
    );
    const engine = seq['engine-direct'] as RawSample[];
    const driver = seq['driver-hard-inserts'] as SeqSample[];
    const raw = seq['raw-fdatasync-loop'] as RawSample[];
    const ratios = pairRatios(
      driver.map((s) => s.total_ms),
      raw.map((s) => s.total_ms),
    );
    const seqRatio = median(ratios);

    log(`b. ${writers} driver connections inserting hard concurrently`);
    const conc: ConcSample[] = [];
    for (let i = 0; i < concRounds; i++) {
      const s = await driverConcurrent(join(base, 'conc'), writers, perWriter);
      log(
        `  [${i + 1}/${concRounds}] ${s.docs} docs in ${fmtMs(s.total_ms)}, ${s.fdatasyncs} fdatasyncs (${s.fdatasyncs_per_doc}/doc), ${s.groups} groups`,
      );
      conc.push(s);
    }
    const perDoc = median(conc.map((s) => s.fdatasyncs_per_doc));

    const engineRatio = median(
      pairRatios(
        engine.map((s) => s.total_ms),
        raw.map((s) => s.total_ms),
      ),
    );
    const serverRatio = median(
      pairRatios(
        driver.map((s) => s.total_ms),
        engine.map((s) => s.total_ms),
      ),
    );
    const exprRatio = median(
      pairRatios(
        driver.map((s) => s.expr_ms),
        raw.map((s) => s.total_ms),
      ),
    );
    const rows = [
      [
        'a. driver 1000 hard inserts / raw fdatasync loop',
        `${fmtMs(median(driver.map((s) => s.total_ms)))} / ${fmtMs(median(raw.map((s) => s.total_ms)))}`,
        fmtRatio(seqRatio),
        '≤ 1.25×',
        seqRatio <= 1.25 ? 'met' : 'NOT MET',
      ],
      [
        '   attribution: engine alone / raw loop',
        `${fmtMs(median(engine.map((s) => s.total_ms)))}`,
        fmtRatio(engineRatio),
        '',
        '',
      ],
      ['   attribution: driver + server / engine alone', '', fmtRatio(serverRatio), '', ''],
      [
        `   attribution: ${n} r.expr round trips (no engine) / raw loop`,
        `${fmtMs(median(driver.map((s) => s.expr_ms)))}; driver CPU ${median(driver.map((s) => s.driver_cpu_us))} µs per query`,
        fmtRatio(exprRatio),
        '',
        '',
      ],
      [
        `b. ${writers} connections: fdatasyncs per document`,
        `${median(conc.map((s) => s.fdatasyncs))} / ${conc[0]?.docs ?? 0} docs (${fmtRate(median(conc.map((s) => s.docs_per_s)))})`,
        String(round(perDoc, 4)),
        `≤ ${round(1 / 32, 4)}`,
        perDoc <= 1 / 32 ? 'met' : 'NOT MET',
      ],
    ];
    process.stdout.write(`\n${formatTable(['goal', 'measured', 'figure', 'goal', 'result'], rows)}\n`);
    process.stdout.write(`\nper-round ratios (a): ${ratios.map((x) => round(x, 3)).join(', ')}\n`);
    process.stdout.write(
      `per-insert (a): driver median ${median(driver.map((s) => s.per_insert_us))} µs, raw median ${median(raw.map((s) => s.per_op_us))} µs; driver p50 latency ${median(driver.map((s) => s.latency_us.median))} µs\n`,
    );
    const file = writeResults(
      ROOT,
      'server',
      {
        started: started.toISOString(),
        machine,
        config: { pairs, n, writers, perWriter, concRounds },
        sequential: {
          driver,
          raw,
          engine,
          ratios,
          median_ratio: seqRatio,
          goal: 1.25,
          engine_vs_raw: engineRatio,
          driver_vs_engine: serverRatio,
          expr_vs_raw: exprRatio,
        },
        concurrent: { samples: conc, median_fdatasyncs_per_doc: perDoc, goal: 1 / 32 },
      },
      started,
    );
    process.stdout.write(`results: ${file}\n`);
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
