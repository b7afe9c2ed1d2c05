/**
 * Write hooks through the official `rethinkdb` driver against a real server process:
 * setWriteHook/getWriteHook, the hook applied with `(context, old, new)` to every write of the
 * driver port (the single-document insert and the bulk insert frame, which otherwise skip the
 * evaluator, included), its errors as RethinkDB words them, `ignoreWriteHook`, the HTTP API
 * writing as sent (documented), and the hook kept across a restart.
 */
import rethinkdb from 'rethinkdb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverForSuite } from '../helpers/server-suite.js';
import { makeTempDir, removeDir, spawnServer } from '../helpers/spawn-server.js';
import { makeBlock } from './shared.js';

type Any = any;
const r = rethinkdb as Any;

const rows = async (q: Any, conn: Any): Promise<Any[]> => {
  const cursor = await q.run(conn);
  const all = await cursor.toArray();
  return all.sort((a: Any, b: Any) => (String(a.id) < String(b.id) ? -1 : 1));
};

/** Stamps every written document: the hook's own mark, what the write replaced, and the context's key. */
const stamp = (ctx: Any, oldVal: Any, newVal: Any) =>
  r.branch(
    newVal.eq(null),
    null,
    newVal.merge({ hooked: true, had: oldVal.ne(null), key: ctx('primary_key'), at: ctx('timestamp').typeOf() }),
  );

describe('write hooks', () => {
  const server = serverForSuite();
  let conn: Any;

  beforeAll(async () => {
    conn = await r.connect({ host: '127.0.0.1', port: server().driver.port });
    await r.tableCreate('hooked').run(conn);
  });
  afterAll(async () => {
    await conn?.close();
  });

  it('setWriteHook: created, replaced, deleted; getWriteHook gives {function, query}; checks the function', async () => {
    expect(await r.table('hooked').getWriteHook().run(conn)).toBeNull();
    expect(
      await r
        .table('hooked')
        .setWriteHook((_c: Any, _o: Any, n: Any) => n)
        .run(conn),
    ).toEqual({ created: 1 });
    expect(await r.table('hooked').setWriteHook(stamp).run(conn)).toEqual({ replaced: 1 });
    const hook = await r.table('hooked').getWriteHook().run(conn);
    expect(Buffer.isBuffer(hook.function)).toBe(true);
    expect(hook.query).toMatch(/^setWriteHook\(/);
    // The binary sets the same hook again.
    expect(await r.table('hooked').setWriteHook(hook.function).run(conn)).toEqual({ replaced: 1 });
    await expect(
      r
        .table('hooked')
        .setWriteHook((c: Any) => c)
        .run(conn),
    ).rejects.toMatchObject({
      msg: 'Write hook functions must expect 3 arguments.',
    });
    await expect(
      r
        .table('hooked')
        .setWriteHook((_c: Any, _o: Any, _n: Any) => r.js('1'))
        .run(conn),
    ).rejects.toMatchObject({
      msg: 'Could not prove function deterministic.  Write hook functions must be deterministic.',
    });
    await expect(
      r
        .table('hooked')
        .setWriteHook(r.binary(Buffer.from('nope')))
        .run(conn),
    ).rejects.toMatchObject({
      msg: 'Cannot create a write hook except from a reql_write_hook_function returned from `get_write_hook`.',
    });
  });

  it('applies to every driver-port write: single insert, batch insert, generated keys, update, replace, conflict', async () => {
    // The single-document insert (the compiler's fast path otherwise) and a batch.
    await r.table('hooked').insert({ id: 'a', v: 1 }).run(conn);
    await r
      .table('hooked')
      .insert([{ id: 'b', v: 2 }, { v: 3 }])
      .run(conn);
    let all = await rows(r.table('hooked'), conn);
    expect(all).toHaveLength(3);
    for (const doc of all) expect(doc).toMatchObject({ hooked: true, had: false, at: 'PTYPE<TIME>', key: doc.id });
    await r.table('hooked').get('a').update({ v: 10 }).run(conn);
    await r.table('hooked').get('b').replace({ id: 'b', v: 20 }).run(conn);
    await r.table('hooked').insert({ id: 'a', w: 1 }, { conflict: 'update' }).run(conn);
    all = await rows(r.table('hooked').getAll('a', 'b'), conn);
    expect(all).toEqual([
      { id: 'a', v: 10, w: 1, hooked: true, had: true, key: 'a', at: 'PTYPE<TIME>' },
      { id: 'b', v: 20, hooked: true, had: true, key: 'b', at: 'PTYPE<TIME>' },
    ]);
    // ignoreWriteHook writes as given.
    await r.table('hooked').insert({ id: 'c' }, { ignoreWriteHook: true }).run(conn);
    expect(await r.table('hooked').get('c').run(conn)).toEqual({ id: 'c' });
  });

  it('the bulk insert frame (insert(r.json(r.binary(…).coerceTo("string")))) applies it too', async () => {
    const { text, docs } = makeBlock(80 * 1024);
    const res = await r
      .table('hooked')
      .insert(r.json(r.binary(Buffer.from(text)).coerceTo('string')))
      .run(conn);
    expect(res.inserted).toBe(docs);
    expect(await r.table('hooked').filter({ kind: 'block', hooked: true }).count().run(conn)).toBe(docs);
  });

  it("its errors fail the row with RethinkDB's texts; deletes see (old, null)", async () => {
    await r.tableCreate('hook_errors').run(conn);
    await r
      .table('hook_errors')
      .insert([{ id: 1 }, { id: 2 }])
      .run(conn);
    await r
      .table('hook_errors')
      .setWriteHook((_c: Any, _o: Any, n: Any) => n)
      .run(conn);
    expect(await r.table('hook_errors').get(1).delete().run(conn)).toMatchObject({ deleted: 1 });
    await r
      .table('hook_errors')
      .setWriteHook((_c: Any, _o: Any, _n: Any) => ({}))
      .run(conn);
    expect(await r.table('hook_errors').delete().run(conn)).toMatchObject({
      deleted: 0,
      errors: 1,
      first_error: 'A write hook function must not turn a deletion into a replace/insert.',
    });
    await r
      .table('hook_errors')
      .setWriteHook((_c: Any, _o: Any, _n: Any) => null)
      .run(conn);
    expect(await r.table('hook_errors').insert({ id: 3 }).run(conn)).toMatchObject({
      inserted: 0,
      errors: 1,
      first_error: 'A write hook function must not turn a replace/insert into a deletion.',
    });
    await r
      .table('hook_errors')
      .setWriteHook((_c: Any, _o: Any, _n: Any) => r.error('OH NOES!'))
      .run(conn);
    expect(await r.table('hook_errors').get(2).update({ x: 1 }).run(conn)).toMatchObject({
      replaced: 0,
      errors: 1,
      first_error: 'Error in write hook: OH NOES!',
    });
    expect(await r.table('hook_errors').setWriteHook(null).run(conn)).toEqual({ deleted: 1 });
    expect(await r.table('hook_errors').insert({ id: 3 }).run(conn)).toMatchObject({ inserted: 1 });
  });

  it('the HTTP API writes documents as sent (hooks apply to the driver port only)', async () => {
    const res = await fetch(`${server().url}/api/tables/hooked/documents`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'http' }),
    });
    expect(res.status).toBe(200);
    expect(await r.table('hooked').get('http').run(conn)).toEqual({ id: 'http' });
  });

  it('a hook keeps the values of the variables it captures (it outlives the query that set it)', async () => {
    await r.tableCreate('hook_captures').run(conn);
    await r
      .expr({ tag: 'outer' })
      .do((x: Any) => r.table('hook_captures').setWriteHook((_c: Any, _o: Any, n: Any) => n.merge(x)))
      .run(conn);
    await r.table('hook_captures').insert({ id: 1 }).run(conn);
    expect(await r.table('hook_captures').get(1).run(conn)).toEqual({ id: 1, tag: 'outer' });
  });

  it('dropping the table drops its hook', async () => {
    await r.tableCreate('hook_dropped').run(conn);
    await r
      .table('hook_dropped')
      .setWriteHook((_c: Any, _o: Any, n: Any) => n.merge({ h: 1 }))
      .run(conn);
    await r.tableDrop('hook_dropped').run(conn);
    await r.tableCreate('hook_dropped').run(conn);
    expect(await r.table('hook_dropped').getWriteHook().run(conn)).toBeNull();
    await r.table('hook_dropped').insert({ id: 1 }).run(conn);
    expect(await r.table('hook_dropped').get(1).run(conn)).toEqual({ id: 1 });
  });
});

