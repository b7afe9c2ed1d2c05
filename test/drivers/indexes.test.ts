/**
 * Secondary indexes through both official drivers (`rethinkdb` 2.4 and `rethinkdb-ts` 3.x)
 * against a real server process on 127.0.0.1: index_create (field name, r.row path, function),
 * index_wait, index_status, index_list, get_all and between with {index}, order_by({index}),
 * index_drop, function indexes (computed and compound values), index_rename, and the errors for
 * an index that exists and unknown indexes.
 */

import rethinkdb from 'rethinkdb';
import { r as rts } from 'rethinkdb-ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverForSuite } from '../helpers/server-suite.js';

type Any = any;

const suiteServer = serverForSuite();

const CITIES = ['Berlin', 'Bonn', 'Essen', 'Kiel', 'Ulm'];
const TAGS = ['a', 'b', 'c', 'd'];

function makeDocs(count: number): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, i) => {
    const doc: Record<string, unknown> = { id: i, n: (i * 7) % 23 };
    if (i % 10 !== 0) doc.address = { city: CITIES[i % CITIES.length], street: `s${i}` };
    if (i % 4 !== 0) doc.tags = TAGS.filter((_, k) => (i >> k) & 1);
    if (i % 17 === 0) delete doc.n;
    return doc;
  });
}

const ids = (docs: Any[]): number[] => [...new Set(docs.map((d: Any) => d.id as number))].sort((a, b) => a - b);
const cityOf = (d: Any): unknown => d.address?.city;

