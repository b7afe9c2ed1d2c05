/**
 * Changefeeds through the official `rethinkdb` driver (2.4.2) against a real server process:
 * table, get, between, get_all, filter/map chains and order_by.limit feeds; include_initial,
 * include_states, include_types, include_offsets, squash; the skipped-changes error of a small
 * changefeed_queue_size under a 100k-document bulk load, with the server's memory bounded; STOP,
 * a connection closing and a dropped table end feeds; the per-connection feed limit.
 *
 * Each scenario of SCENARIOS writes through the driver only and returns what its feed gave, so
 * with RETHINKDB_BIN set (a RethinkDB 2.4 binary) the same scenarios run against a real
 * RethinkDB too, and its output must equal Wharf's expectation.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type RethinkdbProc, startRethinkdb } from '@wharf/bench/rethinkdb';
import rethinkdb from 'rethinkdb';
import { r as rts } from 'rethinkdb-ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverForSuite } from '../helpers/server-suite.js';
import { removeDir, spawnServer } from '../helpers/spawn-server.js';
import { until } from '../helpers/until.js';

// @types/rethinkdb lags the driver: use it untyped.
type Any = any;
const r: Any = rethinkdb;
type Conn = Any;

const RETHINKDB_BIN = process.env.RETHINKDB_BIN;
if (!RETHINKDB_BIN)
  console.warn('changefeeds.test: RETHINKDB_BIN is not set, the real RethinkDB comparison is skipped');

/** The next `n` rows of a feed. */
async function take(feed: Any, n: number): Promise<unknown[]> {
  const rows: unknown[] = [];
  for (let i = 0; i < n; i++) rows.push(await feed.next());
  return rows;
}

interface Scenario {
  name: string;
  /** The driver's cursor class for this feed (it follows the response notes). */
  cursor: string;
  /** Runs on a fresh table `t` (primary key `id`); returns what the feed gave. */
  run: (conn: Conn, t: Any) => Promise<{ feed: Any; rows: unknown[] }>;
  want: unknown[];
}

