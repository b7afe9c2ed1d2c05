// Child process for goals/engine.ts and the scenarios: one measurement on a fresh Wharf database, printed
// as one JSON line on stdout. Run by the orchestrator (optionally under strace), not by hand:
//
//   node [--conditions=wharf-source --import tsx] lib/engine-worker.{ts,js} seq        --dir D --n 1000 [--soft-probe] [--settle-ms 0] [--spin-wait-us N] [--warmup N] [--raw BIN --raw-dir D]
//   node [--conditions=wharf-source --import tsx] lib/engine-worker.{ts,js} concurrent --dir D --writers 64 --per-writer 100 [--single 1000] [--warmup N]
//   node [--conditions=wharf-source --import tsx] lib/engine-worker.{ts,js} bulk       --dir D --docs 1000000 --batch 10000 --inflight 4 [--file F]

import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { Database, type EngineStats } from '@wharf/engine';
import { numOpt, parseArgs, strOpt } from './args.js';
import { ndjsonBatches, smallDoc } from './docs.js';
import type { FsyncLimitOutput, OpStats } from './fsync-limit.js';
import { bucketPercentileUs, summarize } from './stats.js';

function statsOf(db: Database): EngineStats {
  return db.stats();
}

/**
 * Counter deltas between two stats snapshots (numbers only). The commit-latency percentiles are
 * recomputed from the histogram's delta: a difference of two percentiles means nothing.
 */
function delta(a: EngineStats, b: EngineStats): Record<string, number> {
  const out: Record<string, number> = {};
  const before_ = a as unknown as Record<string, unknown>;
  for (const [k, v] of Object.entries(b)) {
    const before = before_[k];
    if (typeof v === 'number' && typeof before === 'number') out[k] = v - before;
  }
  const latency = b.commitLatencyHistogramUs.map((n, i) => n - (a.commitLatencyHistogramUs[i] ?? 0));
  out.commitLatencyP50Us = bucketPercentileUs(latency, 0.5);
  out.commitLatencyP99Us = bucketPercentileUs(latency, 0.99);
  return out;
}

/**
 * Bytes the engine wrote per document byte it loaded, by kind (`bytesWritten*` of its stats),
 * the close's final checkpoint included.
 */
export interface WrittenPerLoaded {
  loaded: number;
  journal: number;
  flushes: number;
  merges: number;
  other: number;
  perByte: number;
}

function writtenOf(s: EngineStats): WrittenPerLoaded {
  return {
    loaded: s.bytesLoaded,
    journal: s.bytesWrittenJournal,
    flushes: s.bytesWrittenFlushes,
    merges: s.bytesWrittenMerges,
    other: s.bytesWrittenOther,
    perByte: s.bytesWrittenPerByteLoaded,
  };
}

let settleMs = 0;
let spinWaitUs: number | undefined;

/**
 * A new database in an empty `dir` with one table. `--settle-ms` then waits before the timed part,
 * e.g. to let background work started at open (a segment being zero-filled) finish first.
 */
async function openFresh(dir: string): Promise<Database> {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const db = await Database.open(dir, spinWaitUs === undefined ? undefined : { spinWaitUs });
  await db.createTable('bench');
  if (settleMs > 0) await new Promise((r) => setTimeout(r, settleMs));
  return db;
}

const now = () => performance.now();

/**
 * `--warmup N`: N untimed hard inserts of the same kind first (per writer in `concurrent`), so the
 * timed part measures the steady state of a running process rather than the JIT compiling it.
 */
let warmup = 0;

/**
 * `--raw BIN --raw-dir DIR`: the raw fdatasync loop (`fsync_limit`, overwrite mode, n ops) run
 * from this process, in the foreground, right before and right after the timed inserts: the
 * reference of (a), on the disk as it is within a second of them, not across this process's
 * start-up and warm-up.
 */
let raw: { bin: string; dir: string } | undefined;