describe('write hooks across a restart', () => {
  it('a hook set before a restart still applies after it (and getWriteHook shows it)', async () => {
    const dataDir = makeTempDir();
    try {
      let server = await spawnServer({ dataDir });
      let conn = await r.connect({ host: '127.0.0.1', port: server.driver.port });
      await r.tableCreate('durable_hook').run(conn);
      await r
        .table('durable_hook')
        .setWriteHook((_c: Any, _o: Any, n: Any) => n.merge({ hooked: 1 }))
        .run(conn);
      await conn.close();
      expect(await server.stop('SIGTERM')).toBe(0);

      server = await spawnServer({ dataDir });
      conn = await r.connect({ host: '127.0.0.1', port: server.driver.port });
      try {
        expect(await r.table('durable_hook').getWriteHook().run(conn)).not.toBeNull();
        await r.table('durable_hook').insert({ id: 1 }).run(conn);
        await r.table('durable_hook').insert({ id: 2 }).run(conn);
        expect(await rows(r.table('durable_hook'), conn)).toEqual([
          { id: 1, hooked: 1 },
          { id: 2, hooked: 1 },
        ]);
        // Hidden from ReQL: only the user's table is listed.
        expect(await r.tableList().run(conn)).toEqual(['durable_hook']);
      } finally {
        await conn.close();
        await server.stop('SIGKILL');
      }
    } finally {
      removeDir(dataDir);
    }
  });
});
