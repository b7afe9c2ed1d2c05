/**
 * The r.js thread pool on its own (term/js-pool.ts with the real worker program): answers, the
 * time limit terminating and replacing a thread, the queue bound, and close() answering what
 * runs and waits so that no caller hangs at shutdown.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { JsPool } from '../src/rethinkdb/term/js-pool.js';

const LOOP = { op: 'eval', session: 1, source: 'while (true) {}', arrayLimit: 100_000 } as const;
const pools: JsPool[] = [];
function pool(workers: number, queue: number, memoryMb = 32): JsPool {
  const p = new JsPool({ workers, memoryMb, queue });
  pools.push(p);
  return p;
}

afterEach(async () => {
  for (const p of pools.splice(0)) await p.close();
});

describe('JsPool', () => {
  it('answers datums, functions and the code’s own errors', async () => {
    const p = pool(1, 10);
    expect(await p.run({ op: 'eval', session: 1, source: '[1, "a", {b: null}]', arrayLimit: 10 }, 5000)).toEqual({
      id: expect.any(Number),
      kind: 'datum',
      value: [1, 'a', { b: null }],
    });
    expect(
      (await p.run({ op: 'eval', session: 1, source: '(function(x) { return x * 2; })', arrayLimit: 10 }, 5000)).kind,
    ).toBe('function');
    expect(
      await p.run(
        { op: 'call', session: 1, source: '(function(x) { return x * 2; })', args: [21], arrayLimit: 10 },
        5000,
      ),
    ).toMatchObject({ kind: 'datum', value: 42 });
    expect(await p.run({ op: 'eval', session: 1, source: '[1, 2, 3]', arrayLimit: 2 }, 5000)).toMatchObject({
      kind: 'error',
      message: 'Array over size limit `2`.',
    });
  });

  it('a time limit terminates the thread and a new one serves the next evaluation', async () => {
    const p = pool(1, 10);
    expect(await p.run(LOOP, 300)).toEqual({ kind: 'timeout' });
    expect(p.threads).toBeLessThanOrEqual(1);
    expect(await p.run({ op: 'eval', session: 2, source: '1 + 1', arrayLimit: 10 }, 5000)).toMatchObject({
      kind: 'datum',
      value: 2,
    });
    expect(p.threads).toBe(1);
  });

  it('the functions of finished queries do not pile up in a thread until it runs out of memory', async () => {
    const p = pool(1, 10, 16);
    for (let session = 1; session <= 300; session++) {
      const reply = await p.run({ op: 'eval', session, source: '(function(x) { return x; })', arrayLimit: 10 }, 5000);
      expect(reply.kind).toBe('function');
    }
  });

  it('refuses past the queue; close() answers the running and the waiting ones', async () => {
    const p = pool(1, 1);
    const running = p.run(LOOP, 60_000);
    const waiting = p.run(LOOP, 60_000);
    expect(await p.run(LOOP, 60_000)).toEqual({ kind: 'busy' });
    await p.close();
    expect(await running).toEqual({ kind: 'crash', outOfMemory: false });
    expect(await waiting).toEqual({ kind: 'crash', outOfMemory: false });
    expect(p.threads).toBe(0);
  });
});
