/**
 * soft resolves when a write is visible; hard and sync() resolve when it is durable. "Durable" is
 * read from the engine's own watermarks (appliedSeq: newest visible group, durableSeq: newest
 * group known on disk after its fdatasync).
 */
import { setImmediate, setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { ANSWER_FIELDS, ANSWER_OFFSET, ANSWER_SLOTS, binding, CONFLICT_CODE, DURABILITY_CODE, POLLING_WORD, SEALED_WORD } from '../src/binding.ts';
import { Database } from '../src/index.ts';
import { openTemp, tempDir, withDb } from './helpers.ts';
import { until } from '../../../test/helpers/until.ts';

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
  /** Sequential hard inserts; returns the event loop's idle and active time meanwhile (ms). */
  async function loopWhileInserting(spinWaitUs: number) {
    const { db } = await openTemp({ ...NO_BACKGROUND_FLUSH, spinWaitUs });
    await db.createTable('t');
    const t = db.table('t');
    const before = performance.eventLoopUtilization();
    for (let i = 0; i < 100; i++) await t.insert({ id: i });
    const during = performance.eventLoopUtilization(before);
    await db.sync();
    const quiet = performance.eventLoopUtilization();
    await sleep(50);
    const after = performance.eventLoopUtilization(quiet);
    expect(await t.count()).toBe(100);
    return { during, after };
  }

  it('a lone hard writer keeps the event loop polling instead of sleeping, and the poll stops once answered', async () => {
    // 1 s: longer than any fdatasync here, so the poll covers every wait.
    const polling = await loopWhileInserting(1_000_000);
    // Polling: the loop never blocks while a write waits (idle only in zero-timeout polls).
    expect(polling.during.utilization).toBeGreaterThan(0.95);
    // Answered: the loop sleeps through the 50 ms that follow, though the poll's deadline is 1 s away.
    expect(polling.after.utilization).toBeLessThan(0.5);
    const sleeping = await loopWhileInserting(0);
    expect(sleeping.during.idle).toBeGreaterThan(polling.during.idle);
  });

  /** Busy-waits (the event loop blocked on purpose) until `done`, for at most 10 s. */
  function spinUntil(done: () => boolean): void {
    const deadline = performance.now() + 10_000;
    while (!done() && performance.now() < deadline);
    expect(done()).toBe(true);
  }

  it('seals answers in memory shared with JS, and rings the doorbell once for them unless JS polls', async () => {
    let rings = 0;
    const native = await binding().NativeDatabase.open(await tempDir(), { segmentSize: 1 << 20 }, () => void rings++);
    const memory = native.sharedMemory();
    expect(() => native.sharedMemory()).toThrow(/exposed already/);
    const words = new Int32Array(memory, 0, ANSWER_OFFSET / 4);
    const slots = new Float64Array(memory, ANSWER_OFFSET, ANSWER_SLOTS * ANSWER_FIELDS);
    const sealed = () => Atomics.load(words, SEALED_WORD);
    const ids = (n: number) => Array.from({ length: n }, (_, i) => slots[i * ANSWER_FIELDS]);
    try {
      native.createTable(7, 't', 'id');
      native.sync(8);
      native.sync(9);
      // The loop is blocked: the answers can be sealed, not delivered, and the doorbell not run.
      spinUntil(() => sealed() === 3);
      expect(rings).toBe(0);
      await setImmediate(); // after the loop's poll phase, which runs the doorbell
      expect(rings).toBe(1); // once for the three, in however many groups
      expect(native.deliverAnswers()).toBe(3);
      expect(ids(3)).toEqual([7, 8, 9]);
      expect(native.deliverAnswers()).toBe(0);

      // While JS polls, sealing rings nothing.
      Atomics.store(words, POLLING_WORD, 1);
      native.sync(10);
      spinUntil(() => sealed() === 4);
      await setImmediate();
      await setImmediate();
      expect(rings).toBe(1);
      expect(native.deliverAnswers()).toBe(1);
      expect(ids(1)).toEqual([10]);
      Atomics.store(words, POLLING_WORD, 0);

      // A failure's code and message are its details.
      native.createTable(11, 't', 'id');
      spinUntil(() => sealed() === 5);
      await setImmediate();
      expect(rings).toBe(2);
      expect(native.deliverAnswers()).toBe(1);
      expect([slots[0], slots[7]]).toEqual([11, 0]);
      expect(native.answerDetails()).toEqual(['WHARF_ERR_TABLE_EXISTS', 'table `t` already exists']);

      // More answers than slots: taken in turns, in order.
      for (let id = 100; id < 700; id++) native.sync(id);
      spinUntil(() => sealed() === 605);
      expect(native.deliverAnswers()).toBe(ANSWER_SLOTS);
      expect(slots[0]).toBe(100);
      expect(native.deliverAnswers()).toBe(600 - ANSWER_SLOTS);
      expect(ids(600 - ANSWER_SLOTS)).toEqual(Array.from({ length: 600 - ANSWER_SLOTS }, (_, i) => 100 + ANSWER_SLOTS + i));
    } finally {
      await native.close();
    }
  });

  it("seals a group's answers once all of them are sent, so a poll takes the group whole", async () => {
    const native = await binding().NativeDatabase.open(await tempDir(), { segmentSize: 4 << 20 }, () => {});
    const words = new Int32Array(native.sharedMemory(), 0, ANSWER_OFFSET / 4);
    // Groups with durable answers: each adds one commit latency (a group of syncs only, with
    // nothing to fdatasync, adds no fdatasync).
    const durableGroups = (): number => (JSON.parse(native.stats()).commit_latency_histogram_us as number[]).reduce((a, b) => a + b, 0);
    const syncs = 32;
    let delivered = 0;
    const partial: { seen: number[]; groups: number }[] = [];
    try {
      native.createTable(0, 't', 'id');
      spinUntil(() => Atomics.load(words, SEALED_WORD) === 1);
      delivered += native.deliverAnswers();
      // Over 64 KiB: parsed on the pool, so the syncs made after it wait for it in the binding's
      // sequencer and reach the engine right behind it, a group or two answered one by one.
      const batch = (round: number) => Array.from({ length: 1200 }, (_, i) => JSON.stringify({ id: `${round}-${i}`, pad: 'x'.repeat(48) })).join('\n');
      for (let round = 0; round < 10; round++) {
        const big = batch(round);
        const before = durableGroups();
        void native.insert(10_000 + round, 't', big, 0, DURABILITY_CODE.hard, CONFLICT_CODE.error, false);
        for (let i = 0; i < syncs; i++) native.sync(1 + i);
        // Every sealed count the poll sees (a load every few ns), until the round's are sealed.
        const seen: number[] = [];
        spinUntil(() => {
          const n = Atomics.load(words, SEALED_WORD) - delivered;
          if (n > 0 && seen.at(-1) !== n) seen.push(n);
          return n === syncs + 1;
        });
        delivered += native.deliverAnswers();
        // The poll sees each group's answers at once, or it would have seen counts in between
        // (sealed one by one, it saw most of the 33).
        const groups = durableGroups() - before;
        if (seen.length > groups) partial.push({ seen, groups });
      }
      expect(partial).toEqual([]);
    } finally {
      await native.close();
    }
  });
});
