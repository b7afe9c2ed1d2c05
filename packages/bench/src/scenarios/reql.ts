// `reql`: ReQL queries on 1M documents (quick 100k), Wharf against RethinkDB 2.4, through the same
// official driver (`rethinkdb` on npm). A fresh Wharf server process and a fresh RethinkDB
// (lib/rethinkdb-proc.ts: RETHINKDB_BIN or PATH; absent, its rows are skipped with one line) are
// loaded the same way — the same documents `{id, group: i % 1000, n: random in [0, 1), name,
// tags}` in 5,000-document soft inserts, 4 in flight — then get indexes on `group` and `n`,
// created and waited on. Then, in interleaved rounds (the two systems alternate which goes first),
// each system answers the same queries with the same parameters, one at a time on one connection:
//
//   get                   r.table(t).get(id)
//   getAll index          getAll(g, {index: 'group'})                     ~1,000 documents
//   between index limit   between(x, maxval, {index: 'n'}).limit(100)
//   orderBy index limit   orderBy({index: 'n'}).limit(100)
//   count                 count()
//   between count         between(x, x + 0.01, {index: 'n'}).count()      ~10,000 documents
//   filter object count   filter({group: 7}).count()                      a full scan
//   filter row limit      filter(r.row('n').gt(x)).limit(100)
//
// Each query's latency (request → the whole answer read) goes into an HdrHistogram (perf_hooks);
// the rows give the median and p99 per system and Wharf ÷ RethinkDB: the median of the rounds'
// ratios of medians. Answers are checked equal between the systems (counts, ids), so both do the
// same work. No goal: this is a measurement.

import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createHistogram, type RecordableHistogram } from 'node:perf_hooks';
import { findRethinkdb, RETHINKDB_MISSING, startRethinkdb } from '../lib/rethinkdb-proc.js';
import { startServerProc } from '../lib/server-proc.js';
import { median, round } from '../lib/stats.js';
import { fmtMs } from '../lib/table.js';
import { mulberry32 } from '../random.js';
import type { BenchContext, Row, ScenarioResult } from './common.js';

// biome-ignore lint/suspicious/noExplicitAny: the rethinkdb driver is untyped
type Any = any;

const TABLE = 'docs';
const BATCH = 5000;
const IN_FLIGHT = 4;

/** One query of the scenario: its name, how many runs per round, and the query for a parameter. */
interface Query {
  name: string;
  heavy: boolean;
  make(r: Any, p: number): Any;
  /** What both systems must agree on (ids sorted where the order is not defined). */
  check(answer: Any): unknown;
}

const ids = (rows: Any[]): number[] => rows.map((d: Any) => d.id as number);
const sortedIds = (rows: Any[]): number[] => ids(rows).sort((a, b) => a - b);

export const QUERIES: Query[] = [
  { name: 'get', heavy: false, make: (r, p) => r.table(TABLE).get(p), check: (d) => d?.id },
  {
    name: 'getAll index',
    heavy: false,
    make: (r, p) => r.table(TABLE).getAll(p % 1000, { index: 'group' }),
    check: sortedIds,
  },
  {
    name: 'between index limit(100)',
    heavy: false,
    make: (r, p) => r.table(TABLE).between(p, r.maxval, { index: 'n' }).limit(100),
    // RethinkDB's between is unordered without an orderBy (any 100 in range): how many, all in range.
    check: (rows) => [rows.length, rows.every((d: Any) => d.n >= 0)],
  },
  {
    name: 'orderBy index limit(100)',
    heavy: false,
    make: (r) => r.table(TABLE).orderBy({ index: 'n' }).limit(100),
    check: ids,
  },
  { name: 'count', heavy: true, make: (r) => r.table(TABLE).count(), check: (n) => n },
  {
    name: 'between index count',
    heavy: true,
    make: (r, p) =>
      r
        .table(TABLE)
        .between(p, p + 0.01, { index: 'n' })
        .count(),
    check: (n) => n,
  },
  {
    name: 'filter({group: 7}) count',
    heavy: true,
    make: (r) => r.table(TABLE).filter({ group: 7 }).count(),
    check: (n) => n,
  },
  {
    name: "filter(row('n').gt(x)) limit(100)",
    heavy: false,
    make: (r, p) => r.table(TABLE).filter(r.row('n').gt(p)).limit(100),
    // The scan order of a table is each system's own: the count of answers, all above x.
    check: (rows) => rows.length,
  },
];

/** The documents, the same for both systems. */
function* batches(docs: number): Generator<Record<string, unknown>[]> {
  const rand = mulberry32(33);
  for (let start = 0; start < docs; start += BATCH) {
    const batch: Record<string, unknown>[] = [];
    for (let i = start; i < Math.min(docs, start + BATCH); i++) {
      batch.push({ id: i, group: i % 1000, n: rand(), name: `name ${i % 5000}`, tags: ['t', `t${i % 7}`] });
    }
    yield batch;
  }
}

interface System {
  name: 'wharf' | 'rethinkdb';
  conn: Any;
  stop(): Promise<unknown>;
}