const SCENARIOS: Scenario[] = [
  {
    name: 'a table feed: inserts, updates and deletes, in commit order',
    cursor: '[object Feed]',
    run: async (conn, t) => {
      const feed = await t.changes().run(conn);
      await t.insert({ id: 1 }).run(conn);
      await t.insert({ id: 2 }).run(conn);
      await t.get(1).update({ v: 1 }).run(conn);
      await t.get(1).update({ v: 1 }).run(conn); // changes nothing: no change
      await t.get(2).delete().run(conn);
      return { feed, rows: await take(feed, 4) };
    },
    want: [
      { old_val: null, new_val: { id: 1 } },
      { old_val: null, new_val: { id: 2 } },
      { old_val: { id: 1 }, new_val: { id: 1, v: 1 } },
      { old_val: { id: 2 }, new_val: null },
    ],
  },
  {
    name: 'include_types on a table feed',
    cursor: '[object Feed]',
    run: async (conn, t) => {
      const feed = await t.changes({ includeTypes: true, includeStates: true }).run(conn);
      await t.insert({ id: 1 }).run(conn);
      await t.get(1).replace({ id: 1, a: 2 }).run(conn);
      await t.get(1).delete().run(conn);
      return { feed, rows: await take(feed, 4) };
    },
    want: [
      { state: 'ready', type: 'state' },
      { old_val: null, new_val: { id: 1 }, type: 'add' },
      { old_val: { id: 1 }, new_val: { id: 1, a: 2 }, type: 'change' },
      { old_val: { id: 1, a: 2 }, new_val: null, type: 'remove' },
    ],
  },
  {
    name: 'get(key): an atom feed of one document, with its initial value and states',
    cursor: '[object AtomFeed]',
    run: async (conn, t) => {
      const feed = await t.get(1).changes({ includeInitial: true, includeStates: true, includeTypes: true }).run(conn);
      const first = await take(feed, 3);
      await t.insert({ id: 2 }).run(conn); // another key: not in this feed
      await t.insert({ id: 1, n: 1 }).run(conn);
      await t.get(1).update({ n: 2 }).run(conn);
      await t.get(1).delete().run(conn);
      return { feed, rows: [...first, ...(await take(feed, 3))] };
    },
    want: [
      { state: 'initializing', type: 'state' },
      { new_val: null, type: 'initial' },
      { state: 'ready', type: 'state' },
      { old_val: null, new_val: { id: 1, n: 1 }, type: 'add' },
      { old_val: { id: 1, n: 1 }, new_val: { id: 1, n: 2 }, type: 'change' },
      { old_val: { id: 1, n: 2 }, new_val: null, type: 'remove' },
    ],
  },
  {
    name: 'between on a secondary index: a document moving out has new_val null, moving in old_val null',
    cursor: '[object Feed]',
    run: async (conn, t) => {
      await t.indexCreate('score').run(conn);
      await t.indexWait('score').run(conn);
      const feed = await t.between(10, 20, { index: 'score' }).changes().run(conn);
      await t.insert({ id: 1, score: 5 }).run(conn); // outside: nothing
      await t.insert({ id: 2, score: 15 }).run(conn);
      await t.get(2).update({ score: 25 }).run(conn);
      await t.get(1).update({ score: 12 }).run(conn);
      await t.get(1).update({ score: 1 }).run(conn);
      return { feed, rows: await take(feed, 4) };
    },
    want: [
      { old_val: null, new_val: { id: 2, score: 15 } },
      { old_val: { id: 2, score: 15 }, new_val: null },
      { old_val: null, new_val: { id: 1, score: 12 } },
      { old_val: { id: 1, score: 12 }, new_val: null },
    ],
  },
  {
    name: 'between on the primary key, and get_all',
    cursor: '[object Feed]',
    run: async (conn, t) => {
      const range = await t.between(10, 20).changes().run(conn);
      const some = await t.getAll(3, 15).changes().run(conn);
      for (const id of [3, 5, 15, 25]) await t.insert({ id }).run(conn);
      return { feed: range, rows: [...(await take(range, 1)), ...(await take(some, 2))] };
    },
    want: [
      { old_val: null, new_val: { id: 15 } },
      { old_val: null, new_val: { id: 3 } },
      { old_val: null, new_val: { id: 15 } },
    ],
  },
  {
    name: 'filter and map: each side tested and mapped, a change failing on both sides dropped',
    cursor: '[object Feed]',
    run: async (conn, t) => {
      const feed = await t
        .filter(r.row('n').gt(5))
        .map((d: Any) => ({ id: d('id'), n: d('n') }))
        .changes()
        .run(conn);
      await t.insert({ id: 1, n: 1, x: 'a' }).run(conn); // fails before and after: dropped
      await t.insert({ id: 2, n: 10, x: 'b' }).run(conn);
      await t.get(2).update({ n: 3 }).run(conn);
      await t.get(1).update({ n: 7 }).run(conn);
      await t.get(1).update({ x: 'c' }).run(conn); // the mapped value does not change: dropped
      await t.get(1).update({ n: 8 }).run(conn);
      return { feed, rows: await take(feed, 4) };
    },
    want: [
      { old_val: null, new_val: { id: 2, n: 10 } },
      { old_val: { id: 2, n: 10 }, new_val: null },
      { old_val: null, new_val: { id: 1, n: 7 } },
      { old_val: { id: 1, n: 7 }, new_val: { id: 1, n: 8 } },
    ],
  },
  {
    name: 'terms after changes() apply to the change documents',
    cursor: '[object Feed]',
    run: async (conn, t) => {
      const feed = await t
        .changes()
        .pluck({ new_val: ['v'] })
        .run(conn);
      const ids = await t.changes()('new_val')('id').run(conn);
      await t.insert({ id: 1, v: 5, w: 6 }).run(conn);
      await t.insert({ id: 2, v: 7 }).run(conn);
      return { feed, rows: [...(await take(feed, 2)), ...(await take(ids, 2))] };
    },
    want: [{ new_val: { v: 5 } }, { new_val: { v: 7 } }, 1, 2],
  },
  {
    name: 'order_by({index}).limit(n): the top n, what leaves and enters it',
    cursor: '[object OrderByLimitFeed]',
    run: async (conn, t) => {
      await t.indexCreate('score').run(conn);
      await t.indexWait('score').run(conn);
      await t.insert([1, 2, 3, 4, 5].map((s) => ({ id: s, score: s }))).run(conn);
      const feed = await t
        .orderBy({ index: r.desc('score') })
        .limit(2)
        .changes({ includeInitial: true, includeStates: true })
        .run(conn);
      const first = await take(feed, 4);
      await t.insert({ id: 10, score: 10 }).run(conn); // enters, 4 leaves
      await t.insert({ id: 0, score: 0 }).run(conn); // not in the top 2: nothing
      await t.get(5).delete().run(conn); // leaves, 4 enters again
      await t.get(10).update({ score: 11 }).run(conn); // changes inside the top 2
      return { feed, rows: [...first, ...(await take(feed, 3))] };
    },
    want: [
      { state: 'initializing' },
      { new_val: { id: 5, score: 5 } },
      { new_val: { id: 4, score: 4 } },
      { state: 'ready' },
      { old_val: { id: 4, score: 4 }, new_val: { id: 10, score: 10 } },
      { old_val: { id: 5, score: 5 }, new_val: { id: 4, score: 4 } },
      { old_val: { id: 10, score: 10 }, new_val: { id: 10, score: 11 } },
    ],
  },
  {
    name: 'include_offsets: the positions in the top n of what left and entered',
    cursor: '[object OrderByLimitFeed]',
    run: async (conn, t) => {
      await t.insert([{ id: 1 }, { id: 3 }]).run(conn);
      const feed = await t.orderBy({ index: 'id' }).limit(2).changes({ includeOffsets: true }).run(conn);
      await t.insert({ id: 2 }).run(conn);
      await t.get(1).delete().run(conn);
      return { feed, rows: await take(feed, 2) };
    },
    want: [
      { old_val: { id: 3 }, old_offset: 1, new_val: { id: 2 }, new_offset: 1 },
      { old_val: { id: 1 }, old_offset: 0, new_val: { id: 3 }, new_offset: 1 },
    ],
  },
  {
    name: 'squash: changes made while the client is not reading arrive as one net change per document',
    cursor: '[object Feed]',
    run: async (conn, t) => {
      const feed = await t.changes({ squash: true }).run(conn);
      await t.insert({ id: 1 }).run(conn);
      await t.get(1).update({ v: 1 }).run(conn);
      await t.get(1).update({ v: 2 }).run(conn);
      await t.insert({ id: 2 }).run(conn);
      await t.get(2).delete().run(conn); // inserted and deleted: nothing
      const rows = await take(feed, 1);
      await t.insert({ id: 3 }).run(conn);
      return { feed, rows: [...rows, ...(await take(feed, 1))] };
    },
    want: [
      { old_val: null, new_val: { id: 1, v: 2 } },
      { old_val: null, new_val: { id: 3 } },
    ],
  },
  {
    name: 'include_initial on a table feed: the current rows, then the changes',
    cursor: '[object Feed]',
    run: async (conn, t) => {
      await t.insert([{ id: 1 }, { id: 2 }]).run(conn);
      const feed = await t.changes({ includeInitial: true, includeTypes: true }).run(conn);
      // Initial values come in no specified order (RethinkDB's follow its shards).
      const initial = ((await take(feed, 2)) as { new_val: { id: number } }[]).sort(
        (a, b) => a.new_val.id - b.new_val.id,
      );
      await t.insert({ id: 3 }).run(conn);
      return { feed, rows: [...initial, ...(await take(feed, 1))] };
    },
    want: [
      { new_val: { id: 1 }, type: 'initial' },
      { new_val: { id: 2 }, type: 'initial' },
      { old_val: null, new_val: { id: 3 }, type: 'add' },
    ],
  },
];

