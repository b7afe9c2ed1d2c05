/**
 * Loader benchmark on the embedded target (a script, not a test). One run, modes interleaved
 * round by round so the ratios compare like with like on a shared disk:
 *
 *   engine    the engine's own bulk path: table.insertNdjson(all documents), soft, then db.sync()
 *   default   @wharf/client createLoader(): batched soft writes + one final sync
 *   hard      createLoader({ durability: 'hard' }): batched, each batch durable
 *   naive     createLoader({ naive: true }): one document per insert, hard, one at a time
 *             (fewer documents, NAIVE_DOCS, since it is slow; its rate is per second all the same)
 *
 * The loader modes are fed the NDJSON lines as bytes, as `wharf import` does. Each round runs
 * the modes in a rotated order, after a `sync` that flushes the previous mode's writeback, so no
 * mode always follows the same neighbour.
 *
 *   npx tsx packages/bench/src/goals/loader.ts [--docs 100000] [--naive-docs 2000] [--size 1000] [--rounds 3]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLoader, type LoadSummary } from '@wharf/client';
import { Database } from '@wharf/engine';
import { generate } from '../ycsb.js';

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
}

const DOCS = arg('docs', 100_000);
const NAIVE_DOCS = arg('naive-docs', 2_000);
const SIZE = arg('size', 1000);
const ROUNDS = arg('rounds', 3);
const ROOT = process.env.WHARF_BENCH_DIR ?? tmpdir();

function data(count: number, seed: number): Buffer {
  return Buffer.from([...generate({ count, size: SIZE, format: 'ndjson', seed, badEvery: 0 })].join(''));
}

function lines(buf: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let pos = 0; pos < buf.length; ) {
    const nl = buf.indexOf(0x0a, pos);
    const end = nl === -1 ? buf.length : nl;
    if (end > pos) out.push(buf.subarray(pos, end));
    pos = end + 1;
  }
  return out;
}

interface Result {
  docs: number;
  seconds: number;
  rate: number;
  finalSyncMs?: number | null;
  p99?: number;
  fdatasyncs?: unknown;
}

async function withDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(ROOT, 'wharf-bench-loader-'));
  try {
    return await fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function engineBulk(buf: Buffer, docs: number): Promise<Result> {
  return withDir(async (dir) => {
    const db = await Database.open(dir);
    await db.createTable('bench');
    const t0 = performance.now();
    const res = await db.table('bench').insertNdjson(buf, { durability: 'soft' });
    await db.sync();
    const seconds = (performance.now() - t0) / 1000;
    const stats = db.stats();
    await db.close();
    if (res.inserted !== docs) throw new Error(`engine inserted ${res.inserted} of ${docs}`);
    return { docs, seconds, rate: docs / seconds, fdatasyncs: stats.fdatasyncs };
  });
}

async function loader(recs: Buffer[], opts: { durability?: 'soft' | 'hard'; naive?: boolean }): Promise<Result> {
  return withDir(async (dir) => {
    const l = createLoader({ target: `embedded:${dir}`, table: 'bench', ...opts });
    await l.ready(); // open + create table are not part of the load
    for (const r of recs) if (!l.push(r)) await l.whenWritable();
    const s: LoadSummary = await l.end();
    if (s.documents.written !== recs.length) throw new Error(`loader wrote ${s.documents.written} of ${recs.length}`);
    return {
      docs: recs.length,
      seconds: s.wallSeconds,
      rate: s.docsPerSec,
      finalSyncMs: s.finalSyncMs,
      p99: s.latencyMs.p99,
      fdatasyncs: s.engine?.fdatasyncs,
    };
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main() {
  console.log(`loader benchmark: ${DOCS} docs of ~${SIZE} B (naive: ${NAIVE_DOCS}), ${ROUNDS} rounds, dir ${ROOT}`);
  const buf = data(DOCS, 1);
  const recs = lines(buf);
  const naiveRecs = lines(data(NAIVE_DOCS, 2));
  console.log(`input ${(buf.length / 1e6).toFixed(1)} MB`);
  const modes: Record<string, () => Promise<Result>> = {
    engine: () => engineBulk(buf, DOCS),
    default: () => loader(recs, {}),
    hard: () => loader(recs, { durability: 'hard' }),
    naive: () => loader(naiveRecs, { naive: true }),
  };
  const rates: Record<string, number[]> = Object.fromEntries(Object.keys(modes).map((k) => [k, []]));
  const entries = Object.entries(modes);
  for (let round = 1; round <= ROUNDS; round++) {
    const k = (round - 1) % entries.length;
    for (const [name, run] of [...entries.slice(k), ...entries.slice(0, k)]) {
      execFileSync('sync');
      const r = await run();
      rates[name]!.push(r.rate);
      console.log(
        `round ${round} ${name.padEnd(8)} ${r.docs} docs in ${r.seconds.toFixed(3)} s = ${Math.round(r.rate).toLocaleString('en-US')} docs/s` +
          (r.finalSyncMs != null ? `, final sync ${r.finalSyncMs.toFixed(1)} ms` : '') +
          (r.p99 !== undefined ? `, p99 ${r.p99} ms` : '') +
          (r.fdatasyncs !== undefined ? `, fdatasyncs ${r.fdatasyncs}` : ''),
      );
    }
  }
  const m = Object.fromEntries(Object.entries(rates).map(([k, v]) => [k, median(v)])) as Record<string, number>;
  console.log(
    '\nmedian docs/s:',
    Object.entries(m)
      .map(([k, v]) => `${k} ${Math.round(v).toLocaleString('en-US')}`)
      .join(', '),
  );
  // Ratios within each round (the modes of a round ran back to back), then their median.
  const ratio = (a: string, b: string) => rates[a]!.map((x, i) => x / rates[b]![i]!);
  const show = (a: string, b: string, digits: number, note: string) => {
    const per = ratio(a, b);
    console.log(
      `${`${a} / ${b}`.padEnd(17)}= ${median(per).toFixed(digits)}  (rounds: ${per.map((x) => x.toFixed(digits)).join(', ')})  ${note}`,
    );
  };
  show('default', 'naive', 1, `goal ≥ 100×; naive on ${NAIVE_DOCS} docs, default on ${DOCS}`);
  show('default', 'hard', 2, 'batched hard durability');
  show('default', 'engine', 2, "goal ≥ 0.8: the loader adds little to the engine's bulk path");
}

await main();