function rawLoop(n: number): OpStats {
  const r = spawnSync(raw!.bin, [raw!.dir, String(n), '--mode', 'overwrite'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (r.status !== 0) throw new Error(`${raw!.bin} exited with ${r.status ?? r.signal}`);
  return (JSON.parse(r.stdout) as FsyncLimitOutput).results.overwrite!;
}

async function seq(dir: string, n: number, softProbe: boolean) {
  const db = await openFresh(dir);
  const table = db.table('bench');
  // One function, and one path through it, for the untimed and the timed inserts (see
  // `concurrent`).
  const write = async (writer: number, count: number, durability: 'hard' | 'soft', latencies: Float64Array) => {
    for (let i = 0; i < count; i++) {
      const a = now();
      const r = await table.insert(smallDoc(writer, i), { durability });
      latencies[i] = (now() - a) * 1000;
      if (r.inserted !== 1) throw new Error(`insert ${i}: ${JSON.stringify(r)}`);
    }
  };
  await write(2, warmup, 'hard', new Float64Array(warmup));
  const lat = new Float64Array(n);
  const rawBefore = raw && rawLoop(n);
  const s0 = statsOf(db);
  const t0 = now();
  await write(0, n, 'hard', lat);
  const totalMs = now() - t0;
  const s1 = statsOf(db);
  const rawAfter = raw && rawLoop(n);

  // Same calls without the fdatasync: the engine's own per-call cost (JS → Rust writer thread →
  // promise resolved), which is what the hard insert adds on top of the disk.
  let soft: Record<string, unknown> | undefined;
  if (softProbe) {
    const slat = new Float64Array(n);
    const t2 = now();
    await write(1, n, 'soft', slat);
    soft = { total_ms: now() - t2, latency_us: summarize(Array.from(slat)) };
  }
  const c0 = now();
  await db.close();
  const closeMs = now() - c0;
  return {
    scenario: 'seq',
    n,
    warmup,
    total_ms: totalMs,
    docs_per_s: n / (totalMs / 1000),
    latency_us: summarize(Array.from(lat)),
    engine: delta(s0, s1),
    soft,
    close_ms: closeMs,
    stats_at_end: s1,
    raw_before: rawBefore,
    raw_after: rawAfter,
  };
}

/**
 * `writers` hard writers × `perWriter` inserts, timed, with one lone hard writer's `single`
 * inserts timed right before and right after them in the same process: the reference of (b),
 * measured under the same disk within a second of it.
 */
/** What `concurrent` prints: the group-commit scenario and the engine goals read it. */
export type ConcurrentOutput = Awaited<ReturnType<typeof concurrent>>;

async function concurrent(dir: string, writers: number, perWriter: number, single: number) {
  const db = await openFresh(dir);
  const table = db.table('bench');
  // One function, and one path through it, for every phase, untimed and timed, so the timed
  // parts run code V8 has compiled already: a loop of its own started in the interpreter and was
  // optimized while timed (64 writers × 500 after 47 untimed inserts each: 161–202 k docs/s,
  // 189–253 k through one function), and a branch the untimed part never took deoptimized it
  // when the timing began (V8's "insufficient type feedback"), and it was compiled again.
  // Writer w's latencies go to latencies[(w % writers) * n ..]: a typed array, whose map no store
  // changes. Writers of each phase have their own numbers, so every key is new.
  const write = async (w: number, n: number, latencies: Float64Array) => {
    for (let i = 0; i < n; i++) {
      const a = now();
      const r = await table.insert(smallDoc(w, i), { durability: 'hard' });
      latencies[(w % writers) * n + i] = (now() - a) * 1000;
      if (r.inserted !== 1) throw new Error(`writer ${w} insert ${i}: ${JSON.stringify(r)}`);
    }
  };
  const all = (first: number, n: number, latencies: Float64Array) =>
    Promise.all(Array.from({ length: writers }, (_, w) => write(first + w, n, latencies)));
  const lone = async (w: number) => {
    const t0 = now();
    await write(w * writers, single, new Float64Array(single));
    return now() - t0;
  };
  await all(writers, warmup, new Float64Array(writers * warmup));
  await lone(2);
  const singleBeforeMs = await lone(3);
  const lat = new Float64Array(writers * perWriter);
  const s0 = statsOf(db);
  const t0 = now();
  await all(0, perWriter, lat);
  const totalMs = now() - t0;
  const s1 = statsOf(db);
  const singleAfterMs = await lone(4);
  await db.close();
  const d = delta(s0, s1);
  const docs = writers * perWriter;
  return {
    scenario: 'concurrent',
    writers,
    per_writer: perWriter,
    warmup_per_writer: warmup,
    docs,
    total_ms: totalMs,
    docs_per_s: docs / (totalMs / 1000),
    fdatasyncs_per_doc: (d.fdatasyncs ?? NaN) / docs,
    docs_per_group: docs / (d.groups ?? NaN),
    latency_us: summarize(Array.from(lat)),
    engine: d,
    group_ops_histogram: s1.groupOpsHistogram,
    max_group_ops: s1.maxGroupOps,
    single: {
      n: single,
      before_ms: singleBeforeMs,
      after_ms: singleAfterMs,
      docs_per_s: single / ((singleBeforeMs + singleAfterMs) / 2 / 1000),
    },
  };
}

/** An NDJSON file's lines in batches of `batch` (subarrays of the file's bytes, no copy). */
function fileBatches(file: string, batch: number): { buffers: Buffer[]; bytes: number; docs: number } {
  const all = readFileSync(file);
  const buffers: Buffer[] = [];
  let start = 0;
  let docs = 0;
  for (let nl = all.indexOf(0x0a); nl !== -1; nl = all.indexOf(0x0a, nl + 1)) {
    if (++docs % batch === 0) {
      buffers.push(all.subarray(start, nl + 1));
      start = nl + 1;
    }
  }
  if (start < all.length) buffers.push(all.subarray(start));
  return { buffers, bytes: all.length, docs };
}

/**
 * The engine's bulk path: NDJSON batches of `batch` lines, `inflight` at a time, soft, then one
 * db.sync(). The documents are generated (lib/docs.ts), or read from `file` (the same bytes
 * another system loads) before the clock starts.
 */
async function bulk(dir: string, docs: number, batch: number, inflight: number, file?: string) {
  const g0 = now();
  const input = file ? fileBatches(file, batch) : { ...ndjsonBatches(docs, batch), docs };
  const { buffers, bytes } = input;
  docs = input.docs;
  const genMs = now() - g0;
  const db = await openFresh(dir);
  const table = db.table('bench');
  const s0 = statsOf(db);
  let inserted = 0;
  let errors = 0;
  const t0 = now();
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(inflight, buffers.length) }, async () => {
      while (next < buffers.length) {
        const buf = buffers[next++]!;
        const r = await table.insertNdjson(buf, { durability: 'soft' });
        inserted += r.inserted;
        errors += r.errors;
      }
    }),
  );
  const insertMs = now() - t0;
  await db.sync();
  const totalMs = now() - t0;
  const s1 = statsOf(db);
  if (inserted !== docs || errors) throw new Error(`bulk: inserted ${inserted} of ${docs}, ${errors} errors`);
  const c0 = now();
  await db.close();
  const closeMs = now() - c0;
  // After close: the final checkpoint wrote the last memtable as a run.
  const s2 = statsOf(db);
  return {
    scenario: 'bulk',
    written: writtenOf(s2),
    docs,
    batch,
    inflight,
    input_bytes: bytes,
    avg_doc_bytes: bytes / docs - 1,
    generate_ms: genMs,
    insert_ms: insertMs,
    sync_ms: totalMs - insertMs,
    total_ms: totalMs,
    docs_per_s: docs / (totalMs / 1000),
    mb_per_s: bytes / 1e6 / (totalMs / 1000),
    engine: delta(s0, s1),
    close_ms: closeMs,
  };
}

