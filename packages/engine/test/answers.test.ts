/**
 * The answer path (docs/design/write-path.md, "The binding: answers to JavaScript"): every
 * request is answered exactly once, under its own id, with its own result, whatever the mix of
 * durabilities and writers, at close and after a poison. The native tests drive the addon the
 * way `src/handle.ts` does, through the shared memory, and wait for the doorbell, not for time.
 */
import { spawnSync } from 'node:child_process';
import { setImmediate } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  ANSWER_COUNT_NAMES,
  binding,
  CONFLICT_CODE,
  DURABILITY_CODE,
  FORMAT_CODE,
  newSharedMemory,
  type SharedMemory,
} from '../src/binding.ts';
import { Database } from '../src/index.ts';
import { openTemp, rejection, tempDir } from './helpers.ts';

/** An addon database on its own shared memory; `rings` counts the doorbell's calls. */
async function openNative(segmentSize = 1 << 20) {
  const memory = newSharedMemory();
  const state = { rings: 0, wake: () => {} };
  const native = await binding().NativeDatabase.open(
    await tempDir(),
    { segmentSize },
    () => {
      state.rings++;
      state.wake();
    },
    memory.bytes,
  );
  const sealed = () => Atomics.load(memory.words, memory.layout.sealedWord);
  return { native, memory, state, sealed };
}

/** The ids of the first `n` answers in the slots. */
function answerIds(memory: SharedMemory, n: number): number[] {
  const { answerFields, answerIdField } = memory.layout;
  return Array.from({ length: n }, (_, i) => memory.slots[i * answerFields + answerIdField]!);
}

/** Busy-waits (the event loop blocked on purpose) until `done`; bounded, so a bug fails, not hangs. */
function spinUntil(done: () => boolean): void {
  for (let i = 0; i < 1e9 && !done(); i++);
  expect(done()).toBe(true);
}

describe('the shared memory', () => {
  it('is laid out once, by the addon: regions in bounds, apart and aligned, with every count of a write', () => {
    const l = binding().sharedMemoryLayout();
    expect((l.sealedWord + 1) * 4).toBeLessThanOrEqual(l.answerOffset);
    expect(l.answerOffset % 8).toBe(0);
    expect(l.answerOffset + l.answerSlots * l.answerFields * 8).toBeLessThanOrEqual(l.outboxOffset);
    expect(l.outboxOffset + l.outboxSlots * 4).toBeLessThanOrEqual(l.sharedBytes);
    const fields = [l.answerIdField, l.answerDetailsField, ...l.answerCounts.map((_, i) => l.answerCountsField + i)];
    expect(new Set(fields).size).toBe(fields.length);
    expect(fields.every((f) => f >= 0 && f < l.answerFields)).toBe(true);
    expect([...l.answerCounts].sort()).toEqual([...ANSWER_COUNT_NAMES].sort());
  });

  it('must be a whole SharedArrayBuffer of the layout size: open refuses anything else, saying what it got', async () => {
    const { sharedBytes } = binding().sharedMemoryLayout();
    const dir = await tempDir();
    const open = (memory: unknown) => binding().NativeDatabase.open(dir, {}, () => {}, memory as Uint8Array);
    expect(() => open(new Uint8Array(new ArrayBuffer(sharedBytes)))).toThrow(
      /SharedArrayBuffer.*got a plain ArrayBuffer/,
    );
    expect(() => open(new Uint8Array(new SharedArrayBuffer(sharedBytes - 8)))).toThrow(
      new RegExp(`${sharedBytes - 8} elements`),
    );
    expect(() => open(new Uint8Array(new SharedArrayBuffer(sharedBytes + 8), 8))).toThrow(/from byte 8/);
    expect(() => open(new Float64Array(new SharedArrayBuffer(sharedBytes)))).toThrow(/typed array of type/);
    expect(() => open({})).toThrow(/got no typed array/);
  });
});

