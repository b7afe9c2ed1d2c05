import { describe, expect, it } from 'vitest';
import { defaultPoolReads, Gate } from '../src/gate.ts';
import { openTemp } from './helpers.ts';

/** A task that runs until `finish()`; `started` says whether the gate let it start. */
function task(gate: Gate, log: string[], name: string, fail = false) {
  let finish!: () => void;
  const state = { started: false };
  const done = gate.run(
    () =>
      new Promise<string>((resolve, reject) => {
        state.started = true;
        log.push(name);
        finish = () => (fail ? reject(new Error(name)) : resolve(name));
      }),
  );
  return { done, state, finish: () => finish() };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('Gate: reads on the thread pool', () => {
  it('runs at most `limit` tasks at once and the others in the order they came', async () => {
    const gate = new Gate(2);
    const log: string[] = [];
    const tasks = ['a', 'b', 'c', 'd'].map((n) => task(gate, log, n));
    await turn();
    expect(log).toEqual(['a', 'b']);
    expect([gate.running, gate.waiting]).toEqual([2, 2]);

    tasks[1]!.finish();
    await expect(tasks[1]!.done).resolves.toBe('b');
    await turn();
    expect(log).toEqual(['a', 'b', 'c']);

    // A task that arrives while others wait queues behind them, even as a turn frees up.
    const late = task(gate, log, 'e');
    tasks[0]!.finish();
    await turn();
    expect(log).toEqual(['a', 'b', 'c', 'd']);
    expect(late.state.started).toBe(false);

    tasks[2]!.finish();
    tasks[3]!.finish();
    await turn();
    late.finish();
    expect(await Promise.all([tasks[2]!.done, tasks[3]!.done, late.done])).toEqual(['c', 'd', 'e']);
    expect([gate.running, gate.waiting]).toEqual([0, 0]);
  });

  it('a task that fails passes its turn on', async () => {
    const gate = new Gate(1);
    const log: string[] = [];
    const failing = task(gate, log, 'x', true);
    const next = task(gate, log, 'y');
    await turn();
    failing.finish();
    await expect(failing.done).rejects.toThrow('x');
    await turn();
    next.finish();
    await expect(next.done).resolves.toBe('y');
    expect(gate.running).toBe(0);
  });

  it("defaults to all of libuv's pool but one thread, at least one", () => {
    expect(defaultPoolReads({})).toBe(3);
    expect(defaultPoolReads({ UV_THREADPOOL_SIZE: '16' })).toBe(15);
    expect(defaultPoolReads({ UV_THREADPOOL_SIZE: '1' })).toBe(1);
    expect(defaultPoolReads({ UV_THREADPOOL_SIZE: 'many' })).toBe(3);
  });

  it('a database with one pool read at a time answers many concurrent reads, each correctly', async () => {
    const { db } = await openTemp({ poolReads: 1 });
    await db.createTable('t');
    const t = db.table('t');
    await t.insert(Array.from({ length: 100 }, (_, i) => ({ id: i, v: i * 2 })));
    const counts = Array.from({ length: 20 }, () => t.count());
    const scans = Array.from({ length: 20 }, (_, i) => t.scan({ gte: i, limit: 3 }));
    expect(await Promise.all(counts)).toEqual(Array(20).fill(100));
    expect((await Promise.all(scans)).map((docs) => docs.map((d) => d.id))).toEqual(
      Array.from({ length: 20 }, (_, i) => [i, i + 1, i + 2]),
    );
  });
});