async function main() {
  const { positional, opts } = parseArgs(process.argv.slice(2));
  const dir = strOpt(opts, 'dir', '');
  if (!dir) throw new Error('--dir is required');
  settleMs = numOpt(opts, 'settle-ms', 0);
  if (opts.has('spin-wait-us')) spinWaitUs = numOpt(opts, 'spin-wait-us', 0);
  warmup = numOpt(opts, 'warmup', 0);
  if (opts.has('raw')) {
    raw = { bin: strOpt(opts, 'raw', ''), dir: strOpt(opts, 'raw-dir', '') };
    if (!raw.dir) throw new Error('--raw needs --raw-dir');
  }
  // mode → what it runs (each reads its own options)
  const modes: Record<string, () => unknown> = {
    seq: () => seq(dir, numOpt(opts, 'n', 1000), opts.has('soft-probe')),
    concurrent: () =>
      concurrent(dir, numOpt(opts, 'writers', 64), numOpt(opts, 'per-writer', 100), numOpt(opts, 'single', 1000)),
    bulk: () =>
      bulk(
        dir,
        numOpt(opts, 'docs', 1_000_000),
        numOpt(opts, 'batch', 10_000),
        numOpt(opts, 'inflight', 4),
        strOpt(opts, 'file', '') || undefined,
      ),
  };
  const mode = positional[0] ?? '';
  if (!Object.hasOwn(modes, mode))
    throw new Error(`unknown mode ${JSON.stringify(positional[0])}; expected ${Object.keys(modes).join(' | ')}`);
  const out = await modes[mode]!();
  if (!opts.has('keep')) rmSync(dir, { recursive: true, force: true });
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

main().catch((e) => {
  process.stderr.write(`${String(e?.stack ?? e)}\n`);
  process.exit(1);
});
