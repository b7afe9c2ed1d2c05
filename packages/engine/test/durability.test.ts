/**
 * soft resolves when a write is visible; hard and sync() resolve when it is durable. "Durable" is
 * read from the engine's own watermarks (appliedSeq: newest visible group, durableSeq: newest
 * group known on disk after its fdatasync).
 */

import { describe, expect, it } from 'vitest';
import { until } from '../../../test/helpers/until.ts';
import { Database } from '../src/index.ts';
import { openTemp, tempDir, withDb } from './helpers.ts';

// Long enough that the background flush never runs during a test, so "not yet durable" is stable.
const NO_BACKGROUND_FLUSH = { flushIntervalMs: 3_600_000 };

describe('durability', () => {
  it('a soft write is visible when it resolves, and durable only after sync()', async () => {
    const { db } = await openTemp(NO_BACKGROUND_FLUSH);
    await db.createTable('t');
    const t = db.table('t');
    const fdatasyncs = db.stats().fdatasyncs;

    expect(await t.insert({ id: 1 }, { durability: 'soft' })).toMatchObject({ inserted: 1 });
    expect(await t.get(1)).toEqual({ id: 1 });
    let stats = db.stats();
    expect(stats.durableSeq).toBeLessThan(stats.appliedSeq);
    expect(stats.fdatasyncs).toBe(fdatasyncs);

    await db.sync();
    stats = db.stats();
    expect(stats.durableSeq).toBe(stats.appliedSeq);
    expect(stats.fdatasyncs).toBe(fdatasyncs + 1);
  });

  it('a hard write is durable when it resolves', async () => {
    const { db } = await openTemp(NO_BACKGROUND_FLUSH);
    await db.createTable('t');
    const t = db.table('t');
    await t.insert({ id: 1 }, { durability: 'soft' });
    await t.insert({ id: 2 }); // hard is the default
    const stats = db.stats();
    expect(stats.durableSeq).toBe(stats.appliedSeq);
    expect(await t.getMany([1, 2])).toEqual([{ id: 1 }, { id: 2 }]);
  });

  it("the database's default durability applies, and per-write options override it", async () => {
    const { db } = await openTemp({ ...NO_BACKGROUND_FLUSH, durability: 'soft' });
    await db.createTable('t');
    const t = db.table('t');
    await t.insert({ id: 1 });
    let stats = db.stats();
    expect(stats.durableSeq).toBeLessThan(stats.appliedSeq);
    await t.delete(1, { durability: 'hard' });
    stats = db.stats();
    expect(stats.durableSeq).toBe(stats.appliedSeq);
    await t.insert({ id: 3 });
    stats = db.stats();
    expect(stats.durableSeq).toBeLessThan(stats.appliedSeq);
  });

  it('sync() covers every write acknowledged before it, across tables', async () => {
    const { db } = await openTemp(NO_BACKGROUND_FLUSH);
    await db.createTable('a');
    await db.createTable('b');
    await Promise.all([
      db.table('a').insert([{ id: 1 }, { id: 2 }], { durability: 'soft' }),
      db.table('b').insertNdjson('{"id":1}\n', { durability: 'soft' }),
      db.table('a').delete(2, { durability: 'soft' }),
    ]);
    const applied = db.stats().appliedSeq;
    await db.sync();
    expect(db.stats().durableSeq).toBeGreaterThanOrEqual(applied);
  });

  it('soft writes reach disk on their own within the flush interval', async () => {
    const { db } = await openTemp({ flushIntervalMs: 20 });
    await db.createTable('t');
    await db.table('t').insert({ id: 1 }, { durability: 'soft' });
    const applied = db.stats().appliedSeq;
    // No sync() is called: only the background flush can make the write durable.
    await until('the background flush to make the soft write durable', () => db.stats().durableSeq >= applied);
  });

  it('soft writes followed by sync() survive a reopen', async () => {
    const dir = await tempDir();
    const db = await Database.open(dir, NO_BACKGROUND_FLUSH);
    await db.createTable('t');
    const t = db.table('t');
    for (let i = 0; i < 50; i++) await t.insert({ id: i }, { durability: 'soft' });
    await db.sync();
    await db.close();
    expect(await withDb(dir, (again) => again.table('t').count())).toBe(50);
  });
});

describe('waiting for durable answers (spinWaitUs)', () => {
  /** 100 sequential hard inserts; how their answers reached JS. */
  async function answersOf(spinWaitUs: number) {
    const { db } = await openTemp({ ...NO_BACKGROUND_FLUSH, spinWaitUs });
    await db.createTable('t');
    const t = db.table('t');
    const before = db.stats();
    for (let i = 0; i < 100; i++) await t.insert({ id: i });
    const after = db.stats();
    expect(await t.count()).toBe(100);
    return {
      polled: after.answersPolled - before.answersPolled,
      onDoorbell: after.answersOnDoorbell - before.answersOnDoorbell,
    };
  }

  it('a lone hard writer polls for its answers while it waits, and is woken for them when it does not', async () => {
    // 1 s (the most allowed): longer than any fdatasync, so only a bug ends a poll before its answer is sealed.
    // (An answer sealed while the poll yields to the event loop may be taken on the doorbell
    // first: that is allowed, and all 100 going that way is not what a poll does.)
    const polling = await answersOf(1_000_000);
    expect(polling.polled + polling.onDoorbell).toBe(100);
    expect(polling.polled).toBeGreaterThan(polling.onDoorbell);
    // spinWaitUs 0: JS never polls; every answer wakes it.
    expect(await answersOf(0)).toEqual({ polled: 0, onDoorbell: 100 });
  });
});
