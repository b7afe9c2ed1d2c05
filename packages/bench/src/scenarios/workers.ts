// Child processes of `wharf bench` that are not in lib/engine-worker.ts / lib/sqlite-worker.ts:
// one measurement on a fresh store, printed as one JSON line on stdout.
//
//   node [--conditions=wharf-source --import tsx] workers.{ts,js} <mode> --dir D [...]
//
// modes: sqlite-seq, sqlite-blocks, wharf-blocks, driver-seq, rethinkdb-seq (--bin B), driver-blocks, pg-seq, pg-copy,
//        kv-js, sustained (--target embedded|server --memory-budget-mb N)

import { mkdirSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, PerformanceObserver, constants as perf } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { createLoader, EmbeddedTarget, type Interval } from '@wharf/client';
import { Database } from '@wharf/engine';
import type Sqlite from 'better-sqlite3';
import rethinkdb from 'rethinkdb';
import { numOpt, parseArgs, strOpt } from '../lib/args.js';
import { FROM_SOURCE_TREE, packageModule } from '../lib/child.js';
import { docLines, smallDoc, writeDocLine } from '../lib/docs.js';
import { type ReadResult, startPointReads } from '../lib/point-reads.js';
import { startRethinkdb } from '../lib/rethinkdb-proc.js';
import {
  procCpuMs,
  procMajorFaults,
  procRssBytes,
  type ServerProc,
  serverEngineStats,
  startServerProc,
} from '../lib/server-proc.js';
import { median, summarize } from '../lib/stats.js';
import { cpuTimes, stealShare } from '../lib/steal.js';
import { mulberry32 } from '../random.js';
import { blockLine } from './blocks.js';

// biome-ignore lint/suspicious/noExplicitAny: the official driver has no types; its results are checked where they are used
const r: any = rethinkdb;
const now = () => performance.now();

function fresh(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
}

// ---- SQLite ---------------------------------------------------------------------------------

