import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLoader } from '../src/index.js';
import { EngineTarget, settle } from './engine-target.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('backpressure', () => {
  it('waits for a free slot: bounded in flight and bounded accepted documents', async () => {
    const target = await EngineTarget.create();
    target.hold = true;
    const concurrency = 3;
    const batchSize = 5;
    const loader = createLoader({ target, table: 't', batchSize, concurrency, flushMs: 0 });
    let accepted = 0;
    let done = false;
    const writer = (async () => {
      for (let i = 0; i < 200; i++) {
        await loader.write({ id: i });
        accepted++;
      }
      done = true;
    })();
    await target.untilHeld(concurrency);
    await settle();
    // All slots busy: the writer is blocked with at most one batch queued and one being built.
    expect(target.heldCount()).toBe(concurrency);
    expect(done).toBe(false);
    expect(accepted).toBeLessThanOrEqual((concurrency + 2) * batchSize);
    const before = accepted;
    await settle();
    expect(accepted).toBe(before); // still blocked: nothing acknowledged
    target.releaseAll();
    await writer;
    const s = await loader.end();
    expect(target.maxActive).toBe(concurrency);
    expect(s.documents.written).toBe(200);
    expect(await target.count()).toBe(200);
  });

  it('naive mode takes the next document only once the previous insert returned', async () => {
    const target = await EngineTarget.create();
    target.hold = true;
    const loader = createLoader({ target, table: 't', naive: true });
    let first = false;
    const w1 = loader.write({ id: 1 }).then(() => (first = true));
    await target.untilHeld(1);
    await settle();
    expect(target.heldCount()).toBe(1); // the insert is out…
    expect(first).toBe(false); // …and the writer waits for it
    target.release();
    await w1;
    const w2 = loader.write({ id: 2 });
    await target.untilHeld(1);
    target.releaseAll();
    await w2;
    expect((await loader.end()).documents.written).toBe(2);
    expect(await target.count()).toBe(2);
  });

  it('a slow acknowledgement shows in per-document latency (measured from write)', async () => {
    const target = await EngineTarget.create();
    target.hold = true;
    const loader = createLoader({ target, table: 't', batchSize: 1, concurrency: 1, flushMs: 0 });
    await loader.write({ id: 1 });
    const written = performance.now();
    await target.untilHeld(1);
    // Time passes while the acknowledgement is held; how much does not matter, only that the
    // latency covers all of it.
    await new Promise((resolve) => setTimeout(resolve, 20));
    const released = performance.now();
    target.release();
    const s = await loader.end();
    expect(s.latencyMs.count).toBe(1);
    // The histogram keeps 3 significant digits: allow its rounding (0.1%).
    expect(s.latencyMs.max).toBeGreaterThanOrEqual((released - written) * 0.999);
  });

  it('counts intervals with no completion while documents are outstanding as stalls', async () => {
    // The interval timer is faked: the test decides how many intervals pass while the batch is held.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const target = await EngineTarget.create();
    target.hold = true;
    const loader = createLoader({ target, table: 't', batchSize: 1, intervalMs: 20, flushMs: 0 });
    await loader.write({ id: 1 });
    await target.untilHeld(1);
    vi.advanceTimersByTime(6 * 20);
    target.release();
    const s = await loader.end();
    expect(s.zeroIntervals).toBe(6);
    expect(s.intervals.slice(0, 6).every((i) => i.docs === 0)).toBe(true);
    expect(s.documents.written).toBe(1);
  });
});
