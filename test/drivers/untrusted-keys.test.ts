/**
 * User data never meets JS prototypes, and nothing nests without bound: the official `rethinkdb`
 * driver against a real server process. Field names such as `constructor`, `toString`,
 * `hasOwnProperty` and `__proto__` are keys like any other (the answers are those of RethinkDB
 * 2.4.4 for the same queries), and a term or datum nested past the documented limits gets a clean
 * ReQL error naming the limit while the connection keeps serving.
 *
 * The driver itself drops `__proto__` from JS object literals (it copies keys by assignment), so
 * such keys are sent here through `r.json` and `r.object`, as a client would from JSON text.
 */

import rethinkdb from 'rethinkdb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeDir, type SpawnedServer, spawnServer } from '../helpers/spawn-server.js';

type Any = any;
const r: Any = rethinkdb;

const PROTOTYPE_NAMES = [
  'constructor',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '__proto__',
  '__defineGetter__',
  'isPrototypeOf',
];

/** JSON text with an array or object nested `levels` deep around 1. */
function nestedJson(levels: number, open = '[', close = ']'): string {
  return `${open.repeat(levels)}1${close.repeat(levels)}`;
}

/** JSON text of objects `{"a":{"a":…1}}` nested `levels` deep. */
function nestedObjectJson(levels: number): string {
  return nestedJson(levels, '{"a":', '}');
}

