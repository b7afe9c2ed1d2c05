/**
 * Primary keys beyond strings and numbers (RethinkDB's arrays, booleans, times and binary): they
 * are stored, read, ranged over and deleted like any key, in RethinkDB's order of values, from
 * the memtable and from run files alike.
 */
import { describe, expect, it } from 'vitest';
import { Database } from '../src/index.ts';
import { tempDir, withDb } from './helpers.ts';

const time = (epoch_time: number, timezone = '+00:00') => ({ $reql_type$: 'TIME', epoch_time, timezone });
const binary = (data: string) => ({ $reql_type$: 'BINARY', data });

// RethinkDB's order: arrays < booleans < numbers < binary < times < strings.
const ORDERED_IDS = [
  [],
  [1],
  [1, 'a'],
  [1, 'b'],
  [2],
  ['a'],
  false,
  true,
  -5,
  0,
  7.5,
  binary('AA=='),
  binary('/w=='),
  time(-100, '-07:00'),
  time(1375445163.087, '+06:00'),
  '',
  'a',
];

describe('datum primary keys', () => {
  it('orders arrays, booleans, numbers, binary, times and strings as RethinkDB does, before and after a reopen', async () => {
    const dir = await tempDir();
    const db = await Database.open(dir);
    await db.createTable('t');
    const t = db.table('t');
    const shuffled = [...ORDERED_IDS].reverse().map((id, i) => ({ id, i }));
    expect(await t.insert(shuffled)).toMatchObject({ inserted: ORDERED_IDS.length, errors: 0 });
    const check = async (table: typeof t) => {
      expect((await table.scan()).map((d) => (d as { id: unknown }).id)).toEqual(ORDERED_IDS);
      expect(await table.get([1, 'a'])).toMatchObject({ id: [1, 'a'] });
      expect(await table.get(true)).toMatchObject({ id: true });
      // A time key is its instant: another timezone finds the same document.
      expect(await table.get(time(1375445163.087, 'Z'))).toMatchObject({ id: time(1375445163.087, '+06:00') });
      expect(await table.get(binary('/w=='))).toMatchObject({ id: binary('/w==') });
      expect(await table.getMany([[2], false, [3]])).toMatchObject([{ id: [2] }, { id: false }, null]);
      // Ranges mix types in key order.
      const between = await table.scan({ gte: [1, 'b'], lt: 0 });
      expect(between.map((d) => (d as { id: unknown }).id)).toEqual([[1, 'b'], [2], ['a'], false, true, -5]);
      const times = await table.scan({ gt: time(-100), lte: time(1375445163.087) });
      expect(times.map((d) => (d as { id: unknown }).id)).toEqual([time(1375445163.087, '+06:00')]);
    };
    await check(t);
    // A second time key with the same instant is a duplicate.
    const dup = await t.insert({ id: time(1375445163.087, '-01:00') });
    expect(dup).toMatchObject({ inserted: 0, errors: 1 });
    expect(dup.first_error).toMatch(/^Duplicate primary key `id`/);
    await db.close();

    await withDb(dir, async (again) => {
      expect(again.stats().runs).toBeGreaterThan(0);
      await check(again.table('t'));
      expect(await again.table('t').delete([[1, 'a'], true, binary('AA==')])).toMatchObject({ deleted: 3 });
      expect(await again.table('t').count()).toBe(ORDERED_IDS.length - 3);
    });
  });

  it('indexes documents whose keys are datums, and finds them through the index', async () => {
    const dir = await tempDir();
    await withDb(dir, async (db) => {
      await db.createTable('t');
      const t = db.table('t');
      await t.insert([
        { id: [1, 'x'], tag: 'a' },
        { id: time(5), tag: 'a' },
        { id: 'plain', tag: 'b' },
      ]);
      await t.createIndex('tag', 'tag');
      await t.indexWait(['tag']);
      const rows = await t.getAll('tag', ['a']);
      expect(rows.map((d) => (d as { id: unknown }).id)).toEqual(expect.arrayContaining([[1, 'x'], time(5)]));
      expect(rows).toHaveLength(2);
    });
  });
});
