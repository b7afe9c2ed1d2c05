/**
 * The term evaluator on a real engine in a temporary directory, with terms built by the official
 * driver's own AST builder (`term.build()`), so the wire shapes are the real ones.
 */

import type { Database } from '@wharf/engine';
import rethinkdb from 'rethinkdb';
import { beforeEach, describe, expect, it } from 'vitest';
import { openTemp } from '../../../test/helpers/temp-database.js';
import { ReqlError } from '../src/rethinkdb/errors.js';
import { type EvaluatorDeps, type QueryResult, runQuery } from '../src/rethinkdb/term/evaluator.js';
import { evaluatorDeps } from './evaluator-deps.js';

const r: any = rethinkdb;

let db: Database;
let deps: EvaluatorDeps;

async function run(q: { build(): unknown }, optargs: Record<string, unknown> = {}): Promise<unknown> {
  const res: QueryResult = await runQuery(deps, q.build(), optargs);
  if (res.kind === 'atom') return res.value;
  const rows: unknown[] = [];
  for (;;) {
    const n = await res.source.next();
    if (n.done) return rows;
    rows.push(n.value);
  }
}

async function kindOf(q: { build(): unknown }): Promise<string> {
  return (await runQuery(deps, q.build(), {})).kind;
}

async function failure(q: { build(): unknown }): Promise<{ type: number; errorType?: number; message: string }> {
  try {
    await run(q);
  } catch (err) {
    expect(err).toBeInstanceOf(ReqlError);
    const e = err as ReqlError;
    return {
      type: e.responseType,
      ...(e.errorType !== undefined ? { errorType: e.errorType } : {}),
      message: e.message,
    };
  }
  throw new Error('expected a ReQL error');
}

beforeEach(async () => {
  // No background flush: only a sync makes a soft write durable.
  ({ db } = await openTemp({ flushIntervalMs: 3_600_000 }));
  deps = evaluatorDeps(db);
  await run(r.tableCreate('people'));
  await run(
    r.table('people').insert([
      { id: 1, name: 'ada', age: 36, city: 'london' },
      { id: 2, name: 'bob', age: 20, city: 'paris' },
      { id: 3, name: 'cy', age: 51, city: 'london', address: { zip: 'E1' } },
      { id: 'x', name: 'xavier' },
    ]),
  );
});