describe('official driver: prototype-named keys and nesting limits', () => {
  let server: SpawnedServer;
  let conn: Any;

  beforeAll(async () => {
    server = await spawnServer();
    conn = await r.connect({ host: server.driver.host, port: server.driver.port });
    await r.tableCreate('proto').run(conn);
  });

  afterAll(async () => {
    await conn?.close({ noreplyWait: false }).catch(() => {});
    await server?.stop('SIGKILL');
    if (server) removeDir(server.dataDir);
  });

  /** Every row of a query's answer (an array, or a cursor read to its end). */
  async function all(query: Any): Promise<unknown[]> {
    const v = await query.run(conn);
    return Array.isArray(v) ? [...v] : v.toArray();
  }

  /** The driver's error for a query that must fail (an answer fails the test, not caught here). */
  async function failure(query: Any): Promise<{ name: string; msg: string }> {
    let answer: unknown;
    try {
      answer = await query.run(conn);
    } catch (err) {
      const e = err as { name: string; msg?: string; message: string };
      return { name: e.name, msg: e.msg ?? e.message };
    }
    throw new Error(`expected an error, got ${JSON.stringify(answer)}`);
  }

  it('answers a missing prototype-named field with NON_EXISTENCE, as RethinkDB does (the driver used to die on `[undefined]`)', async () => {
    for (const name of PROTOTYPE_NAMES) {
      const err = await failure(r.expr({ a: 1 })(name));
      expect(err.name).toBe('ReqlNonExistenceError');
      expect(err.msg).toMatch(
        new RegExp(`^No attribute \`${name.replace(/\$/g, '\\$')}\` in object:\n\\{\n\t"a":\\s1\n\\}$`),
      );
      expect(await r.expr({ a: 1 })(name).default('d').run(conn)).toBe('d');
      expect(await r.expr({ a: 1 }).getField(name).default(null).run(conn)).toBe(null);
      expect(await r.expr({ a: 1 }).hasFields(name).run(conn)).toBe(false);
      expect(
        await r
          .expr([{ a: 1 }, { b: 2 }])(name)
          .run(conn),
      ).toEqual([]);
    }
    // The connection still serves.
    expect(await r.expr({ a: 1 })('a').run(conn)).toBe(1);
  });

  it('reads, tests, plucks, removes and lists prototype-named keys that a document has', async () => {
    const text = '{"__proto__":{"x":1},"constructor":"c","toString":2,"a":1}';
    expect(JSON.stringify(await r.json(text)('__proto__').run(conn))).toBe('{"x":1}');
    expect(await r.json(text)('constructor').run(conn)).toBe('c');
    expect(await r.json(text)('toString').run(conn)).toBe(2);
    expect(await r.json(text).hasFields('__proto__', 'constructor', 'toString').run(conn)).toBe(true);
    expect(await r.json(text).keys().run(conn)).toEqual(['__proto__', 'a', 'constructor', 'toString']);
    expect(JSON.stringify(await r.json(text).pluck('__proto__', 'hasOwnProperty').run(conn))).toBe(
      '{"__proto__":{"x":1}}',
    );
    expect(JSON.stringify(await r.json(text).without('__proto__', 'toString').run(conn))).toBe(
      '{"constructor":"c","a":1}',
    );
    expect(await r.json(text).count().run(conn)).toBe(4);
  });

  it('merges `__proto__` as a field (it used to vanish)', async () => {
    const merged = await r.expr({ a: 1 }).merge(r.json('{"__proto__":{"y":2}}')).run(conn);
    expect(JSON.stringify(merged)).toBe('{"a":1,"__proto__":{"y":2}}');
    const deep = await r.json('{"__proto__":{"x":1}}').merge(r.json('{"__proto__":{"y":2}}')).run(conn);
    expect(JSON.stringify(deep)).toBe('{"__proto__":{"x":1,"y":2}}');
    const built = await r.object('__proto__', r.expr({ q: 1 }).merge({ t: r.expr(2) }), 'id', 7).run(conn);
    expect(JSON.stringify(built)).toBe('{"__proto__":{"q":1,"t":2},"id":7}');
  });

  it('writes documents with prototype-named keys exactly (insert, update, replace; they used to fail with `must be an OBJECT (got OBJECT)`)', async () => {
    const t = r.table('proto');
    expect(
      await t.insert(r.json('{"id":1,"__proto__":{"x":1},"constructor":"c","toString":2}')).run(conn),
    ).toMatchObject({ inserted: 1, errors: 0 });
    expect(JSON.stringify(await t.get(1).run(conn))).toBe(
      '{"id":1,"__proto__":{"x":1},"constructor":"c","toString":2}',
    );
    expect(JSON.stringify(await t.get(1)('__proto__').run(conn))).toBe('{"x":1}');

    expect(await t.get(1).update(r.json('{"__proto__":{"z":3}}')).run(conn)).toMatchObject({ replaced: 1, errors: 0 });
    expect(JSON.stringify(await t.get(1)('__proto__').run(conn))).toBe('{"x":1,"z":3}');
    const viaFunction = await t
      .get(1)
      .update((d: Any) => r.object('__proto__', d('__proto__').merge({ w: 4 })))
      .run(conn);
    expect(viaFunction).toMatchObject({ replaced: 1, errors: 0 });
    expect(JSON.stringify(await t.get(1)('__proto__').run(conn))).toBe('{"x":1,"z":3,"w":4}');

    expect(
      await t.insert(r.object('id', 2, '__proto__', r.expr({ q: 1 }).merge({ t: r.expr(2) }))).run(conn),
    ).toMatchObject({ inserted: 1, errors: 0 });
    expect(JSON.stringify(await t.get(2).run(conn))).toBe('{"id":2,"__proto__":{"q":1,"t":2}}');
    expect(
      await t
        .get(2)
        .replace((d: Any) => d.without('__proto__').merge(r.object('__proto__', 5)))
        .run(conn),
    ).toMatchObject({ replaced: 1, errors: 0 });
    expect(JSON.stringify(await t.get(2).run(conn))).toBe('{"id":2,"__proto__":5}');

    const changed = await t.insert(r.json('{"__proto__":[1],"n":3}'), { returnChanges: true }).run(conn);
    expect(changed).toMatchObject({ inserted: 1, errors: 0 });
    expect(changed.changes[0].new_val.n).toBe(3);
    expect(Object.keys(changed.changes[0].new_val).sort()).toEqual(['__proto__', 'id', 'n']);

    // Field reads over streams and filters see only own keys.
    expect(await all(t.orderBy('id')('constructor'))).toEqual(['c']);
    expect(await all(t('constructor'))).toEqual(['c']);
    expect(await all(t.filter({ constructor: 'c' })('id'))).toEqual([1]);
    expect(await all(t.filter(r.row.hasFields('toString'))('id'))).toEqual([1]);
    // The stored documents, read back over HTTP, are exactly what was written.
    const page = await (await fetch(`${server.url}/api/tables/proto/documents?limit=10`)).text();
    expect(page).toContain('{"id":1,"__proto__":{"x":1,"z":3,"w":4},"constructor":"c","toString":2}');
  });

  it('takes a prototype-named primary key like any other', async () => {
    await r.tableCreate('pkproto', { primaryKey: 'constructor' }).run(conn);
    const res = await r
      .table('pkproto')
      .insert([{ a: 1 }, { constructor: 'k', a: 2 }])
      .run(conn);
    expect(res).toMatchObject({ inserted: 2, errors: 0 });
    expect(res.generated_keys).toHaveLength(1);
    expect(await r.table('pkproto').get('k')('a').run(conn)).toBe(2);
    expect(await r.table('pkproto').get(res.generated_keys[0])('a').run(conn)).toBe(1);
    expect(await r.table('pkproto').count().run(conn)).toBe(2);
  });

  it('refuses r.json text nested past 128 levels with an error naming the limit, and serves on', async () => {
    expect(await r.json(nestedJson(128)).typeOf().run(conn)).toBe('ARRAY');
    for (const text of [nestedJson(129), nestedJson(10_000), nestedObjectJson(10_000)]) {
      const err = await failure(r.json(text));
      expect(err.name).toBe('ReqlResourceLimitError');
      expect(err.msg).toBe(
        'The JSON text given to r.json is nested deeper than the limit of 128 levels of objects and arrays (MAX_DOCUMENT_DEPTH).',
      );
    }
    expect(await r.expr(1).add(1).run(conn)).toBe(2);
  });

  it('refuses a datum nested past 128 levels in the query itself (objects, arrays as terms, raw datums)', async () => {
    let deepObject: Any = 1;
    for (let i = 0; i < 200; i++) deepObject = { a: deepObject };
    let deepArray: Any = 1;
    for (let i = 0; i < 200; i++) deepArray = [deepArray];
    for (const q of [
      r.expr(deepObject, 1000),
      r.expr(deepArray, 1000),
      r.table('proto').insert(r.expr(deepObject, 1000)),
    ]) {
      const err = await failure(q);
      expect(err.name).toBe('ReqlServerCompileError');
      expect(err.msg).toMatch(
        /^A datum in the query is nested deeper than the limit of 128 levels of objects and arrays \(MAX_DOCUMENT_DEPTH\)\./,
      );
    }
    let ok: Any = 1;
    for (let i = 0; i < 128; i++) ok = { a: ok };
    expect(await r.expr(ok, 1000).typeOf().run(conn)).toBe('OBJECT');
    expect(await r.table('proto').count().run(conn)).toBe(3);
  });

  it('refuses a document built past 128 levels at run time before writing it', async () => {
    let doc: Any = r.expr(1);
    for (let i = 0; i < 130; i++) doc = r.object('a', doc);
    const err = await failure(r.table('proto').insert(r.object('id', 'deep', 'd', doc)));
    expect(err.name).toBe('ReqlResourceLimitError');
    expect(err.msg).toBe(
      'A document to insert is nested deeper than the limit of 128 levels of objects and arrays (MAX_DOCUMENT_DEPTH).',
    );
    expect(await r.table('proto').get('deep').run(conn)).toBe(null);
  });

  it('refuses a query whose terms nest past 256 levels, and serves on', async () => {
    let sum: Any = r.expr(0);
    for (let i = 0; i < 256; i++) sum = sum.add(1);
    expect(await sum.run(conn)).toBe(256);
    // (The driver cannot build much deeper terms itself; the property tests send 10,000 levels raw.)
    for (const depth of [257, 2000]) {
      let tooDeep: Any = r.expr(0);
      for (let i = 0; i < depth; i++) tooDeep = tooDeep.add(1);
      const err = await failure(tooDeep);
      expect(err.name).toBe('ReqlServerCompileError');
      expect(err.msg).toBe('Query is nested deeper than the limit of 256 levels of terms (MAX_TERM_DEPTH).');
    }
    expect(await r.table('proto').count().run(conn)).toBe(3);
  });
});