describe.each([
  ['rethinkdb', rethinkdb as Any],
  ['rethinkdb-ts', rts as Any],
])('ReQL secondary indexes through %s', (driver, r) => {
  let conn: Any;
  const table = `ix_${driver.replace('-', '_')}`;
  /** Runs a query; a cursor (the official driver's streams) is read to an array. */
  const run = async (q: Any): Promise<Any> => {
    const res = await q.run(conn);
    return res && typeof res.toArray === 'function' ? res.toArray() : res;
  };

  beforeAll(async () => {
    conn = await r.connect({ host: suiteServer().driver.host, port: suiteServer().driver.port });
    await run(r.tableCreate(table));
    const res = await run(r.table(table).insert(makeDocs(300)));
    expect(res.inserted).toBe(300);
  });

  afterAll(async () => {
    await conn?.close().catch(() => {});
  });

  it('index_create (a field name, an r.row path, a function; multi), index_wait, index_status, index_list', async () => {
    expect(await run(r.table(table).indexCreate('n'))).toEqual({ created: 1 });
    expect(await run(r.table(table).indexCreate('by_city', r.row('address')('city')))).toEqual({ created: 1 });
    expect(await run(r.table(table).indexCreate('by_tag', (d: Any) => d('tags'), { multi: true }))).toEqual({
      created: 1,
    });
    expect(await run(r.table(table).indexCreate('by_street', (d: Any) => d('address')('street')))).toEqual({
      created: 1,
    });

    const waited = await run(r.table(table).indexWait());
    expect(waited.map((s: Any) => s.index).sort()).toEqual(['by_city', 'by_street', 'by_tag', 'n']);
    for (const s of waited) {
      expect(s).toMatchObject({
        index: s.index,
        ready: true,
        multi: s.index === 'by_tag',
        geo: false,
        outdated: false,
      });
      // As RethinkDB: the function as BINARY (index_create takes it back) and the query text.
      expect(Buffer.isBuffer(s.function)).toBe(true);
      expect(typeof s.query).toBe('string');
    }

    const one = await run(r.table(table).indexWait('by_city'));
    expect(one).toMatchObject([{ index: 'by_city', ready: true, multi: false, geo: false, outdated: false }]);
    const status = await run(r.table(table).indexStatus('by_tag', 'n'));
    expect(status).toMatchObject([
      { index: 'by_tag', ready: true, multi: true, geo: false, outdated: false },
      { index: 'n', ready: true, multi: false, geo: false, outdated: false },
    ]);
    expect(await run(r.table(table).indexList())).toEqual(['by_city', 'by_street', 'by_tag', 'n']);
  });

  it('get_all and between with {index} equal a filter over a full scan; r.minval/r.maxval are unbounded', async () => {
    await run(r.table(table).indexWait());
    const all = await run(r.table(table));
    expect(all).toHaveLength(300);

    const berlin = await run(r.table(table).getAll('Berlin', { index: 'by_city' }));
    expect(ids(berlin)).toEqual(ids(all.filter((d: Any) => cityOf(d) === 'Berlin')));
    const two = await run(r.table(table).getAll('Bonn', 'Kiel', 'Nowhere', { index: 'by_city' }));
    expect(ids(two)).toEqual(ids(all.filter((d: Any) => cityOf(d) === 'Bonn' || cityOf(d) === 'Kiel')));
    const tagged = await run(r.table(table).getAll('c', { index: 'by_tag' }));
    expect(ids(tagged)).toEqual(ids(all.filter((d: Any) => Array.isArray(d.tags) && d.tags.includes('c'))));
    const byN = await run(r.table(table).getAll(5, { index: 'n' }));
    expect(ids(byN)).toEqual(ids(all.filter((d: Any) => d.n === 5)));
    expect(ids(await run(r.table(table).getAll(3, 4, { index: 'id' })))).toEqual([3, 4]);
    // A selection: further terms work on it.
    expect(await run(r.table(table).getAll('Ulm', { index: 'by_city' }).count())).toBe(
      all.filter((d: Any) => cityOf(d) === 'Ulm').length,
    );

    const cases: [Any, Any, Record<string, string>, (n: number) => boolean][] = [
      [5, 12, {}, (n) => n >= 5 && n < 12],
      [5, 12, { leftBound: 'open', rightBound: 'closed' }, (n) => n > 5 && n <= 12],
      [r.minval, 8, {}, (n) => n < 8],
      [15, r.maxval, {}, (n) => n >= 15],
      [r.minval, r.maxval, {}, () => true],
    ];
    for (const [lo, hi, bounds, pred] of cases) {
      const got = await run(r.table(table).between(lo, hi, { index: 'n', ...bounds }));
      expect(ids(got)).toEqual(ids(all.filter((d: Any) => typeof d.n === 'number' && pred(d.n))));
      const ns = got.map((d: Any) => d.n as number);
      for (let i = 1; i < ns.length; i++) expect(ns[i] >= ns[i - 1]).toBe(true);
    }
    const cities = await run(r.table(table).between('Bonn', 'Kiel', { index: 'by_city', rightBound: 'closed' }));
    expect(ids(cities)).toEqual(
      ids(
        all.filter(
          (d: Any) =>
            typeof cityOf(d) === 'string' && (cityOf(d) as string) >= 'Bonn' && (cityOf(d) as string) <= 'Kiel',
        ),
      ),
    );
    expect(await run(r.table(table).between(r.maxval, r.minval, { index: 'n' }))).toEqual([]);
  });

  it('order_by({index}) on a secondary index streams in index order, ascending or descending', async () => {
    const asc = await run(r.table(table).orderBy({ index: 'n' }));
    const desc = await run(r.table(table).orderBy({ index: r.desc('n') }));
    const withN = (await run(r.table(table))).filter((d: Any) => typeof d.n === 'number');
    expect(ids(asc)).toEqual(ids(withN));
    expect(ids(desc)).toEqual(ids(withN));
    for (let i = 1; i < asc.length; i++) expect(asc[i].n >= asc[i - 1].n).toBe(true);
    for (let i = 1; i < desc.length; i++) expect(desc[i].n <= desc[i - 1].n).toBe(true);
    const limited = await run(r.table(table).orderBy({ index: 'by_city' }).limit(3));
    expect(limited).toHaveLength(3);
    expect(limited.every((d: Any) => cityOf(d) === 'Berlin')).toBe(true);
  });

  it('writes after the build show up in get_all; index_drop removes the index', async () => {
    await run(r.table(table).insert({ id: 1000, address: { city: 'Zwickau' }, n: 99 }));
    expect(await run(r.table(table).getAll('Zwickau', { index: 'by_city' }))).toEqual([
      { id: 1000, address: { city: 'Zwickau' }, n: 99 },
    ]);
    await run(
      r
        .table(table)
        .get(1000)
        .update({ address: { city: 'Bonn' } }),
    );
    expect(await run(r.table(table).getAll('Zwickau', { index: 'by_city' }))).toEqual([]);
    await run(r.table(table).get(1000).delete());
    expect(ids(await run(r.table(table).getAll(99, { index: 'n' })))).toEqual([]);

    expect(await run(r.table(table).indexDrop('by_street'))).toEqual({ dropped: 1 });
    expect(await run(r.table(table).indexList())).toEqual(['by_city', 'by_tag', 'n']);
  });

  it('function indexes (computed, compound, with default) answer get_all, between and order_by like a scan', async () => {
    const all = await run(r.table(table));
    expect(await run(r.table(table).indexCreate('n_plus_1', r.row('n').add(1)))).toEqual({ created: 1 });
    expect(await run(r.table(table).indexCreate('n_id', (d: Any) => [d('n'), d('id')]))).toEqual({ created: 1 });
    expect(
      await run(
        r.table(table).indexCreate('city_or_none', (d: Any) => d('address').default({})('city').default('none')),
      ),
    ).toEqual({ created: 1 });
    expect(await run(r.table(table).indexList())).toEqual([
      'by_city',
      'by_tag',
      'city_or_none',
      'n',
      'n_id',
      'n_plus_1',
    ]);

    expect(ids(await run(r.table(table).getAll(6, { index: 'n_plus_1' })))).toEqual(
      ids(all.filter((d: Any) => d.n === 5)),
    );
    expect(ids(await run(r.table(table).getAll('none', { index: 'city_or_none' })))).toEqual(
      ids(all.filter((d: Any) => cityOf(d) === undefined)),
    );
    // Compound values: get_all by [n, id], between on arrays in ReQL's order.
    const first = all.find((d: Any) => typeof d.n === 'number');
    expect(await run(r.table(table).getAll([first.n, first.id], { index: 'n_id' }))).toEqual([first]);
    const lowN = await run(r.table(table).between([r.minval, r.minval], [3, r.maxval], { index: 'n_id' }));
    expect(ids(lowN)).toEqual(ids(all.filter((d: Any) => typeof d.n === 'number' && d.n <= 3)));
    const ordered = await run(r.table(table).orderBy({ index: 'n_id' }));
    const keys = ordered.map((d: Any) => [d.n, d.id]);
    const sorted = [...keys].sort((a: number[], b: number[]) => a[0] - b[0] || a[1] - b[1]);
    expect(keys).toEqual(sorted);
    // The definition survives a write to the table (it is evaluated at read time).
    await run(r.table(table).insert({ id: 2000, n: 5 }));
    expect(ids(await run(r.table(table).getAll(6, { index: 'n_plus_1' })))).toContain(2000);
    await run(r.table(table).get(2000).delete());
    expect(await run(r.table(table).indexRename('n_plus_1', 'n_next'))).toEqual({ renamed: 1 });
    for (const name of ['n_next', 'n_id', 'city_or_none'])
      expect(await run(r.table(table).indexDrop(name))).toEqual({ dropped: 1 });
    expect(await run(r.table(table).indexList())).toEqual(['by_city', 'by_tag', 'n']);
  });

  it('errors: an index that exists, unknown indexes', async () => {
    await expect(run(r.table(table).indexCreate('n'))).rejects.toThrow(/Index `n` already exists on table `test\.ix_/);
    await expect(run(r.table(table).getAll(1, { index: 'nope' }))).rejects.toThrow(
      /Index `nope` was not found on table `test\.ix_/,
    );
    await expect(run(r.table(table).between(1, 2, { index: 'nope' }))).rejects.toThrow(/Index `nope` was not found/);
    await expect(run(r.table(table).indexDrop('nope'))).rejects.toThrow(
      /Index `nope` does not exist on table `test\.ix_/,
    );
    await expect(run(r.table(table).indexStatus('nope'))).rejects.toThrow(/Index `nope` was not found/);
    await expect(run(r.table(table).indexWait('n', 'nope'))).rejects.toThrow(/Index `nope` was not found/);
    // The connection stays usable.
    expect(await run(r.table(table).indexList())).toEqual(['by_city', 'by_tag', 'n']);
  });
});
