import { describe, expect, it } from 'vitest';
import { openTemp, openTempTable, rejection, withDb } from './helpers.ts';

interface Person {
  id: number;
  city?: string;
  tags: string[];
  age: number;
}

function person(id: number): Person {
  const p: Person = { id, tags: ['x', 'y', 'z'].filter((_, i) => (id >> i) % 2 === 1), age: id % 40 };
  if (id % 9 !== 0) p.city = ['Oslo', 'Lima', 'Pune'][id % 3];
  return p;
}

const ids = (docs: { id: number }[]) => docs.map((d) => d.id).sort((a, b) => a - b);

describe('secondary indexes', () => {
  it('answer getAll and between as a full scan would, while and after writes', async () => {
    const { db, dir } = await openTemp();
    await db.createTable('people');
    const people = db.table<Person>('people');
    await people.insert(
      Array.from({ length: 3000 }, (_, i) => person(i)),
      { durability: 'soft' },
    );
    await people.createIndex('city', 'city');
    await people.createIndex('tags', 'tags', { multi: true });
    await people.createIndex('age', 'age');
    // Writes during the build: replaces and deletes.
    await people.insert(
      Array.from({ length: 500 }, (_, i) => ({ ...person(i * 5), age: 99 })),
      { conflict: 'replace', durability: 'soft' },
    );
    await people.delete(
      Array.from({ length: 200 }, (_, i) => i * 7),
      { durability: 'soft' },
    );

    const all = await people.scan();
    expect(ids(await people.getAll('city', ['Oslo', 'Pune']))).toEqual(
      ids(all.filter((p) => p.city === 'Oslo' || p.city === 'Pune')),
    );
    expect(ids(await people.getAll('tags', ['y']))).toEqual(ids(all.filter((p) => p.tags.includes('y'))));
    expect(ids(await people.between('age', 10, 20, { rightBound: 'closed' }))).toEqual(
      ids(all.filter((p) => p.age >= 10 && p.age <= 20)),
    );
    const oldest = await people.between('age', 30, null, { leftBound: 'open', reverse: true, limit: 5 });
    expect(oldest.map((p) => p.age)).toEqual(
      all
        .map((p) => p.age)
        .filter((a) => a > 30)
        .sort((a, b) => b - a)
        .slice(0, 5),
    );

    const listed = await people.indexWait();
    expect(listed.map((i) => [i.name, i.field, i.multi, i.ready, i.indexed])).toEqual([
      ['city', 'city', false, true, all.length],
      ['tags', 'tags', true, true, all.length],
      ['age', 'age', false, true, all.length],
    ]);
    await db.close();

    // A clean close keeps them built.
    await withDb(dir, async (again) => {
      expect((await again.table('people').listIndexes()).every((i) => i.ready)).toBe(true);
      expect(ids(await again.table<Person>('people').getAll('city', ['Lima'], { fresh: false }))).toEqual(
        ids(all.filter((p) => p.city === 'Lima')),
      );
    });
  });

  it('a write that waits for indexes is in them when it resolves', async () => {
    const { db, t } = await openTempTable();
    await t.createIndex('email', 'contact.email');
    await t.indexWait(['email']);
    for (let i = 0; i < 50; i++) {
      await t.insert({ id: i, contact: { email: `u${i}@x` } }, { waitForIndexes: true, durability: 'soft' });
      expect(await t.getAll('email', [`u${i}@x`], { fresh: false })).toHaveLength(1);
    }
    await db.close();
  });

  it('reports unknown, duplicate and bad indexes clearly', async () => {
    const { db, t } = await openTempTable();
    await t.createIndex('a', 'a');
    expect(await rejection(t.createIndex('a', 'b'))).toMatchObject({
      code: 'WHARF_ERR_INDEX_EXISTS',
      message: expect.stringContaining('`a`'),
    });
    expect(await rejection(t.getAll('nope', [1]))).toMatchObject({
      code: 'WHARF_ERR_INDEX_NOT_FOUND',
      message: expect.stringContaining('`nope`'),
    });
    expect(await rejection(t.createIndex('b', 'a..b'))).toMatchObject({ code: 'WHARF_ERR_INVALID_ARGUMENT' });
    expect(await rejection(t.getAll('a', [{}] as never))).toMatchObject({
      code: 'WHARF_ERR_INVALID_ARGUMENT',
      message: expect.stringContaining('values[0]'),
    });
    await t.dropIndex('a');
    expect(await t.listIndexes()).toEqual([]);
    await db.close();
  });
});