describe('the addon answers', () => {
  it('seals answers in the shared memory, and rings the doorbell once for them until JS takes answers', async () => {
    const { native, memory, state, sealed } = await openNative();
    const { answerDetailsField, answerIdField, answerSlots } = memory.layout;
    try {
      native.createTable(7, 't', 'id');
      native.sync(8);
      native.sync(9);
      // The loop is blocked: the answers can be sealed, not delivered, and the doorbell not run.
      spinUntil(() => sealed() === 3);
      expect(state.rings).toBe(0);
      await setImmediate(); // after the loop's poll phase, which runs the doorbell
      expect(state.rings).toBe(1); // once for the three, in however many groups
      expect(native.deliverAnswers()).toBe(3);
      expect(answerIds(memory, 3)).toEqual([7, 8, 9]);
      expect(native.deliverAnswers()).toBe(0);

      // Until JS takes answers, more seals ring no more.
      native.sync(10);
      spinUntil(() => sealed() === 4);
      native.sync(11);
      spinUntil(() => sealed() === 5);
      await setImmediate();
      expect(state.rings).toBe(2);
      expect(native.deliverAnswers()).toBe(2);
      expect(answerIds(memory, 2)).toEqual([10, 11]);

      // A failure's code and message are its details.
      native.createTable(12, 't', 'id');
      spinUntil(() => sealed() === 6);
      await setImmediate();
      expect(state.rings).toBe(3);
      expect(native.deliverAnswers()).toBe(1);
      expect([memory.slots[answerIdField], memory.slots[answerDetailsField]]).toEqual([12, 0]);
      expect(native.answerDetails()).toEqual(['WHARF_ERR_TABLE_EXISTS', 'table `t` already exists']);

      // More answers than slots: taken in turns, in order.
      for (let id = 100; id < 700; id++) native.sync(id);
      spinUntil(() => sealed() === 606);
      expect(native.deliverAnswers()).toBe(answerSlots);
      expect(memory.slots[answerIdField]).toBe(100);
      expect(native.deliverAnswers()).toBe(600 - answerSlots);
      expect(answerIds(memory, 600 - answerSlots)).toEqual(
        Array.from({ length: 600 - answerSlots }, (_, i) => 100 + answerSlots + i),
      );
    } finally {
      await native.close();
    }
  });

  it("seals a group's answers once all of them are sent, so a poll takes the group whole", async () => {
    const { native, sealed } = await openNative(4 << 20);
    // Groups with durable answers: each adds one commit latency (a group of syncs only, with
    // nothing to fdatasync, adds no fdatasync).
    const durableGroups = (): number =>
      (JSON.parse(native.stats()).commit_latency_histogram_us as number[]).reduce((a, b) => a + b, 0);
    const syncs = 32;
    let delivered = 0;
    const partial: { seen: number[]; groups: number }[] = [];
    try {
      native.createTable(0, 't', 'id');
      spinUntil(() => sealed() === 1);
      delivered += native.deliverAnswers();
      // Over 64 KiB: parsed on the pool, so the syncs made after it wait for it in the binding's
      // sequencer and reach the engine right behind it, a group or two answered one by one.
      const batch = (round: number) =>
        Array.from({ length: 1200 }, (_, i) => JSON.stringify({ id: `${round}-${i}`, pad: 'x'.repeat(48) })).join('\n');
      for (let round = 0; round < 10; round++) {
        const big = batch(round);
        const before = durableGroups();
        void native.insert(
          10_000 + round,
          't',
          big,
          FORMAT_CODE.ndjson,
          DURABILITY_CODE.hard,
          CONFLICT_CODE.error,
          false,
        );
        for (let i = 0; i < syncs; i++) native.sync(1 + i);
        // Every sealed count the poll sees (a load every few ns), until the round's are sealed.
        const seen: number[] = [];
        spinUntil(() => {
          const n = sealed() - delivered;
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

  it('answers every request exactly once, under its own id, hard and soft, one by one and together', async () => {
    const { native, memory, state, sealed } = await openNative();
    /** Answers taken so far, by id: the `inserted` count, or the failure's code. */
    const answers = new Map<number, (number | string)[]>();
    let taken = 0;
    const inserted = memory.countField.inserted;
    const take = () => {
      for (let n = native.deliverAnswers(); n > 0; n = native.deliverAnswers()) {
        const details = native.answerDetails();
        for (let i = 0; i < n; i++) {
          const slot = i * memory.layout.answerFields;
          const id = memory.slots[slot + memory.layout.answerIdField]!;
          const d = memory.slots[slot + memory.layout.answerDetailsField]!;
          // Counts in the slot; or a failure's code, or a result with more than counts as JSON.
          const answer =
            d < 0
              ? memory.slots[slot + inserted]!
              : (details[2 * d] ?? (JSON.parse(details[2 * d + 1]!) as { inserted: number }).inserted);
          answers.set(id, [...(answers.get(id) ?? []), answer]);
        }
        taken += n;
      }
    };
    /** Takes answers whenever the doorbell rings, until `count` were sealed and taken. */
    const takeUntil = async (count: number) => {
      while (taken < count) {
        const rang = new Promise<void>((resolve) => (state.wake = resolve));
        take();
        if (taken < count && sealed() - taken === 0) await rang;
        take();
      }
    };
    try {
      native.createTable(0, 't', 'id');
      await takeUntil(1); // inserts check their table when they are made
      let expected = 1;
      const docs = (prefix: string, n: number) =>
        Array.from({ length: n }, (_, i) => JSON.stringify({ id: `${prefix}-${i}` })).join('\n');
      let id = 1;
      for (let round = 0; round < 20; round++) {
        const durability = round % 3 === 2 ? DURABILITY_CODE.soft : DURABILITY_CODE.hard;
        // One by one: a document each, the last a duplicate of the first (an error count, no throw).
        for (let i = 0; i < 10; i++)
          native.insert(
            id++,
            't',
            JSON.stringify({ id: `s${round}-${i % 9}` }),
            FORMAT_CODE.ndjson,
            durability,
            CONFLICT_CODE.error,
            false,
          );
        // Together: 100 single-document writes in one call, ids in the outbox.
        for (let i = 0; i < 100; i++) memory.outbox[i] = id + i;
        native.insertEach(
          100,
          't',
          docs(`e${round}`, 100),
          round % 2 ? DURABILITY_CODE.soft : DURABILITY_CODE.hard,
          CONFLICT_CODE.error,
          false,
        );
        id += 100;
        // A batch parsed on the pool, a delete and a sync.
        void native.insert(
          id++,
          't',
          docs(`b${round}`, 2000),
          FORMAT_CODE.ndjson,
          durability,
          CONFLICT_CODE.error,
          false,
        );
        native.delete(id++, 't', [`s${round}-0`], durability);
        native.sync(id++);
        // A failure: its answer is its code.
        native.createTable(id++, 't', 'id');
        expected = id;
        if (round % 5 === 4) await takeUntil(expected);
      }
      await takeUntil(expected);
      await native.close();
      take();
      expect(taken).toBe(expected);
      expect([...answers.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: expected }, (_, i) => i));
      const twice = [...answers].filter(([, list]) => list.length !== 1);
      expect(twice).toEqual([]);
      // Each its own result: the duplicate, the batch, the failure.
      const at = (i: number) => answers.get(i)![0];
      for (let round = 0; round < 20; round++) {
        const first = 1 + round * 114;
        expect(Array.from({ length: 10 }, (_, i) => at(first + i))).toEqual([1, 1, 1, 1, 1, 1, 1, 1, 1, 0]);
        expect(at(first + 110)).toBe(2000);
        expect(at(first + 113)).toBe('WHARF_ERR_TABLE_EXISTS');
      }
    } finally {
      await native.close();
    }
  });
});

describe('every write promise settles once, with its own result', () => {
  it('64 writers, hard, soft and mixed, each write answered with its own outcome', async () => {
    const { db } = await openTemp();
    await db.createTable('t');
    const t = db.table('t');
    const modes = ['hard', 'soft', 'mixed'] as const;
    const outcomes = await Promise.all(
      Array.from({ length: 64 }, async (_, w) => {
        const mode = modes[w % 3]!;
        const seen: string[] = [];
        for (let i = 0; i < 60; i++) {
          const durability = mode === 'mixed' ? (i % 2 ? 'soft' : 'hard') : mode;
          // Every 6th write repeats the writer's previous key: its answer, not a neighbour's, says so.
          const key = i % 6 === 5 ? `${w}-${i - 1}` : `${w}-${i}`;
          const r = await t.insert({ id: key }, { durability });
          seen.push(
            r.inserted === 1 && r.errors === 0
              ? 'new'
              : r.errors === 1 && r.inserted === 0
                ? 'duplicate'
                : JSON.stringify(r),
          );
        }
        return seen;
      }),
    );
    const expected = Array.from({ length: 60 }, (_, i) => (i % 6 === 5 ? 'duplicate' : 'new'));
    for (const seen of outcomes) expect(seen).toEqual(expected);
    expect(await t.count()).toBe(64 * 50);
  });

  it('close with writes of every kind in flight answers them all, and they are written', async () => {
    const dir = await tempDir();
    const db = await Database.open(dir, { segmentSize: 1 << 20 });
    await db.createTable('t');
    const t = db.table('t');
    const big = Array.from({ length: 2000 }, (_, i) => JSON.stringify({ id: `big-${i}` })).join('\n');
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < 300; i++) writes.push(t.insert({ id: i }, { durability: i % 2 ? 'soft' : 'hard' }));
    writes.push(t.insert([{ id: 'a1' }, { id: 'a2' }]), t.insertNdjson(big), t.delete(0), db.sync());
    const closing = db.close();
    const late = rejection(t.insert({ id: 'late' }));
    const settled = await Promise.allSettled(writes);
    await closing;
    expect(settled.filter((s) => s.status === 'rejected')).toEqual([]);
    expect((await late).code).toBe('WHARF_ERR_CLOSED');
    const again = await Database.open(dir, { segmentSize: 1 << 20 });
    try {
      expect(await again.table('t').count()).toBe(300 - 1 + 2 + 2000);
    } finally {
      await again.close();
    }
  });

  it('a poisoned database answers every write in flight, and every later one, with WHARF_ERR_POISONED', async () => {
    const dir = await tempDir();
    const script = fileURLToPath(new URL('./fixtures/poison.ts', import.meta.url));
    // 1100 KiB per file (bash counts KiB): the 1 MiB journal segments fit, the first
    // checkpoint's run file does not.
    const child = spawnSync(
      'bash',
      ['-c', 'ulimit -f 1100 && exec "$0" --import tsx "$1" "$2"', process.execPath, script, dir],
      {
        cwd: fileURLToPath(new URL('../../..', import.meta.url)),
        encoding: 'utf8',
        timeout: 60_000, // a promise that never settles keeps the child alive: that is the failure
      },
    );
    expect(child.stderr).toBe('');
    expect(child).toMatchObject({ status: 0, signal: null });
    const report = JSON.parse(child.stdout) as {
      made: number;
      settled: number;
      fulfilled: number;
      codes: Record<string, number>;
      close: string;
    };
    expect(report.settled).toBe(report.made);
    // Each of the 16 writers' last write, and the 104 of the burst after it.
    expect(report.codes).toEqual({ WHARF_ERR_POISONED: 16 + 104 });
    expect(report.fulfilled).toBe(report.made - 120);
    expect(report.close).toBe('WHARF_ERR_POISONED');
  });
});