/** Each scenario on its own table of `db`, through `connect`'s connection. */
function scenarioTests(label: string, connect: () => Promise<Conn>): void {
  let n = 0;
  for (const s of SCENARIOS) {
    const table = `feed_${label}_${n++}`;
    it(`${label}: ${s.name}`, async () => {
      const conn = await connect();
      try {
        await r.tableCreate(table).run(conn);
        const { feed, rows } = await s.run(conn, r.table(table));
        expect(rows).toEqual(s.want);
        expect(feed.toString()).toBe(s.cursor);
        await feed.close();
      } finally {
        await conn.close({ noreplyWait: false });
      }
    });
  }
}

describe('changefeeds on the driver port', () => {
  const server = serverForSuite({ args: ['--limit', 'driverFeedsPerConnection=3'] });
  const connect = (): Promise<Conn> => r.connect({ host: server().driver.host, port: server().driver.port });

  scenarioTests('wharf', connect);

  it("a table feed sees the HTTP bulk route's inserts, interleaved with the driver's, in commit order", async () => {
    const conn = await connect();
    await r.tableCreate('via_http').run(conn);
    const feed = await r.table('via_http').changes().run(conn);
    await r.table('via_http').insert({ id: 'a' }).run(conn);
    const res = await fetch(`${server().url}/api/tables/via_http/documents?durability=soft`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-ndjson' },
      body: '{"id":"b"}\n{"id":"c","n":1}\n',
    });
    expect(res.status).toBe(200);
    await r.table('via_http').get('c').update({ n: 2 }).run(conn);
    expect(await take(feed, 4)).toEqual([
      { old_val: null, new_val: { id: 'a' } },
      { old_val: null, new_val: { id: 'b' } },
      { old_val: null, new_val: { id: 'c', n: 1 } },
      { old_val: { id: 'c', n: 1 }, new_val: { id: 'c', n: 2 } },
    ]);
    await conn.close({ noreplyWait: false });
  });

  /** The server's gauge of open engine subscriptions of driver-port feeds. */
  const openFeeds = async (): Promise<number> =>
    ((await (await fetch(`${server().url}/api/stats`)).json()) as { server: { driverFeeds: number } }).server
      .driverFeeds;

  it('STOP ends a feed, with a CONTINUE waiting on it, and its engine subscription; the connection goes on', async () => {
    const conn = await connect();
    await r.tableCreate('stopped').run(conn);
    const base = await openFeeds();
    const feed = await r.table('stopped').changes().run(conn);
    expect(await openFeeds()).toBe(base + 1);
    feed.next().catch(() => {}); // a CONTINUE the server holds until a change comes (the driver drops it on close)
    await feed.close(); // resolves once the server answered
    await until('the engine subscription is closed', async () => (await openFeeds()) === base);
    await r.table('stopped').insert({ id: 1 }).run(conn);
    expect(await r.table('stopped').count().run(conn)).toBe(1);
    await conn.close({ noreplyWait: false });
  });

  it('a connection closing ends its feeds', async () => {
    const conn = await connect();
    await r.tableCreate('closing').run(conn);
    const base = await openFeeds();
    const feed = await r.table('closing').changes().run(conn);
    await r.table('closing').get(1).changes().run(conn);
    expect(await openFeeds()).toBe(base + 2);
    feed.next().catch(() => {}); // fails with the connection
    await conn.close({ noreplyWait: false });
    await until('the engine subscriptions are closed', async () => (await openFeeds()) === base);
  });

  it('driverFeedsPerConnection: past the limit a feed query fails with RESOURCE_LIMIT; closing feeds frees it', async () => {
    const conn = await connect();
    await r.tableCreate('many').run(conn);
    const feeds = [];
    for (let i = 0; i < 3; i++) feeds.push(await r.table('many').changes().run(conn));
    const err = await r
      .table('many')
      .changes()
      .run(conn)
      .then(
        () => null,
        (e: Error) => e,
      );
    expect(err?.name).toBe('ReqlResourceLimitError');
    expect(err?.message).toContain('This connection has 3 changefeeds open');
    expect(err?.message).toContain('driverFeedsPerConnection');
    await feeds[0].close();
    const again = await r.table('many').changes().run(conn);
    await r.table('many').insert({ id: 1 }).run(conn);
    expect(await take(again, 1)).toEqual([{ old_val: null, new_val: { id: 1 } }]);
    // Closing the connection ends its feeds; another connection opens as many.
    await conn.close({ noreplyWait: false });
    const other = await connect();
    for (let i = 0; i < 3; i++) await r.table('many').changes().run(other);
    await other.close({ noreplyWait: false });
  });

  it('changefeed_queue_size as a run option; past it the unread queue is dropped, the skipped error comes, then the feed goes on', async () => {
    const conn = await connect();
    await r.tableCreate('run_option').run(conn);
    const feed = await r.table('run_option').changes().run(conn, { changefeedQueueSize: 2 });
    for (let id = 1; id <= 6; id++) await r.table('run_option').insert({ id }).run(conn);
    // As RethinkDB: the overflow clears what was queued, so the error counts all six.
    expect(await take(feed, 1)).toEqual([{ error: 'Changefeed cache over array size limit, skipped 6 elements.' }]);
    await r.table('run_option').insert({ id: 7 }).run(conn);
    expect(await take(feed, 1)).toEqual([{ old_val: null, new_val: { id: 7 } }]);
    await conn.close({ noreplyWait: false });
  });

  it('a dropped table ends its feeds with an OP_FAILED error', async () => {
    const conn = await connect();
    await r.tableCreate('dropped').run(conn);
    const feed = await r.table('dropped').changes().run(conn);
    await r.tableDrop('dropped').run(conn);
    const err = await feed.next().then(
      () => null,
      (e: Error) => e,
    );
    expect(err?.name).toBe('ReqlOpFailedError');
    expect(err?.message).toContain('Changefeed aborted (unavailable)');
    await conn.close({ noreplyWait: false });
  });

  it('bad optional arguments and unwatchable queries get clear errors', async () => {
    const conn = await connect();
    await r.tableCreate('bad').run(conn);
    const failure = (q: Any): Promise<[string, string]> =>
      q.run(conn).then(
        () => ['', 'no error'],
        (e: Error) => [e.name, e.message],
      );
    expect(await failure(r.table('bad').changes({ squash: 'x' }))).toEqual([
      'ReqlQueryLogicError',
      expect.stringContaining('Expected BOOL or NUMBER but found STRING'),
    ]);
    expect(await failure(r.table('bad').changes({ squash: -1 }))).toEqual([
      'ReqlQueryLogicError',
      expect.stringContaining('Expected BOOL or a positive NUMBER but found a negative NUMBER'),
    ]);
    expect(await failure(r.table('bad').changes({ changefeedQueueSize: 0 }))).toEqual([
      'ReqlQueryLogicError',
      expect.stringContaining('Illegal changefeed queue size `0`.  (Must be >= 1.)'),
    ]);
    expect(await failure(r.table('bad').changes({ changefeedQueueSize: 100_001 }))).toEqual([
      'ReqlResourceLimitError',
      expect.stringContaining("over this server's limit of 100000 (the server limit changefeedQueueSize)"),
    ]);
    expect(await failure(r.table('bad').changes({ squash: null }))).toEqual([
      'ReqlQueryLogicError',
      expect.stringContaining('Expected BOOL or NUMBER but found NULL'),
    ]);
    expect(
      await r
        .table('bad')
        .changes()
        .run(conn, { changefeedQueueSize: 0 })
        .then(
          () => 'no error',
          (e: Error) => e.message,
        ),
    ).toContain('Illegal changefeed queue size `0`.  (Must be >= 1.)');
    expect(
      await failure(
        r
          .table('bad')
          .filter(() => r.random().gt(0.5))
          .changes(),
      ),
    ).toEqual([
      'ReqlQueryLogicError',
      expect.stringContaining('Cannot call `changes` after a non-deterministic function'),
    ]);
    expect(
      await failure(
        r
          .table('bad')
          .concatMap((d: Any) => [d])
          .changes(),
      ),
    ).toEqual(['ReqlQueryLogicError', expect.stringContaining('Cannot call `changes` after `concat_map`')]);
    expect(
      await failure(
        r
          .table('bad')
          .orderBy({ index: 'id' })
          .limit(2)
          .map((d: Any) => d)
          .changes(),
      ),
    ).toEqual([
      'ReqlQueryLogicError',
      expect.stringContaining('not supported on queries that have a transformation following a `limit` term'),
    ]);
    expect(await failure(r.table('bad').skip(1).changes())).toEqual([
      'ReqlQueryLogicError',
      expect.stringContaining('Wharf does not support `changes` on SKIP'),
    ]);
    expect(await failure(r.table('nope').changes())).toEqual([
      'ReqlOpFailedError',
      expect.stringContaining('Table `test.nope` does not exist'),
    ]);
    // The connection still serves.
    expect(await r.expr(1).run(conn)).toBe(1);
    await conn.close({ noreplyWait: false });
  });
});