/** better-sqlite3 is an optional peer dependency: loaded only by the modes that use it. */
async function openSqlite(dir: string): Promise<Sqlite.Database> {
  const { default: Database } = await import('better-sqlite3');
  fresh(dir);
  const db = new Database(join(dir, 'bench.sqlite'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec('CREATE TABLE docs (id TEXT PRIMARY KEY, doc TEXT NOT NULL)');
  return db;
}

/** Seed 000's loop on SQLite: one autocommit INSERT per document (each COMMIT fsyncs the WAL). */
async function sqliteSeq(dir: string, n: number) {
  const db = await openSqlite(dir);
  const stmt = db.prepare('INSERT INTO docs (id, doc) VALUES (?, ?)');
  const lat: number[] = new Array(n);
  const t0 = now();
  for (let i = 0; i < n; i++) {
    const d = smallDoc(0, i);
    const a = now();
    stmt.run(d.id, JSON.stringify(d));
    lat[i] = (now() - a) * 1000;
  }
  const totalMs = now() - t0;
  db.close();
  return { total_ms: totalMs, docs_per_s: n / (totalMs / 1000), latency_us: summarize(lat) };
}

async function sqliteBlocks(dir: string, blocks: number) {
  const db = await openSqlite(dir);
  db.pragma('wal_autocheckpoint = 0');
  const stmt = db.prepare('INSERT INTO docs (id, doc) VALUES (?, ?)');
  let bytes = 0;
  const t0 = now();
  db.transaction(() => {
    for (let i = 0; i < blocks; i++) {
      const line = blockLine(i);
      bytes += line.length;
      stmt.run(`b${String(i).padStart(8, '0')}`, line);
    }
  })();
  const totalMs = now() - t0;
  db.close();
  return blockRates(blocks, bytes, totalMs);
}

/**
 * What every blocks mode reports: the blocks and bytes written, over how long, and the rates over
 * the whole; with `insertMs`, the part before the final sync.
 */
function blockRates(blocks: number, bytes: number, totalMs: number, insertMs?: number) {
  return {
    blocks,
    bytes,
    ...(insertMs !== undefined && { insert_ms: insertMs, sync_ms: totalMs - insertMs }),
    total_ms: totalMs,
    blocks_per_s: blocks / (totalMs / 1000),
    mb_per_s: bytes / 1e6 / (totalMs / 1000),
  };
}

// ---- Wharf embedded: seed 002's blocks ------------------------------------------------------

/** One block per insert (soft), one at a time as in seed 002's loop, then one sync timed apart. */
async function wharfBlocks(dir: string, blocks: number) {
  fresh(dir);
  const db = await Database.open(dir);
  await db.createTable('blocks');
  const t = db.table('blocks');
  const s0 = db.stats();
  let bytes = 0;
  const t0 = now();
  for (let i = 0; i < blocks; i++) {
    const buf = Buffer.from(`${blockLine(i)}\n`);
    bytes += buf.length;
    const res = await t.insertNdjson(buf, { durability: 'soft' });
    if (res.inserted !== 1) throw new Error(`block ${i}: ${JSON.stringify(res)}`);
  }
  const insertMs = now() - t0;
  await db.sync();
  const totalMs = now() - t0;
  const s1 = db.stats();
  await db.close();
  return {
    ...blockRates(blocks, bytes, totalMs, insertMs),
    fdatasyncs: s1.fdatasyncs - s0.fdatasyncs,
    checkpoints: s1.checkpoints - s0.checkpoints,
  };
}

// ---- Wharf server through the official rethinkdb driver ------------------------------------

/**
 * A server process on a fresh `dir`, connected to through the official driver, with `table`
 * created; runs `fn`, then closes the connection and stops the server.
 */
async function withDriverTable<T>(
  dir: string,
  table: string,
  fn: (conn: rethinkdb.Connection, server: ServerProc) => Promise<T>,
): Promise<T> {
  fresh(dir);
  const server = await startServerProc(dir);
  try {
    const conn = await r.connect({ host: '127.0.0.1', port: server.driverPort });
    await r.tableCreate(table).run(conn);
    try {
      return await fn(conn, server);
    } finally {
      await conn.close();
    }
  } finally {
    await server.stop();
  }
}

/**
 * Seed 000's loop on a freshly started server: `n` sequential hard inserts through the driver
 * port, each awaited, then, on the same server and connection, the driver's floor: `n` bare
 * `r.expr(i)` round trips (nothing written). The inserts go first, so they meet the fresh
 * server, and the floor loop does not warm the server for them.
 */
function driverSeq(dir: string, n: number) {
  return withDriverTable(dir, 'bench', async (conn, server) => {
    const before = await serverEngineStats(server.url);
    const loops = await seedLoops(conn, n, server.proc.pid);
    const after = await serverEngineStats(server.url);
    return { ...loops, fdatasyncs: (after.fdatasyncs ?? 0) - (before.fdatasyncs ?? 0) };
  });
}

/** The two loops of seed 000 through the official driver on `conn`, whose database has table `bench`. */
async function seedLoops(conn: rethinkdb.Connection, n: number, serverPid: number | undefined) {
  const cpu0 = procCpuMs(serverPid);
  const lat: number[] = new Array(n);
  const t0 = now();
  for (let i = 0; i < n; i++) {
    const a = now();
    const res = await r.table('bench').insert(smallDoc(0, i), { durability: 'hard' }).run(conn);
    lat[i] = (now() - a) * 1000;
    if (res.inserted !== 1) throw new Error(`insert ${i}: ${JSON.stringify(res)}`);
  }
  const totalMs = now() - t0;
  const cpu1 = procCpuMs(serverPid);
  const exprLat: number[] = new Array(n);
  const e0 = now();
  for (let i = 0; i < n; i++) {
    const a = now();
    const v = await r.expr(i).run(conn);
    exprLat[i] = (now() - a) * 1000;
    if (v !== i) throw new Error(`r.expr(${i}) answered ${JSON.stringify(v)}`);
  }
  const exprMs = now() - e0;
  const cpu2 = procCpuMs(serverPid);
  const cpu = (a: number | null, b: number | null) => (a === null || b === null ? undefined : b - a);
  return {
    total_ms: totalMs,
    docs_per_s: n / (totalMs / 1000),
    latency_us: summarize(lat),
    expr_ms: exprMs,
    expr_latency_us: summarize(exprLat),
    /** CPU the server process used (all its threads) during each loop */
    server_cpu_ms: cpu(cpu0, cpu1),
    expr_server_cpu_ms: cpu(cpu1, cpu2),
  };
}

/**
 * Seed 000's loops (`seedLoops`) on a freshly started real RethinkDB (`bin`, e.g. 2.4.4) in `dir`,
 * on free ports of 127.0.0.1, for the figure beside Wharf's.
 */
async function rethinkdbSeq(bin: string, dir: string, n: number) {
  if (!bin) throw new Error('rethinkdb-seq needs --bin PATH (a rethinkdb server binary)');
  fresh(dir);
  const rdb = await startRethinkdb(bin, dir);
  try {
    const conn = await r.connect({ host: '127.0.0.1', port: rdb.driverPort });
    try {
      await r.tableCreate('bench').run(conn);
      return await seedLoops(conn, n, rdb.proc.pid);
    } finally {
      await conn.close();
    }
  } finally {
    await rdb.stop();
  }
}

/** Seed 002's loop: r.table(t).insert(r.json(BLOCK), {durability: 'soft'}) one at a time, then sync. */
function driverBlocks(dir: string, blocks: number) {
  return withDriverTable(dir, 'blocks', async (conn) => {
    let bytes = 0;
    const t0 = now();
    for (let i = 0; i < blocks; i++) {
      const line = blockLine(i);
      bytes += line.length;
      const res = await r.table('blocks').insert(r.json(line), { durability: 'soft' }).run(conn);
      if (res.inserted !== 1) throw new Error(`block ${i}: ${JSON.stringify(res).slice(0, 300)}`);
    }
    const insertMs = now() - t0;
    await r.table('blocks').sync().run(conn);
    return blockRates(blocks, bytes, now() - t0, insertMs);
  });
}

// ---- PostgreSQL (a cluster started by the orchestrator) -------------------------------------

async function pgClient(port: number, user: string) {
  const { default: pg } = await import('pg');
  const c = new pg.Client({ host: '127.0.0.1', port, user, database: 'postgres' });
  await c.connect();
  await c.query('DROP TABLE IF EXISTS docs');
  await c.query('CREATE TABLE docs (id text PRIMARY KEY, doc jsonb NOT NULL)');
  await c.query('CHECKPOINT');
  return c;
}

/** Seed 000's loop on PostgreSQL: one autocommit INSERT per document (synchronous_commit=on). */
async function pgSeq(port: number, user: string, n: number) {
  const c = await pgClient(port, user);
  const lat: number[] = new Array(n);
  const t0 = now();
  for (let i = 0; i < n; i++) {
    const d = smallDoc(0, i);
    const a = now();
    await c.query({
      name: 'ins',
      text: 'INSERT INTO docs (id, doc) VALUES ($1, $2)',
      values: [d.id, JSON.stringify(d)],
    });
    lat[i] = (now() - a) * 1000;
  }
  const totalMs = now() - t0;
  await c.end();
  return { total_ms: totalMs, docs_per_s: n / (totalMs / 1000), latency_us: summarize(lat) };
}

/** COPY docs FROM a server-side file (its best case: no client transfer), one transaction. */
async function pgCopy(port: number, user: string, file: string, docs: number) {
  const c = await pgClient(port, user);
  const t0 = now();
  const res = await c.query(`COPY docs (id, doc) FROM '${file.replace(/'/g, "''")}'`);
  const totalMs = now() - t0;
  await c.end();
  if (res.rowCount !== docs) throw new Error(`COPY: ${res.rowCount} rows, expected ${docs}`);
  return { docs, total_ms: totalMs, docs_per_s: docs / (totalMs / 1000) };
}

/** The bulk documents as COPY text: key TAB json (the lines hold no tab or backslash). */
function writeCopyFile(file: string, docs: number) {
  const parts: string[] = [];
  for (const { key, line } of docLines(docs)) parts.push(`${key}\t${line}\n`);
  writeFileSync(file, parts.join(''));
  return { file };
}

// ---- kv through the JS API ------------------------------------------------------------------

/** 8-byte keys and values (8 hex chars each), sequential, in hard transactions of `batch` puts. */
async function kvJs(dir: string, n: number, batch: number) {
  fresh(dir);
  const db = await Database.open(dir);
  await db.createTable('kv', { primaryKey: 'k' });
  const t = db.table('kv');
  const hex = (x: number) => (x >>> 0).toString(16).padStart(8, '0');
  const s0 = db.stats();
  let buildMs = 0;
  const t0 = now();
  for (let i = 0; i < n; i += batch) {
    const end = Math.min(n, i + batch);
    const b0 = now();
    let s = '';
    for (let k = i; k < end; k++) s += `{"k":"${hex(k)}","v":"${hex(Math.imul(k, 2654435761))}"}\n`;
    const buf = Buffer.from(s);
    buildMs += now() - b0;
    const res = await t.insertNdjson(buf, { durability: 'hard' });
    if (res.inserted !== end - i) throw new Error(`kv batch at ${i}: ${JSON.stringify(res).slice(0, 300)}`);
  }
  const totalMs = now() - t0;
  const s1 = db.stats();
  await db.close();
  return {
    puts: n,
    batch,
    transactions: Math.ceil(n / batch),
    total_ms: totalMs,
    puts_per_s: n / (totalMs / 1000),
    build_ms: buildMs,
    fdatasyncs: s1.fdatasyncs - s0.fdatasyncs,
  };
}

// ---- sustained import (seed 003, and the larger-than-memory issue's acceptance) --------------

/** The engine fields the sustained scenario samples every second (names as in db.stats()). */
const SAMPLED = [
  'fdatasyncs',
  'groups',
  'segmentRotations',
  'checkpoints',
  'merges',
  'documentsWritten',
  'memoryBudget',
  'memtableBytes',
  'frozenMemtableBytes',
  'cacheBytes',
  'cacheHits',
  'cacheMisses',
  'runs',
  'runBytes',
  'runIndexBytes',
  'writeRateLimitBps',
  'pacingDebtBytes',
  'mergeBacklogRuns',
  'flushRateBps',
  'mergeRateBps',
  'pacedGroups',
  'pacingDelayMs',
  'stallsAvoided',
  'writeStops',
  'writeStopMs',
  'groupsCompressed',
  'journalBytesUncompressed',
  'journalBytesSaved',
  'compressionRatio',
  'segmentsRecycled',
  'reads',
  'readsFromMemory',
  // server target only (its /api/stats `server` part): how late the server's event loop ran,
  // and the server process's GC pauses
  'serverEventLoopDelayP99Ms',
  'serverEventLoopDelayMaxMs',
  'serverGcMajor',
  'serverGcMajorMs',
  'serverGcMinor',
  'serverGcMinorMs',
] as const;
/** The sampled engine figures each of the report's `engine_samples` keeps (besides t, rss, steal). */
const REPORTED_SAMPLE_FIELDS = [
  'memtableBytes',
  'frozenMemtableBytes',
  'cacheBytes',
  'runs',
  'writeRateLimitBps',
  'pacingDebtBytes',
  'mergeBacklogRuns',
  'pacedGroups',
  'writeStops',
  'stallsAvoided',
] as const satisfies readonly (typeof SAMPLED)[number][];
type Sampled = Record<(typeof SAMPLED)[number], number>;

type StageHistograms = Record<string, { histogramUs: number[] }>;

/**
 * The engine's per-stage write latency (`stats().writeStages`) over the load only: each stage's
 * histogram at the end minus at the start, as the share of writes over 4 and over 8 ms: its
 * buckets are powers of two, too coarse for a p99.9 to tell stages apart, but exact there.
 */
function writeStagesDuring(start: Record<string, unknown>, end: Record<string, unknown>) {
  const grown = stageGrowth(start, end);
  if (!grown) return null;
  return Object.fromEntries(
    Object.entries(grown).map(([stage, h]) => {
      const count = h.reduce((s, n) => s + n, 0);
      const over = (bucket: number) => (count ? h.slice(bucket).reduce((s, n) => s + n, 0) / count : 0);
      return [stage, { count, over_4ms: over(12), over_8ms: over(13) }];
    }),
  );
}

/** Per stage, the writes each power-of-two bucket gained between two `stats()` readings. */
function stageGrowth(start: Record<string, unknown>, end: Record<string, unknown>): Record<string, number[]> | null {
  const a = start.writeStages as StageHistograms | undefined;
  const b = end.writeStages as StageHistograms | undefined;
  if (!a || !b) return null;
  return Object.fromEntries(
    Object.entries(b).map(([stage, { histogramUs }]) => [
      stage,
      histogramUs.map((n, i) => n - (a[stage]?.histogramUs[i] ?? 0)),
    ]),
  );
}

/**
 * Per stage, the slowest write between two `stats()` readings, as the lower bound (ms) of the
 * highest bucket that gained a write (0: no write went through the stage).
 */
function stageMaxBetween(start: Record<string, unknown>, end: Record<string, unknown>): Record<string, number> {
  return Object.fromEntries(
    Object.entries(stageGrowth(start, end) ?? {}).map(([stage, h]) => {
      let top = h.length - 1;
      while (top >= 0 && h[top]! <= 0) top--;
      return [stage, top < 0 ? 0 : 2 ** top / 1000];
    }),
  );
}

function pick(stats: Record<string, unknown>): Sampled {
  const out = {} as Sampled;
  for (const k of SAMPLED) {
    const v = stats[k];
    out[k] = typeof v === 'number' ? v : 0;
  }
  return out;
}

interface Reader {
  acknowledged(n: number): void;
  stop(): Promise<ReadResult>;
}

/** Point gets on this thread's event loop (the embedded target). */
function startLocalReader(tgt: SustainedTarget, rate: number): Reader {
  let n = 0;
  const stop = startPointReads(
    rate,
    () => n,
    async (key) => ((await tgt.get(key)) ? 'found' : 'missing'),
  );
  return {
    acknowledged: (upto) => {
      n = upto;
    },
    stop,
  };
}

/** Point gets over HTTP from a worker thread (lib/http-reader.ts): a separate client. Resolves once it is loaded. */
async function startHttpReader(url: string, rate: number): Promise<Reader> {
  const acked = new Int32Array(new SharedArrayBuffer(4));
  // A worker does not inherit `--import tsx` (Node 20): from the sources it registers tsx, then
  // loads the TS file.
  const file = pathToFileURL(packageModule('lib/http-reader')).href;
  const boot = FROM_SOURCE_TREE
    ? `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(file)}); })`
    : `import(${JSON.stringify(file)})`;
  const worker = new Worker(boot, { eval: true, workerData: { url, rate, acked } });
  await new Promise<void>((res, rej) => {
    worker.once('message', () => res()); // 'ready'
    worker.once('error', rej);
  });
  return {
    acknowledged: (n) => Atomics.store(acked, 0, Math.max(0, Math.min(n, 2 ** 31 - 1))),
    stop: () =>
      new Promise<ReadResult>((res, rej) => {
        worker.once('message', (r: ReadResult) => {
          void worker.terminate();
          res(r);
        });
        worker.once('error', rej);
        worker.postMessage('stop');
      }),
  };
}

/** What the two targets differ in: where the loader sends, engine stats, point gets, RSS. */
interface SustainedTarget {
  name: 'embedded' | 'server';
  /** The server's base URL (server target only). */
  url?: string;
  loaderTarget: string | EmbeddedTarget;
  stats(): Promise<Record<string, unknown>>;
  /** One point get; resolves true when the document was found. */
  get(key: string): Promise<boolean>;
  /** RSS of the process that holds the engine. */
  rss(): number;
  /** Major page faults of the engine's process so far. */
  majorFaults(): number;
  close(): Promise<void>;
}

async function embeddedTarget(dir: string, memoryBudget: number): Promise<SustainedTarget> {
  const db = await Database.open(dir, { memoryBudget });
  const target = new EmbeddedTarget(db as never);
  let table: ReturnType<Database['table']> | undefined;
  return {
    name: 'embedded',
    loaderTarget: target,
    stats: async () => db.stats() as unknown as Record<string, unknown>,
    get: async (key) => (await (table ??= db.table('sustained')).get(key)) !== null,
    rss: () => process.memoryUsage.rss(),
    majorFaults: () => process.resourceUsage().majorPageFault,
    close: () => db.close(),
  };
}

async function serverTarget(dir: string, memoryBudgetMb: number): Promise<SustainedTarget> {
  const server = await startServerProc(dir, { memoryBudgetMb });
  const budget = (await serverEngineStats(server.url)).memoryBudget;
  if (budget !== undefined && Math.abs(budget - memoryBudgetMb * 2 ** 20) > 1) {
    await server.stop();
    throw new Error(
      `the server reports memoryBudget ${budget}, expected ${memoryBudgetMb} MiB: WHARF_MEMORY_BUDGET_MB was not applied`,
    );
  }
  return {
    name: 'server',
    url: server.url,
    loaderTarget: `wharf://127.0.0.1:${server.httpPort}`,
    stats: async () => {
      const { engine, server: s } = (await fetch(`${server.url}/api/stats`).then((r) => r.json())) as {
        engine: Record<string, unknown>;
        server: Record<string, number>;
      };
      return {
        ...engine,
        serverEventLoopDelayP99Ms: s.eventLoopDelayP99Ms,
        serverEventLoopDelayMaxMs: s.eventLoopDelayMaxMs,
        serverGcMajor: s.gcMajor,
        serverGcMajorMs: s.gcMajorMs,
        serverGcMinor: s.gcMinor,
        serverGcMinorMs: s.gcMinorMs,
      };
    },
    get: async (key) => {
      const res = await fetch(`${server.url}/api/tables/sustained/documents/${encodeURIComponent(key)}`);
      await res.arrayBuffer();
      if (res.status !== 200 && res.status !== 404) throw new Error(`GET document ${key}: HTTP ${res.status}`);
      return res.status === 200;
    },
    rss: () => procRssBytes(server.proc.pid) ?? 0,
    majorFaults: () => procMajorFaults(server.proc.pid) ?? 0,
    close: async () => {
      await server.stop();
    },
  };
}

/**
 * The loader (batched soft writes, 4 in flight) fed generated ~150 B documents as fast as it takes
 * them for `seconds`, then end() (final sync), into the embedded engine (in this process) or a
 * server process over wharf://, either one opened with a memory budget. Alongside, one reader
 * makes point gets of already-acknowledged keys at a fixed rate. Per second: engine memory and
 * pacing; per 10 s: docs, latency, fdatasyncs. A safety net stops feeding when the RSS of the
 * process holding the engine passes a limit (judged against the budget).
 */
/** Free disk space below which `sustained` stops feeding. */
const DISK_RESERVE_BYTES = 8e9;

async function sustained(
  dir: string,
  seconds: number,
  which: string,
  budgetMb: number,
  readsPerSec: number,
  maxRssMb: number | undefined,
  batchSize: number,
  fixedConcurrency: boolean,
) {
  fresh(dir);
  const budget = Math.round(budgetMb * 2 ** 20);
  const tgt =
    which === 'server'
      ? await serverTarget(dir, budgetMb)
      : which === 'embedded'
        ? await embeddedTarget(dir, budget)
        : null;
  if (!tgt) throw new Error(`--target must be embedded or server, got ${which}`);
  const rssStart = tgt.rss();
  // The engine no longer keeps tables in memory: RSS should stay near the budget. Stop feeding
  // (and say so) if it does not: RSS at start + 8 × budget + 1 GiB, at most half the RAM.
  const rssLimit =
    maxRssMb !== undefined ? maxRssMb * 2 ** 20 : Math.min(os.totalmem() * 0.5, rssStart + 8 * budget + 2 ** 30);
  let stoppedForMemory: { at_s: number; rss_mb: number } | null = null;
  // A full-speed load writes tens of GB in 10 minutes, and a merge needs room for its output
  // beside its inputs: stop feeding (and say so) before the disk fills, not at ENOSPC.
  const freeBytes = () => {
    const f = statfsSync(dir);
    return f.bavail * f.bsize;
  };
  let stoppedForDisk: { at_s: number; free_gb: number } | null = null;
  let peakRss = rssStart;

  // Each second also says where that second's slowest write could have waited: this event loop's
  // longest delay and GC pause in it, and per write stage the slowest write's bucket.
  interface SecondCause {
    loopMaxMs: number;
    gcMaxMs: number;
    stageMaxMs: Record<string, number>;
  }
  const samples: ({
    t: number;
    rss: number;
    loaderMajorFaults: number;
    engineMajorFaults: number;
    steal: number;
  } & Sampled &
    SecondCause)[] = [];
  const loopSecond = monitorEventLoopDelay({ resolution: 1 });
  let gcSecondMaxMs = 0;
  let cpuBefore = cpuTimes();
  const majorFaultsStart = { loader: process.resourceUsage().majorPageFault, engine: tgt.majorFaults() };
  const fds: { t: number; fdatasyncs: number; checkpoints: number }[] = [];
  const t0 = now();
  const firstRaw = await tgt.stats();
  const first = pick(firstRaw);
  let prevRaw = firstRaw;
  let last10 = { t: t0, s: first };
  let sampling = false;
  const sampler = setInterval(() => {
    if (sampling) return; // a slow /api/stats: skip a beat rather than pile up
    sampling = true;
    void tgt
      .stats()
      .then((raw) => {
        const t = now();
        const s = pick(raw);
        const rss = tgt.rss();
        peakRss = Math.max(peakRss, rss);
        if (rss > rssLimit && !stoppedForMemory)
          stoppedForMemory = { at_s: Math.round((t - t0) / 100) / 10, rss_mb: Math.round(rss / 2 ** 20) };
        const free = freeBytes();
        if (free < DISK_RESERVE_BYTES && !stoppedForDisk)
          stoppedForDisk = { at_s: Math.round((t - t0) / 100) / 10, free_gb: Math.round(free / 1e8) / 10 };
        const cpu = cpuTimes();
        const steal = stealShare(cpuBefore, cpu);
        cpuBefore = cpu;
        const cause = {
          loopMaxMs: loopSecond.max / 1e6,
          gcMaxMs: gcSecondMaxMs,
          stageMaxMs: stageMaxBetween(prevRaw, raw),
        };
        loopSecond.reset();
        gcSecondMaxMs = 0;
        prevRaw = raw;
        samples.push({
          t: (t - t0) / 1000,
          rss,
          loaderMajorFaults: process.resourceUsage().majorPageFault,
          engineMajorFaults: tgt.majorFaults(),
          steal,
          ...s,
          ...cause,
        });
        if (t - last10.t >= 9_995) {
          fds.push({
            t: (t - t0) / 1000,
            fdatasyncs: (s.fdatasyncs - last10.s.fdatasyncs) / ((t - last10.t) / 1000),
            checkpoints: s.checkpoints - last10.s.checkpoints,
          });
          last10 = { t, s };
        }
      })
      .catch(() => undefined)
      .finally(() => {
        sampling = false;
      });
  }, 1000);

  const intervals: Interval[] = [];
  // Batches of 500: each insert call is a few milliseconds of engine work, so its latency says
  // whether the engine stalls (larger batches only add their own apply time to every figure).
  // The reader first, and ready before the load starts: booting its thread (tsx compiling the
  // TypeScript it loads) takes a core for about a second, which once showed as a one-second
  // insert latency in the server target's first two seconds.
  const MARGIN = 4 * batchSize;
  const reader = tgt.url ? await startHttpReader(tgt.url, readsPerSec) : startLocalReader(tgt, readsPerSec);
  // The loader's in-flight limit at the end of each 1-s interval (adaptive unless --fixed-concurrency).
  const inflightLimits: number[] = [];
  const loader = createLoader({
    target: tgt.loaderTarget,
    table: 'sustained',
    batchSize,
    adaptiveConcurrency: !fixedConcurrency,
    onInterval: (i) => {
      intervals.push(i);
      inflightLimits.push(loader.progress().inFlightLimit);
    },
  });
  await loader.ready();

  // The reader: point gets of random already-acknowledged keys at a fixed rate, each timed from
  // its call to its result (perf_hooks histogram, ns). Keys below written − concurrency × batch
  // size are acknowledged whatever order the batches in flight complete in. Against the server
  // it is a separate client on its own thread; embedded, it shares the loader's event loop, as
  // an application reading from its own embedded database would.
  const publish = setInterval(() => reader.acknowledged(loader.progress().written - MARGIN), 5);

  // Attribution for the latency tails: how late this process's event loop ran (it receives every
  // acknowledgement), and V8's garbage-collection pauses.
  const loopDelay = monitorEventLoopDelay({ resolution: 1 });
  loopDelay.enable();
  loopSecond.enable();
  const GC_KINDS: Record<number, string> = {
    [perf.NODE_PERFORMANCE_GC_MINOR]: 'minor',
    [perf.NODE_PERFORMANCE_GC_MAJOR]: 'major',
    [perf.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
    [perf.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
  };
  const gc: Record<string, { count: number; total_ms: number; max_ms: number }> = {};
  const gcObserver = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = GC_KINDS[(e as { detail?: { kind?: number } }).detail?.kind ?? 0] ?? 'other';
      const g = (gc[kind] ??= { count: 0, total_ms: 0, max_ms: 0 });
      g.count++;
      g.total_ms += e.duration;
      g.max_ms = Math.max(g.max_ms, e.duration);
      gcSecondMaxMs = Math.max(gcSecondMaxMs, e.duration);
    }
  });
  gcObserver.observe({ entryTypes: ['gc'] });

  const rand = mulberry32(42);
  const chunk = Buffer.allocUnsafe(256);
  const deadline = now() + seconds * 1000;
  let i = 0;
  let bytesPushed = 0;
  while (now() < deadline && !stoppedForMemory && !stoppedForDisk) {
    // Each line is written into a reused buffer and handed over as a slice of it, as `wharf import`
    // hands the loader slices of its read buffer (the loader copies them into its batch at once).
    for (let k = 0; k < 100; k++, i++) {
      const end = writeDocLine(chunk, 0, i, rand);
      bytesPushed += end + 1;
      if (!loader.push(chunk.subarray(0, end))) await loader.whenWritable();
    }
    // Yield as a stream reader would, so the loader's interval timer, acks and the reader run on time.
    await new Promise((res) => setImmediate(res));
  }
  clearInterval(publish);
  loopDelay.disable();
  loopSecond.disable();
  gcObserver.disconnect();
  const ms = (ns: number) => Math.round(ns / 1e4) / 100;
  const eventLoopDelay = {
    p50: ms(loopDelay.percentile(50)),
    p99: ms(loopDelay.percentile(99)),
    'p99.9': ms(loopDelay.percentile(99.9)),
    max: ms(loopDelay.max),
  };
  const reads = await reader.stop();
  const summary = await loader.end();
  clearInterval(sampler);
  while (sampling) await new Promise((res) => setTimeout(res, 10));
  const endRaw = await tgt.stats();
  const end = pick(endRaw);
  peakRss = Math.max(peakRss, tgt.rss());
  await tgt.close();
  const docs = summary.documents.written;
  return {
    target: tgt.name,
    seconds_target: seconds,
    memory_budget_bytes: budget,
    engine_memory_budget: end.memoryBudget,
    docs,
    bytes_loaded: Math.round(bytesPushed * (docs / Math.max(1, summary.documents.read))),
    missing: summary.documents.missing,
    wall_s: summary.wallSeconds,
    docs_per_s: summary.docsPerSec,
    latency_ms: summary.latencyMs,
    batch_latency_ms: summary.batchLatencyMs,
    batch_size: batchSize,
    final_sync_ms: summary.finalSyncMs,
    zero_intervals: summary.zeroIntervals,
    intervals: summary.intervals,
    inflight_limits: inflightLimits,
    event_loop_delay_ms: eventLoopDelay,
    // Pages a process had to wait for the disk to read back (its code, evicted from the page
    // cache by the load's writes, say), per second where there were any.
    major_page_faults: {
      loader: process.resourceUsage().majorPageFault - majorFaultsStart.loader,
      engine_process: tgt.url
        ? samples.reduce((m, x) => Math.max(m, x.engineMajorFaults), majorFaultsStart.engine) - majorFaultsStart.engine
        : null,
      seconds: samples.flatMap((x, k) => {
        const prev =
          k > 0
            ? samples[k - 1]!
            : { loaderMajorFaults: majorFaultsStart.loader, engineMajorFaults: majorFaultsStart.engine };
        const loader = x.loaderMajorFaults - prev.loaderMajorFaults;
        const engine = tgt.url ? x.engineMajorFaults - prev.engineMajorFaults : 0;
        return loader > 0 || engine > 0 ? [{ t: Math.round(x.t * 10) / 10, loader, engine }] : [];
      }),
    },
    // CPU time the hypervisor took from this VM (lib/steal.ts), per sample (about a second).
    cpu_steal: {
      median: median(samples.map((x) => x.steal)),
      max: Math.max(0, ...samples.map((x) => x.steal)),
      seconds_over_20pct: samples.filter((x) => x.steal > 0.2).length,
    },
    server_event_loop_delay_ms: tgt.url
      ? {
          p99_median: median(samples.map((x) => x.serverEventLoopDelayP99Ms)),
          max: Math.max(0, ...samples.map((x) => x.serverEventLoopDelayMaxMs)),
        }
      : null,
    // The server process's GC during the load (its /api/stats counters, end minus start).
    server_gc_pauses_ms: tgt.url
      ? {
          major: {
            count: end.serverGcMajor - first.serverGcMajor,
            total: Math.round(end.serverGcMajorMs - first.serverGcMajorMs),
          },
          minor: {
            count: end.serverGcMinor - first.serverGcMinor,
            total: Math.round(end.serverGcMinorMs - first.serverGcMinorMs),
          },
        }
      : null,
    write_stages: writeStagesDuring(firstRaw, endRaw),
    gc_pauses_ms: Object.fromEntries(
      Object.entries(gc).map(([k, g]) => [
        k,
        { count: g.count, total: Math.round(g.total_ms), max: Math.round(g.max_ms * 100) / 100 },
      ]),
    ),
    intervals10s: summary.intervals10s,
    fdatasyncs_per_s_10s: fds,
    fdatasyncs: end.fdatasyncs,
    groups: end.groups,
    segment_rotations: end.segmentRotations,
    checkpoints: end.checkpoints,
    segments_recycled: end.segmentsRecycled,
    engine_end: end,
    engine_samples: samples.map((x) => ({
      t: Math.round(x.t * 10) / 10,
      rss: x.rss,
      steal: Math.round(x.steal * 1000) / 1000,
      ...Object.fromEntries(REPORTED_SAMPLE_FIELDS.map((k) => [k, x[k]])),
    })),
    // The seconds of the slowest documents, each beside what the sampler saw in it (the sample
    // taken at its end): is a long stall this event loop, GC, CPU steal or a stage of the write?
    slowest_seconds: summary.intervals
      .filter((iv) => iv.max !== undefined)
      .sort((x, y) => y.max! - x.max!)
      .slice(0, 8)
      .map((iv) => {
        let k = 0;
        samples.forEach((c, j) => {
          if (Math.abs(c.t - iv.t) < Math.abs(samples[k]!.t - iv.t)) k = j;
        });
        const x = samples[k];
        return {
          t: Math.round(iv.t),
          max_ms: iv.max,
          p99_ms: iv.p99,
          docs: iv.docs,
          ...(x && {
            steal: Math.round(x.steal * 1000) / 1000,
            loop_max_ms: Math.round(x.loopMaxMs * 10) / 10,
            gc_max_ms: Math.round(x.gcMaxMs * 10) / 10,
            stage_max_ms: x.stageMaxMs,
            paced_groups: x.pacedGroups - (samples[k - 1]?.pacedGroups ?? first.pacedGroups),
            frozen_memtable_bytes: x.frozenMemtableBytes,
            merge_backlog_runs: x.mergeBacklogRuns,
          }),
        };
      }),
    max_write_rate_limit_bps: Math.max(0, ...samples.map((x) => x.writeRateLimitBps), end.writeRateLimitBps),
    max_pacing_debt_bytes: Math.max(0, ...samples.map((x) => x.pacingDebtBytes), end.pacingDebtBytes),
    peak_engine_memory_bytes: Math.max(
      0,
      ...samples.map((x) => x.memtableBytes + x.frozenMemtableBytes + x.cacheBytes),
    ),
    reads: { rate_per_s: readsPerSec, ...reads },
    rss_start_mb: Math.round(rssStart / 2 ** 20),
    peak_rss_mb: Math.round(peakRss / 2 ** 20),
    rss_limit_mb: Math.round(rssLimit / 2 ** 20),
    stopped_for_memory: stoppedForMemory as { at_s: number; rss_mb: number } | null,
    stopped_for_disk: stoppedForDisk as { at_s: number; free_gb: number } | null,
  };
}

async function main() {
  const { positional, opts } = parseArgs(process.argv.slice(2));
  const dir = strOpt(opts, 'dir', '');
  const port = numOpt(opts, 'port', 0);
  const user = strOpt(opts, 'user', 'postgres');
  // mode → what it runs (each reads its own options)
  const modes: Record<string, () => unknown> = {
    'sqlite-seq': () => sqliteSeq(dir, numOpt(opts, 'n', 1000)),
    'sqlite-blocks': () => sqliteBlocks(dir, numOpt(opts, 'blocks', 100)),
    'wharf-blocks': () => wharfBlocks(dir, numOpt(opts, 'blocks', 100)),
    'driver-seq': () => driverSeq(dir, numOpt(opts, 'n', 1000)),
    'rethinkdb-seq': () => rethinkdbSeq(strOpt(opts, 'bin', ''), dir, numOpt(opts, 'n', 1000)),
    'driver-blocks': () => driverBlocks(dir, numOpt(opts, 'blocks', 100)),
    'pg-seq': () => pgSeq(port, user, numOpt(opts, 'n', 1000)),
    'pg-copy': () => pgCopy(port, user, strOpt(opts, 'file', ''), numOpt(opts, 'docs', 0)),
    'copy-file': () => writeCopyFile(strOpt(opts, 'file', ''), numOpt(opts, 'docs', 0)),
    'kv-js': () => kvJs(dir, numOpt(opts, 'n', 1_000_000), numOpt(opts, 'batch', 10_000)),
    sustained: () => {
      const maxRss = opts.get('max-rss-mb');
      return sustained(
        dir,
        numOpt(opts, 'seconds', 60),
        strOpt(opts, 'target', 'embedded'),
        numOpt(opts, 'memory-budget-mb', 64),
        numOpt(opts, 'reads-per-s', 200),
        maxRss === undefined ? undefined : numOpt(opts, 'max-rss-mb', 0),
        numOpt(opts, 'batch', 500),
        opts.has('fixed-concurrency'),
      );
    },
  };
  const mode = positional[0] ?? '';
  if (!Object.hasOwn(modes, mode))
    throw new Error(`unknown mode ${JSON.stringify(positional[0])}; expected ${Object.keys(modes).join(' | ')}`);
  const out = await modes[mode]!();
  if (dir && !opts.has('keep')) rmSync(dir, { recursive: true, force: true });
  process.stdout.write(`${JSON.stringify(out)}\n`);
  process.exit(0);
}

main().catch((e) => {
  process.stderr.write(`${String(e?.stack ?? e)}\n`);
  process.exit(1);
});
