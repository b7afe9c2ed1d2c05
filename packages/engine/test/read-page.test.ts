import { describe, expect, it } from 'vitest';
import type { FilterSpec, PageQuery, PageResume } from '../src/index.ts';
import { openTempTable, rejection } from './helpers.ts';

interface Doc {
  id: number;
  group: number;
  n?: number | number[];
}

function doc(id: number): Doc {
  const d: Doc = { id, group: id % 5, n: (id * 37) % 100 };
  if (id % 9 === 0) delete d.n;
  if (id % 10 === 0) d.n = [1, 2];
  return d;
}

async function table() {
  const { t } = await openTempTable<Doc>();
  await t.insert(
    Array.from({ length: 1000 }, (_, i) => doc(i)),
    { durability: 'soft' },
  );
  await t.createIndex('group', 'group');
  await t.indexWait();
  return t;
}

describe('table.readPage', () => {
  it('pages through key and index ranges, resuming after each page, with a filter and counts', async () => {
    const t = await table();
    const pages = async (query: Omit<PageQuery, 'after'>) => {
      const rows: Doc[] = [];
      let counted = 0;
      let after: PageResume | null = null;
      for (let i = 0; i < 1000; i++) {
        const page = await t.readPage({ ...query, after });
        rows.push(...page.rows);
        counted += page.counted;
        if (page.after === null) return { rows, counted, pages: i + 1 };
        after = page.after;
      }
      throw new Error('the read does not end');
    };
    const all = await t.scan();
    const keys = await pages({
      ranges: [{ lower: 100, lowerClosed: false, upper: null, upperClosed: false }],
      limit: 7,
    });
    expect(keys.rows).toEqual(all.filter((d) => d.id > 100));
    expect(keys.pages).toBeGreaterThan(100);
    const byGroup = await pages({
      index: 'group',
      ranges: [
        { lower: 3, lowerClosed: true, upper: 3, upperClosed: true },
        { lower: 1, lowerClosed: true, upper: 1, upperClosed: true },
      ],
      limit: 33,
    });
    expect(byGroup.rows).toEqual(await t.getAll('group', [3, 1]));
    // n > 50, where n is a number; a missing n leaves the row out; an array sorts below numbers.
    const filter: FilterSpec = { predicate: { cmp: 'gt', path: ['n'], value: 50 } };
    const kept = all.filter((d) => typeof d.n === 'number' && d.n > 50);
    expect(
      (
        await pages({
          ranges: [{ lower: null, lowerClosed: false, upper: null, upperClosed: false }],
          limit: 10,
          filter,
        })
      ).rows,
    ).toEqual(kept);
    const counted = await pages({
      ranges: [{ lower: null, lowerClosed: false, upper: null, upperClosed: false }],
      limit: 10,
      count: true,
      filter,
    });
    expect(counted.rows).toEqual([]);
    expect(counted.counted).toBe(kept.length);
    // Deferred: with missing 'defer', rows without n come back marked for the caller.
    const page = await t.readPage({
      ranges: [{ lower: null, lowerClosed: false, upper: 20, upperClosed: true }],
      limit: 100,
      filter: { ...filter, missing: 'defer' },
    });
    expect(page.deferred.map((i) => page.rows[i]?.id)).toEqual([9, 18]); // 0 has an array n: below 50, no match
    expect(page.examined).toBe(21);
  });

  it('refuses bad queries with an error naming the part at fault', async () => {
    const t = await table();
    const range = { lower: null, lowerClosed: false, upper: null, upperClosed: false };
    const cases: [unknown, RegExp][] = [
      [{ ranges: [range], limit: 0 }, /query\.limit must be a positive integer/],
      [{ ranges: [range, range], limit: 1 }, /exactly one range of primary keys/],
      [{ ranges: [{ ...range, lower: {} }], limit: 1 }, /query\.ranges\[0\]\.lower/],
      [{ ranges: [range], limit: 1, after: [1, 2] }, /query\.after/],
      [
        { ranges: [range], limit: 1, filter: { predicate: { cmp: 'like', path: ['a'], value: 1 } } },
        /filter\.predicate\.cmp/,
      ],
      [{ ranges: [range], limit: 1, filter: { predicate: { and: [{ not: 5 }] } } }, /filter\.predicate\.and\[0\]\.not/],
      [{ ranges: [range], limit: 1, filter: { predicate: { match: [] }, missing: 'maybe' } }, /query\.filter\.missing/],
      [{ ranges: [range], limit: 1, sort: true }, /unknown option query\.sort/],
      [{ index: 'nope', ranges: [range], limit: 1 }, /index `nope` does not exist/],
    ];
    for (const [query, message] of cases) {
      const err = await rejection(t.readPage(query as PageQuery));
      expect(err.message, JSON.stringify(query)).toMatch(message);
    }
  });
});