async function load(r: Any, s: System, docs: number, log: (l: string) => void): Promise<number> {
  const t0 = performance.now();
  await r.tableCreate(TABLE).run(s.conn);
  const it = batches(docs);
  const worker = async () => {
    for (let b = it.next(); !b.done; b = it.next()) {
      const res = await r.table(TABLE).insert(b.value, { durability: 'soft' }).run(s.conn);
      if (res.inserted !== b.value.length) throw new Error(`${s.name}: inserted ${res.inserted} of ${b.value.length}`);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  await r.table(TABLE).sync().run(s.conn);
  await r.table(TABLE).indexCreate('group').run(s.conn);
  await r.table(TABLE).indexCreate('n').run(s.conn);
  await r.table(TABLE).indexWait().run(s.conn);
  const ms = performance.now() - t0;
  log(`${s.name}: ${docs} documents loaded and indexed in ${fmtMs(ms)}`);
  return ms;
}

async function run(q: Any, conn: Any): Promise<Any> {
  const res = await q.run(conn);
  return res && typeof res.toArray === 'function' ? res.toArray() : res;
}

export async function reqlScenario(ctx: BenchContext, o: { docs?: number } = {}): Promise<ScenarioResult> {
  const docs = o.docs ?? (ctx.quick ? 100_000 : 1_000_000);
  const { default: r } = (await import('rethinkdb')) as { default: Any };
  const dir = join(ctx.dir, 'reql');
  mkdirSync(dir, { recursive: true });
  const bin = findRethinkdb();
  const systems: System[] = [];
  const loadMs: Record<string, number> = {};
  try {
    const wharf = await startServerProc(join(dir, 'wharf'));
    systems.push({
      name: 'wharf',
      conn: await r.connect({ host: '127.0.0.1', port: wharf.driverPort }),
      stop: () => wharf.stop(),
    });
    if (bin) {
      const rdb = await startRethinkdb(bin, join(dir, 'rethinkdb'));
      systems.push({
        name: 'rethinkdb',
        conn: await r.connect({ host: '127.0.0.1', port: rdb.driverPort }),
        stop: () => rdb.stop(),
      });
    } else {
      ctx.log(RETHINKDB_MISSING);
      ctx.notes.push(`reql: ${RETHINKDB_MISSING}`);
    }
    for (const s of systems) loadMs[s.name] = await load(r, s, docs, ctx.log);

    const light = ctx.quick ? 20 : 50;
    const heavy = ctx.quick ? 2 : 3;
    const hist: Record<string, RecordableHistogram> = {};
    const perRound: Record<string, number[]> = {};
    const key = (s: string, q: string) => `${s}\u0000${q}`;
    for (const s of systems)
      for (const q of QUERIES) {
        hist[key(s.name, q.name)] = createHistogram();
        perRound[key(s.name, q.name)] = [];
      }
    // Untimed: one of each, on each system (first connection use, caches).
    for (const s of systems) for (const q of QUERIES) await run(q.make(r, 0.5), s.conn);

    for (let round = 0; round < ctx.rounds; round++) {
      const rand = mulberry32(1000 + round);
      const params = new Map(
        QUERIES.map((q) => [
          q.name,
          Array.from({ length: q.heavy ? heavy : light }, () =>
            q.name === 'get'
              ? Math.floor(rand() * docs)
              : q.name === 'getAll index'
                ? Math.floor(rand() * 1000)
                : rand(),
          ),
        ]),
      );
      const order = round % 2 === 0 ? systems : [...systems].reverse();
      const answers = new Map<string, string>();
      for (const s of order) {
        for (const q of QUERIES) {
          const times: number[] = [];
          const seen: unknown[] = [];
          for (const p of params.get(q.name)!) {
            const t0 = performance.now();
            const answer = await run(q.make(r, p), s.conn);
            const ms = performance.now() - t0;
            times.push(ms);
            hist[key(s.name, q.name)]!.record(Math.max(1, Math.round(ms * 1000)));
            seen.push(q.check(answer));
          }
          perRound[key(s.name, q.name)]!.push(median(times));
          const text = JSON.stringify(seen);
          const other = answers.get(q.name);
          if (other !== undefined && other !== text)
            throw new Error(`reql: ${q.name}: the systems' answers differ in round ${round + 1}`);
          answers.set(q.name, text);
        }
      }
      ctx.log(
        `round ${round + 1}/${ctx.rounds}: ${QUERIES.map((q) => `${q.name} ${systems.map((s) => fmtMs(perRound[key(s.name, q.name)]!.at(-1)!)).join(' / ')}`).join('; ')}`,
      );
    }

    const rows: Row[] = [];
    const samples: Record<string, unknown> = { docs, loadMs, rounds: ctx.rounds, perRoundMedianMs: {} };
    const ms = (h: RecordableHistogram, p: number) => h.percentile(p) / 1000;
    for (const q of QUERIES) {
      const w = hist[key('wharf', q.name)]!;
      const rdb = systems.length > 1 ? hist[key('rethinkdb', q.name)]! : undefined;
      const ratios = rdb
        ? perRound[key('wharf', q.name)]!.map((x, i) => x / perRound[key('rethinkdb', q.name)]![i]!)
        : undefined;
      (samples.perRoundMedianMs as Record<string, unknown>)[q.name] = Object.fromEntries(
        systems.map((s) => [s.name, perRound[key(s.name, q.name)]!.map((x) => round(x, 3))]),
      );
      rows.push({
        scenario: 'reql',
        measure: `${q.name}: median / p99`,
        value: `Wharf ${fmtMs(ms(w, 50))} / ${fmtMs(ms(w, 99))}`,
        ...(rdb
          ? {
              reference: `RethinkDB ${fmtMs(ms(rdb, 50))} / ${fmtMs(ms(rdb, 99))}`,
              ratio: median(ratios!),
              // Two decimals would print a ratio far below 1 as 0.00×.
              ...(median(ratios!) < 0.01 ? { ratioText: `${median(ratios!).toPrecision(2)}×` } : {}),
              ratios: ratios!.map((x) => round(x, 3)),
            }
          : {}),
      });
    }
    return { name: 'reql', rows, charts: [], samples };
  } finally {
    for (const s of systems) {
      await s.conn.close().catch(() => {});
      await s.stop();
    }
    rmSync(dir, { recursive: true, force: true });
  }
}
