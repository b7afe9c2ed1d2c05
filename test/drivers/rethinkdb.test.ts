/**
 * The official `rethinkdb` driver (2.4.2) against a real server process on 127.0.0.1.
 */

import rethinkdb from 'rethinkdb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverForSuite } from '../helpers/server-suite.js';
import { makeBlock, serverStats } from './shared.js';

// @types/rethinkdb lags the driver (no r.json, sync, config, noreplyWait…): use it untyped.
type Any = any;
const r: Any = rethinkdb;
type Conn = Any;

describe('official rethinkdb driver', () => {
  const server = serverForSuite();
  let conn: Conn;
  const connect = (opts: Record<string, unknown> = {}): Promise<Conn> =>
    r.connect({ host: server().driver.host, port: server().driver.port, ...opts });

  beforeAll(async () => {
    conn = await connect();
  });
  afterAll(() => conn?.close({ noreplyWait: false }).catch(() => {}));

  it("seed 000's loop: 1000 sequential hard inserts, each acknowledged and all readable", async () => {
    await r.tableCreate('seq000').run(conn);
    for (let i = 0; i < 1000; i++) {
      const res = await r
        .table('seq000')
        .insert({ id: i, name: `user-${i}`, n: i * 2 }, { durability: 'hard' })
        .run(conn);
      expect(res).toEqual({ deleted: 0, errors: 0, inserted: 1, replaced: 0, skipped: 0, unchanged: 0 });
    }
    expect(await r.table('seq000').count().run(conn)).toBe(1000);
    expect(await r.table('seq000').get(0).run(conn)).toEqual({ id: 0, name: 'user-0', n: 0 });
    expect(await r.table('seq000').get(999).run(conn)).toEqual({ id: 999, name: 'user-999', n: 1998 });
    const count = (await (await fetch(`${server().url}/api/tables/seq000/count`)).json()) as { count: number };
    expect(count.count).toBe(1000);
  });

  it("seed 002's loop: insert(r.json(BLOCK), {durability: 'soft'}) with a ~900 KB block, then sync", async () => {
    await r.tableCreate('seq002').run(conn);
    const { text, docs } = makeBlock(900 * 1024);
    expect(text.length).toBeGreaterThan(850 * 1024);
    const keys = new Set<string>();
    for (let round = 0; round < 4; round++) {
      const res = (await r.table('seq002').insert(r.json(text), { durability: 'soft' }).run(conn)) as {
        inserted: number;
        errors: number;
        generated_keys: string[];
      };
      expect(res.inserted).toBe(docs);
      expect(res.errors).toBe(0);
      expect(res.generated_keys).toHaveLength(docs);
      for (const k of res.generated_keys) keys.add(k);
    }
    expect(keys.size).toBe(4 * docs);
    expect(await r.table('seq002').sync().run(conn)).toEqual({ synced: 1 });
    expect(await r.table('seq002').count().run(conn)).toBe(4 * docs);
    const one = (await r
      .table('seq002')
      .get([...keys][0] as string)
      .run(conn)) as Record<string, unknown>;
    expect(one.payload).toMatch(/^x+$/);
  });

  it("insert(r.json(r.binary(BYTES).coerceTo('string'))): the bytes as the array text, in the bulk path and the evaluator", async () => {
    await r.tableCreate('binjson').run(conn);
    // Non-ASCII text and escaped quotes survive base64 both ways.
    const bytes = Buffer.from('[{"id":1,"s":"é\\"x"}, {"id":2,"tags":["a","b"]}]');
    const text = r.binary(bytes).coerceTo('string');
    expect(await text.run(conn)).toBe(bytes.toString('utf8'));
    expect(await r.table('binjson').insert(r.json(text), { durability: 'soft' }).run(conn)).toMatchObject({
      inserted: 2,
      errors: 0,
    });
    expect(await r.table('binjson').get(1).run(conn)).toEqual({ id: 1, s: 'é"x' });
    // One object (not an array) is one document, as with a string.
    expect(
      await r
        .table('binjson')
        .insert(r.json(r.binary(Buffer.from(' {"id":3}')).coerceTo('string')))
        .run(conn),
    ).toMatchObject({ inserted: 1 });
    // return_changes goes through the evaluator's r.json and COERCE_TO, same documents.
    const changed = await r
      .table('binjson')
      .insert(r.json(r.binary(Buffer.from('[{"id":4}]')).coerceTo('string')), { returnChanges: true })
      .run(conn);
    expect(changed).toMatchObject({ inserted: 1, changes: [{ new_val: { id: 4 }, old_val: null }] });
    expect(await r.table('binjson').count().run(conn)).toBe(4);
    // Bad JSON in the bytes fails the whole query, as r.json of a string does; nothing is written.
    await expect(
      r
        .table('binjson')
        .insert(r.json(r.binary(Buffer.from('[{"id":5},{"id": ]')).coerceTo('string')))
        .run(conn),
    ).rejects.toThrow(/JSON/);
    expect(await r.table('binjson').count().run(conn)).toBe(4);
    // The other conversions follow RethinkDB's coerce_to.
    expect(await r.expr('12').coerceTo('number').run(conn)).toBe(12);
    await expect(r.expr('12x').coerceTo('number').run(conn)).rejects.toThrow(/^Could not coerce `12x` to NUMBER/);
  });

  it('reads 10k documents through a cursor across batches, and closes a second cursor mid-stream', async () => {
    await r.tableCreate('big').run(conn);
    for (let base = 0; base < 10_000; base += 2000) {
      const docs = Array.from({ length: 2000 }, (_, i) => ({ id: base + i, body: `document number ${base + i}` }));
      const res = await r.table('big').insert(docs, { durability: 'soft' }).run(conn);
      expect(res.inserted).toBe(2000);
    }
    const batchesBefore = (await serverStats(server().url)).server.driverBatches;
    const cursor = await r.table('big').run(conn);
    const seen = new Set<number>();
    let previous = -1;
    for (;;) {
      let row: { id: number; body: string };
      try {
        row = await cursor.next();
      } catch (err) {
        if ((err as Error).name === 'ReqlDriverError' && /No more rows/.test((err as Error).message)) break;
        throw err;
      }
      expect(row.id).toBeGreaterThan(previous); // key order
      previous = row.id;
      expect(row.body).toBe(`document number ${row.id}`);
      seen.add(row.id);
    }
    expect(seen.size).toBe(10_000);
    const batches = (await serverStats(server().url)).server.driverBatches - batchesBefore;
    expect(batches).toBeGreaterThan(2);

    const partial = await r.table('big').run(conn);
    for (let i = 0; i < 1500; i++) expect((await partial.next()).id).toBe(i);
    await partial.close();
    // The connection stays usable after the STOP.
    expect(await r.table('big').count().run(conn)).toBe(10_000);
    const arr = await (await r.table('big').between(100, 110).run(conn)).toArray();
    expect(arr.map((d: { id: number }) => d.id)).toEqual([100, 101, 102, 103, 104, 105, 106, 107, 108, 109]);
  });

  it('noreply writes followed by noreplyWait are all applied', async () => {
    await r.tableCreate('noreply').run(conn);
    for (let i = 0; i < 200; i++) {
      const ret = await r.table('noreply').insert({ id: i }).run(conn, { noreply: true });
      expect(ret).toBeUndefined();
    }
    await conn.noreplyWait();
    expect(await r.table('noreply').count().run(conn)).toBe(200);
  });

  it('conn.close() waits for noreply work (NOREPLY_WAIT) and closes', async () => {
    const c = await connect();
    await r.table('noreply').insert({ id: 'from-closing-conn' }).run(c, { noreply: true });
    await c.close();
    expect(c.open).toBe(false);
    expect(await r.table('noreply').get('from-closing-conn').run(conn)).toEqual({ id: 'from-closing-conn' });
  });

  it('conn.server() answers SERVER_INFO', async () => {
    const info = await conn.server();
    expect(info).toMatchObject({ name: 'wharf', proxy: false });
    expect(info.id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('query errors of every kind leave the connection usable', async () => {
    await expect(r.js('throw new Error("js")').run(conn)).rejects.toMatchObject({
      name: 'ReqlQueryLogicError',
      msg: 'Error: js',
    });
    await expect(r.table('missing_table').run(conn)).rejects.toMatchObject({
      name: 'ReqlOpFailedError',
      msg: 'Table `test.missing_table` does not exist.',
    });
    await expect(r.error('boom').run(conn)).rejects.toMatchObject({ name: 'ReqlUserError', msg: 'boom' });
    await expect(r.table('big').get(1)('nope').run(conn)).rejects.toMatchObject({ name: 'ReqlNonExistenceError' });
    expect(await r.table('big').get(1)('body').run(conn)).toBe('document number 1');
  });

  it('runs the ReQL subset with the reference result shapes', async () => {
    await r.dbCreate('app').run(conn);
    expect(await r.dbList().run(conn)).toEqual(expect.arrayContaining(['app', 'rethinkdb', 'test']));
    const created = await r.db('app').tableCreate('people', { primaryKey: 'name' }).run(conn);
    expect(created).toMatchObject({
      tables_created: 1,
      config_changes: [{ new_val: { name: 'people', db: 'app', primary_key: 'name' }, old_val: null }],
    });
    const people = r.db('app').table('people');
    const when = new Date('2020-01-02T03:04:05.000Z');
    await people
      .insert([
        { name: 'ada', age: 36, city: 'london', born: when },
        { name: 'bob', age: 20, city: 'paris' },
        { name: 'cy', age: 51, city: 'london', tags: { a: 1, b: 2 } },
      ])
      .run(conn);
    expect(await r.db('app').tableList().run(conn)).toEqual(['people']);
    expect(((await people.get('ada').run(conn)) as { born: Date }).born.toISOString()).toBe(when.toISOString());
    const rows = async (q: Any): Promise<unknown> => {
      const res = await q.run(conn);
      return Array.isArray(res) ? res : res.toArray();
    };
    expect(await rows(people.filter({ city: 'london' }).orderBy('name')('name'))).toEqual(['ada', 'cy']);
    expect(
      await rows(
        people
          .filter(r.row('age').gt(30).and(r.row('city').eq('london').not().not()))
          .orderBy(r.desc('age'))
          .pluck('name'),
      ),
    ).toEqual([{ name: 'cy' }, { name: 'ada' }]);
    expect(
      await rows(people.filter((p: Any) => p('age').lt(30).or(p('name').eq('cy'))).orderBy('age')('name')),
    ).toEqual(['bob', 'cy']);
    expect(await rows(people.orderBy({ index: r.desc('name') }).limit(2)('name'))).toEqual(['cy', 'bob']);
    expect(await rows(people.orderBy('name').skip(1).limit(1).without('born', 'tags'))).toEqual([
      { name: 'bob', age: 20, city: 'paris' },
    ]);
    expect(await rows(people.getAll('bob', 'cy', 'zed').orderBy('name')('age'))).toEqual([20, 51]);
    expect(await rows(people.between('b', r.maxval).orderBy('name')('name'))).toEqual(['bob', 'cy']);
    expect(await people.filter({ city: 'london' }).count().run(conn)).toBe(2);
    expect(
      await people
        .get('cy')
        .pluck({ tags: ['a'] })
        .run(conn),
    ).toEqual({ tags: { a: 1 } });

    expect(await people.get('bob').update({ age: 21 }).run(conn)).toMatchObject({ replaced: 1, errors: 0 });
    expect(await people.get('bob').update({ age: 21 }).run(conn)).toMatchObject({ unchanged: 1 });
    expect(await people.get('nobody').update({ age: 1 }).run(conn)).toMatchObject({ skipped: 1 });
    expect(
      await people
        .filter({ city: 'london' })
        .update((p: Any) => ({ age: p('age').add(1) }))
        .run(conn),
    ).toMatchObject({ replaced: 2 });
    expect(await people.get('ada')('age').run(conn)).toBe(37);
    expect(await people.get('bob').update({ name: 'robert' }).run(conn)).toMatchObject({
      errors: 1,
      first_error: expect.stringContaining('Primary key `name` cannot be changed'),
    });
    expect(
      await people.get('bob').replace({ name: 'bob', city: 'rome' }, { returnChanges: true }).run(conn),
    ).toMatchObject({
      replaced: 1,
      changes: [{ old_val: { name: 'bob', age: 21, city: 'paris' }, new_val: { name: 'bob', city: 'rome' } }],
    });
    expect(await people.insert({ name: 'bob', age: 99 }).run(conn)).toMatchObject({ errors: 1, inserted: 0 });
    expect(await people.insert({ name: 'bob', age: 99 }, { conflict: 'update' }).run(conn)).toMatchObject({
      replaced: 1,
    });
    expect(await people.get('bob').run(conn)).toEqual({ name: 'bob', city: 'rome', age: 99 });
    expect(
      await people
        .insert(
          { name: 'bob', age: 5 },
          { conflict: (_id: Any, oldDoc: Any, newDoc: Any) => oldDoc.merge({ age: oldDoc('age').add(newDoc('age')) }) },
        )
        .run(conn),
    ).toMatchObject({ replaced: 1 });
    expect(await people.get('bob')('age').run(conn)).toBe(104);
    expect(await people.insert({ name: 'dee' }, { returnChanges: true }).run(conn)).toMatchObject({
      inserted: 1,
      changes: [{ new_val: { name: 'dee' }, old_val: null }],
    });
    expect(await people.get('dee').delete().run(conn)).toMatchObject({ deleted: 1 });
    expect(await people.filter(r.row('age').gt(100)).delete().run(conn)).toMatchObject({ deleted: 1 });
    expect(await people.count().run(conn)).toBe(2);

    expect(await people.config().run(conn)).toMatchObject({
      name: 'people',
      db: 'app',
      primary_key: 'name',
      durability: 'hard',
    });
    expect(await people.status().run(conn)).toMatchObject({ name: 'people', status: { ready_for_writes: true } });
    expect(await people.wait().run(conn)).toEqual({ ready: 1 });
    expect(await r.db('app').config().run(conn)).toMatchObject({ name: 'app' });
    expect(await r.uuid().run(conn)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4/);
    // RethinkDB's documented example of a version 5 UUID (its fixed namespace, SHA-1 of the name).
    expect(await r.uuid('slava@example.com').run(conn)).toBe('90691cbc-b5ea-5826-ae98-951e30fc3b2d');
    // The server's clock read while the query ran (same machine; the driver's Date drops sub-ms).
    const before = Date.now();
    const now = (await r.now().run(conn)) as Date;
    const after = Date.now();
    expect(now.getTime()).toBeGreaterThanOrEqual(before - 1);
    expect(now.getTime()).toBeLessThanOrEqual(after);
    expect(((await r.ISO8601('2021-03-04T05:06:07+02:00').run(conn)) as Date).toISOString()).toBe(
      '2021-03-04T03:06:07.000Z',
    );
    expect(((await r.time(2020, 1, 2, 'Z').run(conn)) as Date).toISOString()).toBe('2020-01-02T00:00:00.000Z');
    expect(
      await r
        .expr([3, 1, 2])
        .orderBy((x: Any) => x)
        .run(conn),
    ).toEqual([1, 2, 3]);
    expect(await r.do(10, 20, (x: Any, y: Any) => r.add(x, y)).run(conn)).toBe(30);
    expect(
      await r
        .expr({ a: 1, b: { c: 2 } })
        .merge({ b: { d: 3 } })
        .run(conn),
    ).toEqual({ a: 1, b: { c: 2, d: 3 } });

    expect(await r.db('app').tableDrop('people').run(conn)).toMatchObject({ tables_dropped: 1 });
    expect(await r.dbDrop('app').run(conn)).toMatchObject({ dbs_dropped: 1, tables_dropped: 0 });
    await expect(r.db('app').tableList().run(conn)).rejects.toMatchObject({ msg: 'Database `app` does not exist.' });
  });

  it('serves concurrent queries on one connection, matched by token', async () => {
    await r.tableCreate('conc').run(conn);
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        r
          .table('conc')
          .insert({ id: i }, { durability: i % 2 ? 'hard' : 'soft' })
          .run(conn),
      ),
    );
    expect(results.every((res: Any) => res.inserted === 1)).toBe(true);
    const reads = await Promise.all(Array.from({ length: 100 }, (_, i) => r.table('conc').get(i).run(conn)));
    expect(reads).toEqual(Array.from({ length: 100 }, (_, i) => ({ id: i })));
  });
});

describe('official rethinkdb driver, with a password', () => {
  const server = serverForSuite({ env: { WHARF_PASSWORD: 's3cret' } });

  it('rejects a wrong password with ReqlAuthError and accepts the right one', async () => {
    const opts = { host: server().driver.host, port: server().driver.port };
    await expect(r.connect({ ...opts, password: 'wrong' })).rejects.toMatchObject({
      name: 'ReqlAuthError',
      msg: 'Wrong password',
    });
    await expect(r.connect(opts)).rejects.toMatchObject({ name: 'ReqlAuthError' });
    await expect(r.connect({ ...opts, user: 'root', password: 's3cret' })).rejects.toMatchObject({
      name: 'ReqlAuthError',
      msg: 'Unknown user',
    });
    const c = await r.connect({ ...opts, password: 's3cret' });
    expect(await r.expr(1).add(1).run(c)).toBe(2);
    await c.close();
  });
});