describe('ReQL evaluator', () => {
  it('answers tables and selections as streams, in-memory sorts and datums as atoms', async () => {
    expect(await kindOf(r.table('people'))).toBe('stream');
    expect(await kindOf(r.table('people').filter({ city: 'london' }))).toBe('stream');
    expect(await kindOf(r.table('people').orderBy('id'))).toBe('atom');
    expect(await kindOf(r.table('people').get(1))).toBe('atom');
    expect(await run(r.table('people').get(1))).toEqual({ id: 1, name: 'ada', age: 36, city: 'london' });
    expect(await run(r.table('people').get(99))).toBeNull();
  });

  it('filters with objects, r.row, functions and and/or/not; missing fields do not match', async () => {
    const names = async (q: unknown): Promise<unknown> =>
      ((await run(q as { build(): unknown })) as { name: string }[]).map((d) => d.name);
    expect(await names(r.table('people').filter({ city: 'london' }))).toEqual(['ada', 'cy']);
    expect(await names(r.table('people').filter({ address: { zip: 'E1' } }))).toEqual(['cy']);
    expect(await names(r.table('people').filter(r.row('age').ge(36)))).toEqual(['ada', 'cy']);
    expect(await names(r.table('people').filter((p: any) => p('age').lt(30).or(p('name').eq('cy'))))).toEqual([
      'bob',
      'cy',
    ]);
    expect(await names(r.table('people').filter(r.row('city').eq('london').and(r.row('age').gt(40).not())))).toEqual([
      'ada',
    ]);
    expect(await names(r.table('people').filter(r.row('age').gt(0), { default: true }))).toEqual([
      'ada',
      'bob',
      'cy',
      'xavier',
    ]);
    expect((await failure(r.table('people').filter(r.row('age').gt(0), { default: r.error('no age') }))).message).toBe(
      'no age',
    );
  });

  it('orders by fields, functions and the primary-key index; limit, skip, count, pluck, without, bracket', async () => {
    expect(await run(r.table('people').orderBy(r.desc('age'))('name'))).toEqual(['cy', 'ada', 'bob', 'xavier']);
    expect(
      await run(
        r
          .table('people')
          .orderBy((p: any) => p('name'))
          .limit(2)('id'),
      ),
    ).toEqual([1, 2]);
    expect(
      await run(
        r
          .table('people')
          .orderBy({ index: r.desc('id') })
          .limit(2)('id'),
      ),
    ).toEqual(['x', 3]);
    expect((await failure(r.table('people').orderBy({ index: 'age' }))).message).toBe(
      'Index `age` was not found on table `test.people`.',
    );
    expect(await run(r.table('people').skip(1).limit(2)('id'))).toEqual([2, 3]);
    expect(await run(r.table('people').count())).toBe(4);
    expect(await run(r.table('people').filter({ city: 'london' }).count())).toBe(2);
    expect(await run(r.table('people').count((p: any) => p('age').gt(30).default(false)))).toBe(2);
    expect(
      await run(
        r
          .table('people')
          .get(3)
          .pluck('name', { address: ['zip'] }),
      ),
    ).toEqual({ name: 'cy', address: { zip: 'E1' } });
    expect(await run(r.table('people').get(3).without('address', 'city', 'age'))).toEqual({ id: 3, name: 'cy' });
    expect(await run(r.table('people').get(1)('name'))).toBe('ada');
    expect(await run(r.table('people').get(1).getField('age'))).toBe(36);
    expect(await run(r.table('people')('age'))).toEqual([36, 20, 51]);
    expect((await failure(r.table('people').get(1)('zip'))).errorType).toBe(3100000);
    expect(await run(r.expr([10, 20, 30]).nth(-1))).toBe(30);
  });

  it('reads key ranges with between and get_all', async () => {
    expect(await run(r.table('people').between(2, r.maxval)('id'))).toEqual([2, 3, 'x']);
    expect(await run(r.table('people').between(1, 3, { rightBound: 'closed' })('id'))).toEqual([1, 2, 3]);
    expect(await run(r.table('people').between(r.minval, 2)('id'))).toEqual([1]);
    expect(await run(r.table('people').getAll(3, 1, 42)('id'))).toEqual([3, 1]);
    expect((await failure(r.table('people').getAll('london', { index: 'city' }))).message).toBe(
      'Index `city` was not found on table `test.people`.',
    );
  });

  it('inserts with conflict modes, a conflict function and return_changes', async () => {
    expect(await run(r.table('people').insert({ id: 1, name: 'dup' }))).toMatchObject({ errors: 1, inserted: 0 });
    expect(
      await run(r.table('people').insert({ id: 1, age: 37 }, { conflict: 'update', returnChanges: true })),
    ).toEqual({
      deleted: 0,
      errors: 0,
      inserted: 0,
      replaced: 1,
      skipped: 0,
      unchanged: 0,
      changes: [
        {
          old_val: { id: 1, name: 'ada', age: 36, city: 'london' },
          new_val: { id: 1, name: 'ada', age: 37, city: 'london' },
        },
      ],
    });
    expect(
      await run(
        r
          .table('people')
          .insert({ id: 2, name: 'robert' }, { conflict: (_k: any, o: any, n: any) => o.merge({ name: n('name') }) }),
      ),
    ).toMatchObject({ replaced: 1 });
    expect(await run(r.table('people').get(2))).toEqual({ id: 2, name: 'robert', age: 20, city: 'paris' });
    const gen = (await run(r.table('people').insert({ name: 'new' }, { returnChanges: true }))) as {
      generated_keys: string[];
      changes: { new_val: { id: string } }[];
    };
    expect(gen.generated_keys).toHaveLength(1);
    expect(gen.changes[0]?.new_val.id).toBe(gen.generated_keys[0]);
    expect(await run(r.table('people').insert(r.json('[{"id":10},{"id":11}]')))).toEqual({
      deleted: 0,
      errors: 0,
      inserted: 2,
      replaced: 0,
      skipped: 0,
      unchanged: 0,
    });
    expect(await run(r.table('people').insert(r.json('{"id":12}'), { durability: 'soft' }))).toMatchObject({
      inserted: 1,
    });
    expect((await failure(r.table('people').insert(5))).message).toBe('Expected type OBJECT but found NUMBER.');
  });

  it('updates, replaces and deletes selections with the reference counters', async () => {
    expect(await run(r.table('people').filter({ city: 'london' }).update({ visited: true }))).toMatchObject({
      replaced: 2,
    });
    expect(await run(r.table('people').filter({ city: 'london' }).update({ visited: true }))).toMatchObject({
      unchanged: 2,
      replaced: 0,
    });
    expect(await run(r.table('people').get(404).update({ a: 1 }))).toMatchObject({ skipped: 1 });
    expect(await run(r.table('people').get(2).update({ id: 22 }))).toMatchObject({
      errors: 1,
      first_error: expect.stringContaining('Primary key `id` cannot be changed'),
    });
    expect(
      await run(
        r
          .table('people')
          .get(2)
          .update((p: any) => ({ age: p('age').add(1) })),
      ),
    ).toMatchObject({ replaced: 1 });
    expect(await run(r.table('people').get(2)('age'))).toBe(21);
    expect(await run(r.table('people').update((p: any) => ({ n: p('age').mul(2) })))).toMatchObject({
      replaced: 3,
      errors: 1,
    });
    expect(await run(r.table('people').get(2).replace({ id: 2, only: true }))).toMatchObject({ replaced: 1 });
    expect(await run(r.table('people').get(2))).toEqual({ id: 2, only: true });
    expect(await run(r.table('people').get(50).replace({ id: 50 }))).toMatchObject({ inserted: 1 });
    expect(await run(r.table('people').get(50).replace(null))).toMatchObject({ deleted: 1 });
    expect(await run(r.table('people').get(2).delete({ returnChanges: true }))).toMatchObject({
      deleted: 1,
      changes: [{ old_val: { id: 2, only: true }, new_val: null }],
    });
    expect(await run(r.table('people').filter({ city: 'london' }).delete())).toMatchObject({ deleted: 2 });
    expect(await run(r.table('people').count())).toBe(1);
    expect((await failure(r.expr([1]).delete())).message).toMatch(/^Expected type SELECTION but found DATUM:/);
  });

  it('counts an update argument that fails to evaluate as an error of each row, not the query', async () => {
    expect(
      await run(
        r
          .table('people')
          .get(1)
          .update({ x: r.error('a') }, { returnChanges: true }),
      ),
    ).toMatchObject({
      errors: 1,
      first_error: 'a',
      changes: [],
    });
    expect(await run(r.table('people').update({ x: r.error('b') }))).toMatchObject({ errors: 4, replaced: 0 });
    expect(await run(r.table('people').get(1))).toEqual({ id: 1, name: 'ada', age: 36, city: 'london' });
  });

  it('administers databases and tables over the engine namespace', async () => {
    expect(await run(r.dbCreate('shop'))).toMatchObject({ dbs_created: 1 });
    expect((await failure(r.dbCreate('shop'))).message).toBe('Database `shop` already exists.');
    expect(await run(r.dbList())).toEqual(['rethinkdb', 'shop', 'test']);
    expect(await run(r.db('shop').tableCreate('orders', { primaryKey: 'no' }))).toMatchObject({
      tables_created: 1,
      config_changes: [{ new_val: { db: 'shop', name: 'orders', primary_key: 'no' } }],
    });
    expect(
      db
        .listTables()
        .map((t) => t.name)
        .sort(),
    ).toEqual(['people', 'shop.orders']);
    expect(await run(r.db('shop').tableList())).toEqual(['orders']);
    expect(await run(r.tableList())).toEqual(['people']);
    expect(await run(r.table('orders'), { db: [14, ['shop']] })).toEqual([]);
    expect(await run(r.table('orders'), { db: 'shop' })).toEqual([]);
    expect((await failure(r.db('shop').tableCreate('orders'))).message).toBe('Table `shop.orders` already exists.');
    expect((await failure(r.db('nope').table('x'))).message).toBe('Database `nope` does not exist.');
    expect((await failure(r.tableCreate('bad name'))).message).toBe(
      'Table name `bad name` invalid (Use A-Z, a-z, 0-9, _ and - only).',
    );
    expect(await run(r.db('shop').table('orders').config())).toMatchObject({
      name: 'orders',
      db: 'shop',
      primary_key: 'no',
      shards: [{ primary_replica: 'wharf' }],
    });
    expect(await run(r.db('shop').wait())).toEqual({ ready: 1 });
    expect(await run(r.table('people').insert({ id: 'soft' }, { durability: 'soft' }))).toMatchObject({ inserted: 1 });
    expect(db.stats().durableSeq).toBeLessThan(db.stats().appliedSeq);
    expect(await run(r.table('people').sync())).toEqual({ synced: 1 });
    expect(db.stats().durableSeq).toBe(db.stats().appliedSeq);
    expect(await run(r.dbDrop('shop'))).toMatchObject({ dbs_dropped: 1, tables_dropped: 1 });
    expect(db.listTables().map((t) => t.name)).toEqual(['people']);
    expect(await run(r.tableDrop('people'))).toMatchObject({ tables_dropped: 1 });
  });

  it('evaluates time, uuid, json, functions and errors', async () => {
    const before = Date.now() / 1000;
    const now = (await run(r.now())) as { $reql_type$: string; epoch_time: number; timezone: string };
    const after = Date.now() / 1000;
    expect(now).toMatchObject({ $reql_type$: 'TIME', timezone: '+00:00' });
    // The clock read while the query ran, not a duration.
    expect(now.epoch_time).toBeGreaterThanOrEqual(before);
    expect(now.epoch_time).toBeLessThanOrEqual(after);
    const same = (await run(r.expr([r.now(), r.now()]))) as unknown[];
    expect(same[0]).toEqual(same[1]);
    expect(await run(r.ISO8601('2021-03-04T05:06:07.5+02:00'))).toEqual({
      $reql_type$: 'TIME',
      epoch_time: Date.UTC(2021, 2, 4, 3, 6, 7, 500) / 1000,
      timezone: '+02:00',
    });
    expect(await run(r.time(2020, 1, 2, 'Z'))).toEqual({
      $reql_type$: 'TIME',
      epoch_time: Date.UTC(2020, 0, 2) / 1000,
      timezone: '+00:00',
    });
    expect(await run(r.epochTime(10).toEpochTime())).toBe(10);
    expect(await run(r.uuid())).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // RethinkDB's documented example of a version 5 UUID (its fixed namespace, SHA-1 of the name).
    expect(await run(r.uuid('slava@example.com'))).toBe('90691cbc-b5ea-5826-ae98-951e30fc3b2d');
    expect(await run(r.json('{"a":[1,2]}'))).toEqual({ a: [1, 2] });
    expect(await run(r.do(10, 20, (x: any, y: any) => r.add(x, y)))).toBe(30);
    expect(await run(r.branch(r.expr(1).gt(2), 'a', 'b'))).toBe('b');
    expect(await run(r.expr({ a: 1 })('b').default('d'))).toBe('d');
    expect(await run(r.expr([1, 2]).typeOf())).toBe('ARRAY');
    expect(await failure(r.error('boom'))).toEqual({ type: 18, errorType: 5000000, message: 'boom' });
    expect((await failure(r.db('test'))).message).toBe(
      'Query result must be of type DATUM, GROUPED_DATA, or STREAM (got DB).',
    );
    expect((await failure(r.table('missing'))).message).toBe('Table `test.missing` does not exist.');
  });
});
