/**
 * `rethinkdb-ts` (3.x) against a real server process on 127.0.0.1. It sends `db` as a bare
 * string global optarg and an explicit DB term in every TABLE term, reads server-first by
 * position, and does not send NOREPLY_WAIT on close.
 */

import { type Connection, r } from 'rethinkdb-ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverForSuite } from '../helpers/server-suite.js';
import { makeBlock, serverStats } from './shared.js';

describe('rethinkdb-ts driver', () => {
  const server = serverForSuite();
  let conn: Connection;
  const connect = (opts: Record<string, unknown> = {}): Promise<Connection> =>
    r.connect({ host: server().driver.host, port: server().driver.port, ...opts });

  beforeAll(async () => {
    conn = await connect();
  });
  afterAll(() => conn?.close().catch(() => {}));

  it("seed 000's loop: 1000 sequential hard inserts, each acknowledged and all readable", async () => {
    await r.tableCreate('seq000').run(conn);
    for (let i = 0; i < 1000; i++) {
      const res = await r
        .table('seq000')
        .insert({ id: i, name: `user-${i}` }, { durability: 'hard' })
        .run(conn);
      expect(res).toEqual({ deleted: 0, errors: 0, inserted: 1, replaced: 0, skipped: 0, unchanged: 0 });
    }
    expect(await r.table('seq000').count().run(conn)).toBe(1000);
    expect(await r.table('seq000').get(500).run(conn)).toEqual({ id: 500, name: 'user-500' });
  });

  it("seed 002's loop: insert(r.json(BLOCK), {durability: 'soft'}) with a ~900 KB block, then sync", async () => {
    await r.tableCreate('seq002').run(conn);
    const { text, docs } = makeBlock(900 * 1024);
    for (let round = 0; round < 4; round++) {
      const res = await r.table('seq002').insert(r.json(text), { durability: 'soft' }).run(conn);
      expect(res.inserted).toBe(docs);
      expect(res.errors).toBe(0);
      expect(res.generated_keys).toHaveLength(docs);
    }
    expect(await r.table('seq002').sync().run(conn)).toEqual({ synced: 1 });
    expect(await r.table('seq002').count().run(conn)).toBe(4 * docs);
  });

  it('reads 10k documents through a cursor across batches, and closes a second cursor mid-stream', async () => {
    await r.tableCreate('big').run(conn);
    const docs = Array.from({ length: 10_000 }, (_, i) => ({ id: i, body: `document number ${i}` }));
    expect((await r.table('big').insert(docs, { durability: 'soft' }).run(conn)).inserted).toBe(10_000);

    const batchesBefore = (await serverStats(server().url)).server.driverBatches;
    const cursor = await r.table('big').getCursor(conn);
    const seen = new Set<number>();
    for await (const row of cursor) {
      expect(row.body).toBe(`document number ${row.id}`);
      seen.add(row.id);
    }
    expect(seen.size).toBe(10_000);
    expect((await serverStats(server().url)).server.driverBatches - batchesBefore).toBeGreaterThan(2);

    // run() drains the cursor by itself.
    expect(await r.table('big').run(conn)).toHaveLength(10_000);

    const partial = await r.table('big').getCursor(conn);
    for (let i = 0; i < 1500; i++) expect((await partial.next()).id).toBe(i);
    await partial.close();
    expect(await r.table('big').count().run(conn)).toBe(10_000);
    expect(await r.table('big').between(10, 13).getField('id').run(conn)).toEqual([10, 11, 12]);
  });

  it('noreply writes followed by noreplyWait are all applied', async () => {
    await r.tableCreate('noreply').run(conn);
    for (let i = 0; i < 200; i++) await r.table('noreply').insert({ id: i }).run(conn, { noreply: true });
    await conn.noreplyWait();
    expect(await r.table('noreply').count().run(conn)).toBe(200);
  });

  it('conn.close() closes, and the writes it acknowledged are there', async () => {
    const c = await connect();
    expect((await r.table('noreply').insert({ id: 'closing' }).run(c)).inserted).toBe(1);
    await c.close();
    expect(c.open).toBe(false);
    expect(await r.table('noreply').get('closing').run(conn)).toEqual({ id: 'closing' });
  });

  it('conn.server() answers SERVER_INFO', async () => {
    expect(await conn.server()).toMatchObject({ name: 'wharf', proxy: false });
  });

  it('query errors of every kind leave the connection usable', async () => {
    await expect(r.js('throw new Error("js")').run(conn)).rejects.toThrow(/Error: js/);
    await expect(r.table('missing_table').run(conn)).rejects.toThrow(/Table `test.missing_table` does not exist/);
    expect(await r.table('big').get(7)('body').run(conn)).toBe('document number 7');
  });

  it('handles Date values (TIME pseudo-type) and a database given on connect', async () => {
    await r.dbCreate('tsdb').run(conn);
    const c = await connect({ db: 'tsdb' });
    await r.tableCreate('events').run(c);
    const at = new Date('2022-05-06T07:08:09.123Z');
    await r.table('events').insert({ id: 'e1', at }).run(c);
    const row = await r.table('events').get('e1').run(c);
    expect(row?.at).toBeInstanceOf(Date);
    expect((row!.at as Date).toISOString()).toBe(at.toISOString());
    expect(await r.db('tsdb').tableList().run(conn)).toEqual(['events']);
    expect(await r.tableList().run(c)).toEqual(['events']);
    await c.close();
  });
});

describe('rethinkdb-ts driver, with a password', () => {
  const server = serverForSuite({ env: { WHARF_PASSWORD: 's3cret' } });

  it('rejects a wrong password and accepts the right one', async () => {
    const opts = { host: server().driver.host, port: server().driver.port };
    await expect(r.connect({ ...opts, password: 'wrong' })).rejects.toThrow(/Wrong password/);
    const c = await r.connect({ ...opts, password: 's3cret' });
    expect(await r.expr(2).mul(21).run(c)).toBe(42);
    await c.close();
  });
});
