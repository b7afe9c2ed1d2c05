import { describe, expect, it } from 'vitest';
import { createLoader } from '../src/index.js';
import { MemoryTarget, tick } from './memory-target.js';

describe('backpressure', () => {
  it('waits for a free slot: bounded in flight and bounded accepted documents', async () => {
    const target = new MemoryTarget();
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
    await tick(50);
    // All slots busy: the writer is blocked with at most one batch queued and one being built.
    expect(target.heldCount()).toBe(concurrency);
    expect(done).toBe(false);
    expect(accepted).toBeLessThanOrEqual((concurrency + 2) * batchSize);
    const before = accepted;
    await tick(50);
    expect(accepted).toBe(before); // still blocked: nothing acknowledged
    // Let everything through.
    while (!done) {
      target.release();
      await tick(1);
    }
    await writer;
    const ending = loader.end();
    while (target.active > 0 || target.heldCount() > 0) {
      target.release();
      await tick(1);
    }
    const s = await ending;
    expect(target.maxActive).toBe(concurrency);
    expect(s.documents.written).toBe(200);
  });

  it('naive mode takes the next document only once the previous insert returned', async () => {
    const target = new MemoryTarget();
    target.hold = true;
    const loader = createLoader({ target, table: 't', naive: true });
    let first = false;
    const w1 = loader.write({ id: 1 }).then(() => (first = true));
    await tick(30);
    expect(target.heldCount()).toBe(1); // the insert is out…
    expect(first).toBe(false); // …and the writer waits for it
    target.release();
    await w1;
    const w2 = loader.write({ id: 2 });
    while (target.heldCount() === 0) await tick(5);
    target.release();
    await w2;
    const ending = loader.end();
    while (target.active > 0 || target.heldCount() > 0) {
      target.release();
      await tick(1);
    }
    expect((await ending).documents.written).toBe(2);
  });

  it('a slow acknowledgement shows in per-document latency (measured from write)', async () => {
    const target = new MemoryTarget();
    target.hold = true;
    const loader = createLoader({ target, table: 't', batchSize: 1, concurrency: 1, flushMs: 0 });
    const w = loader.write({ id: 1 });
    await w;
    await tick(60);
    target.release();
    const s = await loader.end();
    expect(s.latencyMs.count).toBe(1);
    expect(s.latencyMs.max).toBeGreaterThanOrEqual(50);
  });

  it('counts intervals with no completion while documents are outstanding as stalls', async () => {
    const target = new MemoryTarget();
    target.hold = true;
    const loader = createLoader({ target, table: 't', batchSize: 1, intervalMs: 20, flushMs: 0 });
    await loader.write({ id: 1 });
    await tick(120);
    target.release();
    const s = await loader.end();
    expect(s.zeroIntervals).toBeGreaterThanOrEqual(2);
    expect(s.intervals.filter((i) => i.docs === 0).length).toBeGreaterThanOrEqual(s.zeroIntervals);
  });
});