describe('changefeeds with rethinkdb-ts, and at shutdown', () => {
  it('rethinkdb-ts reads a feed; SIGTERM with a feed waiting on a CONTINUE still exits 0', async () => {
    const server = await spawnServer();
    try {
      const conn = await rts.connect({ host: server.driver.host, port: server.driver.port });
      await rts.tableCreate('ts').run(conn);
      const feed = await rts.table('ts').changes({ includeTypes: true }).run(conn);
      await rts.table('ts').insert({ id: 1 }).run(conn);
      expect(await feed.next()).toEqual({ old_val: null, new_val: { id: 1 }, type: 'add' });
      const waiting = feed.next().catch(() => 'ended'); // a CONTINUE the server holds
      // Shutdown drains every query it took: the feed is ended so the waiting CONTINUE is answered.
      expect(await server.stop('SIGTERM')).toBe(0);
      expect(await waiting).toBe('ended');
      await conn.close().catch(() => {});
    } finally {
      await server.stop('SIGKILL').catch(() => null);
      removeDir(server.dataDir);
    }
  });
});

/** The server's resident memory, from /proc (Linux). */
function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS for process ${pid}`);
  return Number(m[1]) * 1024;
}

describe('a changefeed under a bulk load', () => {
  // A small engine budget, so the memtables' share of RSS is small next to what unbounded feeds would hold.
  const server = serverForSuite({ args: ['--memory-budget-mb', '32'] });

  it('100k bulk-inserted documents with changefeed_queue_size 1000: the skipped error, then the feed goes on; RSS bounded', async () => {
    const conn = await r.connect({ host: server().driver.host, port: server().driver.port });
    await r.tableCreate('burst').run(conn);
    const feed = await r.table('burst').changes({ changefeedQueueSize: 1000 }).run(conn);
    const pid = server().proc.pid as number;
    const before = rssBytes(pid);
    // 100 000 documents of ~4 KiB (about 400 MiB of changes) in 40 requests, while the client reads nothing.
    const pad = 'x'.repeat(4000);
    for (let part = 0; part < 40; part++) {
      const lines: string[] = [];
      for (let i = 0; i < 2500; i++) lines.push(JSON.stringify({ id: part * 2500 + i, pad }));
      const res = await fetch(`${server().url}/api/tables/burst/documents?durability=soft`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-ndjson' },
        body: `${lines.join('\n')}\n`,
      });
      expect(res.status).toBe(200);
    }
    const grown = rssBytes(pid) - before;
    // Bounded, the feed holds 1000 changes (~4 MiB); the load itself grew RSS by ~120 MiB here (request
    // bodies, the engine's 32 MiB budget, allocator caches). Unbounded, the feed would add the 400 MiB.
    expect(grown).toBeLessThan(256 * 1024 * 1024);
    // The unread queue went with the overflow (as in RethinkDB): the error counts every change.
    expect(await take(feed, 1)).toEqual([
      { error: 'Changefeed cache over array size limit, skipped 100000 elements.' },
    ]);
    await r.table('burst').insert({ id: 'after' }).run(conn);
    expect(await take(feed, 1)).toEqual([{ old_val: null, new_val: { id: 'after' } }]);
    expect(await r.table('burst').count().run(conn)).toBe(100_001);
    await conn.close({ noreplyWait: false });
  });
});

describe.skipIf(!RETHINKDB_BIN)('the same scenarios on a real RethinkDB', () => {
  let reference: RethinkdbProc | undefined;
  beforeAll(async () => {
    reference = await startRethinkdb(RETHINKDB_BIN as string, mkdtempSync(join(tmpdir(), 'wharf-feeds-ref-')));
  }, 120_000);
  afterAll(async () => {
    await reference?.stop();
  });
  scenarioTests('rethinkdb', () => r.connect({ host: '127.0.0.1', port: reference?.driverPort }));
});
