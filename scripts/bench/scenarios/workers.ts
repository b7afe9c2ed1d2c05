// Child processes of `wharf bench` that are not in lib/engine-worker.ts / lib/sqlite-worker.ts:
// one measurement on a fresh store, printed as one JSON line on stdout.
//
//   node --import tsx scripts/bench/scenarios/workers.ts <mode> --dir D [...]
//
// modes: sqlite-seq, sqlite-blocks, wharf-blocks, driver-seq, driver-blocks, pg-seq, pg-copy,
//        kv-js, sustained

import Sqlite from 'better-sqlite3';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Database } from '@wharf/engine';
import { createLoader, EmbeddedTarget, type Interval } from '@wharf/client';
import rethinkdb from 'rethinkdb';
import { numOpt, parseArgs, strOpt } from '../lib/args.js';
import { docLine, docLines, prng, smallDoc } from '../lib/docs.js';
import { startServerProc, serverEngineStats } from '../lib/server-proc.js';
import { summarize } from '../lib/stats.js';
import { blockLine } from './blocks.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const r: any = rethinkdb;
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const now = () => performance.now();

function fresh(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
}

// ---- SQLite ---------------------------------------------------------------------------------

function openSqlite(dir: string): Sqlite.Database {
  fresh(dir);
  const db = new Sqlite(join(dir, 'bench.sqlite'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec('CREATE TABLE docs (id TEXT PRIMARY KEY, doc TEXT NOT NULL)');
  return db;
}

/** Seed 000's loop on SQLite: one autocommit INSERT per document (each COMMIT fsyncs the WAL). */
function sqliteSeq(dir: string, n: number) {
  const db = openSqlite(dir);
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

function sqliteBlocks(dir: string, blocks: number) {
  const db = openSqlite(dir);
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
  return { blocks, bytes, total_ms: totalMs, blocks_per_s: blocks / (totalMs / 1000), mb_per_s: bytes / 1e6 / (totalMs / 1000) };
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
    const buf = Buffer.from(blockLine(i) + '\n');
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
    blocks, bytes, insert_ms: insertMs, sync_ms: totalMs - insertMs, total_ms: totalMs,
    blocks_per_s: blocks / (totalMs / 1000), mb_per_s: bytes / 1e6 / (totalMs / 1000),
    fdatasyncs: s1.fdatasyncs - s0.fdatasyncs, checkpoints: s1.checkpoints - s0.checkpoints,
  };
}

// ---- Wharf server through the official rethinkdb driver ------------------------------------

/** Seed 000's loop: 1000 sequential hard inserts through the driver port of a server process. */
async function driverSeq(dir: string, n: number) {
  fresh(dir);
  const server = await startServerProc(ROOT, dir);
  try {
    const conn = await r.connect({ host: '127.0.0.1', port: server.driverPort });
    await r.tableCreate('bench').run(conn);
    const before = await serverEngineStats(server.url);
    const lat: number[] = new Array(n);
    const t0 = now();
    for (let i = 0; i < n; i++) {
      const a = now();
      const res = await r.table('bench').insert(smallDoc(0, i), { durability: 'hard' }).run(conn);
      lat[i] = (now() - a) * 1000;
      if (res.inserted !== 1) throw new Error(`insert ${i}: ${JSON.stringify(res)}`);
    }
    const totalMs = now() - t0;
    const after = await serverEngineStats(server.url);
    await conn.close();
    return { total_ms: totalMs, docs_per_s: n / (totalMs / 1000), latency_us: summarize(lat), fdatasyncs: (after.fdatasyncs ?? 0) - (before.fdatasyncs ?? 0) };
  } finally {
    await server.stop();
  }
}

/** Seed 002's loop: r.table(t).insert(r.json(BLOCK), {durability: 'soft'}) one at a time, then sync. */
async function driverBlocks(dir: string, blocks: number) {
  fresh(dir);
  const server = await startServerProc(ROOT, dir);
  try {
    const conn = await r.connect({ host: '127.0.0.1', port: server.driverPort });
    await r.tableCreate('blocks').run(conn);
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
    const totalMs = now() - t0;
    await conn.close();
    return { blocks, bytes, insert_ms: insertMs, sync_ms: totalMs - insertMs, total_ms: totalMs, blocks_per_s: blocks / (totalMs / 1000), mb_per_s: bytes / 1e6 / (totalMs / 1000) };
  } finally {
    await server.stop();
  }
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
    await c.query({ name: 'ins', text: 'INSERT INTO docs (id, doc) VALUES ($1, $2)', values: [d.id, JSON.stringify(d)] });
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
    puts: n, batch, transactions: Math.ceil(n / batch), total_ms: totalMs, puts_per_s: n / (totalMs / 1000),
    build_ms: buildMs, fdatasyncs: s1.fdatasyncs - s0.fdatasyncs,
  };
}

// ---- sustained import (seed 003) ------------------------------------------------------------

/**
 * The loader (batched soft writes) on the embedded engine, fed generated ~150 B documents as fast
 * as it takes them for `seconds`, then end() (final sync). Per 10 s: docs, latency, fdatasyncs.
 */
async function sustained(dir: string, seconds: number) {
  fresh(dir);
  const db = await Database.open(dir);
  const target = new EmbeddedTarget(db as never);
  const fds: { t: number; fdatasyncs: number; checkpoints: number }[] = [];
  const t0 = now();
  let last = db.stats();
  let lastT = t0;
  const sampler = setInterval(() => {
    const s = db.stats();
    const t = now();
    fds.push({ t: (t - t0) / 1000, fdatasyncs: (s.fdatasyncs - last.fdatasyncs) / ((t - lastT) / 1000), checkpoints: s.checkpoints - last.checkpoints });
    last = s;
    lastT = t;
  }, 10_000);
  const intervals: Interval[] = [];
  const loader = createLoader({ target, table: 'sustained', onInterval: (i) => intervals.push(i) });
  await loader.ready();
  const rand = prng(42);
  const deadline = now() + seconds * 1000;
  // The engine keeps every table in memory: stop feeding (and say so) before the machine runs out.
  const rssLimit = numOpt(parseArgs(process.argv.slice(2)).opts, 'max-rss-mb', Math.round((os.totalmem() * 0.5) / 2 ** 20)) * 2 ** 20;
  let stoppedForMemory: { at_s: number; rss_mb: number } | null = null;
  let peakRss = 0;
  let i = 0;
  while (now() < deadline) {
    if ((i & 0xffff) < 1000) {
      const rss = process.memoryUsage.rss();
      peakRss = Math.max(peakRss, rss);
      if (rss > rssLimit) {
        stoppedForMemory = { at_s: Math.round((now() - t0) / 100) / 10, rss_mb: Math.round(rss / 2 ** 20) };
        break;
      }
    }
    for (let k = 0; k < 1000; k++, i++) {
      if (!loader.push(docLine(i, rand))) await loader.whenWritable();
    }
    // Yield as a stream reader would, so the loader's interval timer and acks run on time.
    await new Promise((res) => setImmediate(res));
  }
  const summary = await loader.end();
  clearInterval(sampler);
  const s1 = db.stats();
  await db.close();
  return {
    seconds_target: seconds,
    docs: summary.documents.written,
    wall_s: summary.wallSeconds,
    docs_per_s: summary.docsPerSec,
    latency_ms: summary.latencyMs,
    final_sync_ms: summary.finalSyncMs,
    zero_intervals: summary.zeroIntervals,
    intervals: summary.intervals,
    intervals10s: summary.intervals10s,
    fdatasyncs_per_s_10s: fds,
    fdatasyncs: s1.fdatasyncs,
    checkpoints: s1.checkpoints,
    segments_recycled: s1.segmentsRecycled,
    peak_rss_mb: Math.round(Math.max(peakRss, process.memoryUsage.rss()) / 2 ** 20),
    rss_limit_mb: Math.round(rssLimit / 2 ** 20),
    stopped_for_memory: stoppedForMemory,
  };
}

async function main() {
  const { positional, opts } = parseArgs(process.argv.slice(2));
  const dir = strOpt(opts, 'dir', '');
  const port = numOpt(opts, 'port', 0);
  const user = strOpt(opts, 'user', 'postgres');
  let out: unknown;
  switch (positional[0]) {
    case 'sqlite-seq': out = sqliteSeq(dir, numOpt(opts, 'n', 1000)); break;
    case 'sqlite-blocks': out = sqliteBlocks(dir, numOpt(opts, 'blocks', 100)); break;
    case 'wharf-blocks': out = await wharfBlocks(dir, numOpt(opts, 'blocks', 100)); break;
    case 'driver-seq': out = await driverSeq(dir, numOpt(opts, 'n', 1000)); break;
    case 'driver-blocks': out = await driverBlocks(dir, numOpt(opts, 'blocks', 100)); break;
    case 'pg-seq': out = await pgSeq(port, user, numOpt(opts, 'n', 1000)); break;
    case 'pg-copy': out = await pgCopy(port, user, strOpt(opts, 'file', ''), numOpt(opts, 'docs', 0)); break;
    case 'copy-file': out = writeCopyFile(strOpt(opts, 'file', ''), numOpt(opts, 'docs', 0)); break;
    case 'kv-js': out = await kvJs(dir, numOpt(opts, 'n', 1_000_000), numOpt(opts, 'batch', 10_000)); break;
    case 'sustained': out = await sustained(dir, numOpt(opts, 'seconds', 60)); break;
    default: throw new Error(`unknown mode ${positional[0]}`);
  }
  if (dir && !opts.has('keep')) rmSync(dir, { recursive: true, force: true });
  process.stdout.write(JSON.stringify(out) + '\n');
  process.exit(0);
}

main().catch((e) => {
  process.stderr.write(String(e?.stack ?? e) + '\n');
  process.exit(1);
});
