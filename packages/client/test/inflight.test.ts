import { describe, expect, it } from 'vitest';
import { createLoader, Inflight, type Mark } from '../src/index.js';
import { EngineTarget } from './engine-target.js';

describe('Inflight (low-water mark)', () => {
  it('advances only over the contiguous acknowledged prefix', () => {
    const w = new Inflight<string>(3);
    const a = w.begin(0, 10);
    const b = w.begin(10, 5);
    const c = w.begin(15, 7);
    expect(w.hasSlot).toBe(false);
    expect(w.finish(c, 'c')).toEqual([]);
    expect(w.lowSeq).toBe(0);
    expect(w.finish(b, 'b')).toEqual([]);
    expect(w.lowSeq).toBe(0);
    expect(w.hasSlot).toBe(true);
    expect(w.finish(a, 'a')).toEqual(['a', 'b', 'c']);
    expect(w.lowSeq).toBe(22);
    expect(w.highSeq).toBe(22);
  });

  it('rejects gaps and double finishes', () => {
    const w = new Inflight<number>(2);
    const a = w.begin(0, 1);
    expect(() => w.begin(5, 1)).toThrow(/expected 1/);
    w.finish(a, 1);
    expect(() => w.finish(a, 1)).toThrow();
  });

  it('never passes an abandoned batch', () => {
    const w = new Inflight<string>(2);
    const a = w.begin(0, 1);
    const b = w.begin(1, 1);
    w.abandon(a);
    expect(w.finish(b, 'b')).toEqual([]);
    expect(w.lowSeq).toBe(0);
    expect(w.held()).toEqual(['b']);
  });

  it('bounds batches held behind a slow one', () => {
    const w = new Inflight<number>(2, 3);
    const a = w.begin(0, 1);
    const b = w.begin(1, 1);
    w.finish(b, 1);
    const c = w.begin(2, 1);
    w.finish(c, 2);
    expect(w.active).toBe(1);
    expect(w.hasSlot).toBe(false); // 3 unreleased: wait for the slow one
    w.finish(a, 0);
    expect(w.hasSlot).toBe(true);
  });
});

describe('loader: out-of-order acknowledgements', () => {
  it('reports progress and errors in input order whatever order batches finish in', async () => {
    const target = await EngineTarget.create();
    target.hold = true;
    const marks: Mark[] = [];
    const errorLines: number[] = [];
    const loader = createLoader({
      target,
      table: 't',
      batchSize: 10,
      concurrency: 4,
      flushMs: 0,
      onProgress: (m) => marks.push(m),
      onDocumentError: (e) => errorLines.push(e.line!),
    });
    const writes = (async () => {
      for (let i = 0; i < 40; i++) {
        // every 7th line is not JSON
        await loader.write(i % 7 === 3 ? '{"id":' : JSON.stringify({ id: i }), { line: i + 1, offset: (i + 1) * 100 });
      }
    })();
    await target.untilHeld(4);
    target.release(); // releases last-dispatched first: acks arrive in reverse order
    await writes;
    target.releaseAll();
    const s = await loader.end().catch((e) => e.summary);
    expect(s.documents).toMatchObject({ read: 40, written: 34, rejected: 6, missing: 0 });
    expect(errorLines).toEqual([4, 11, 18, 25, 32, 39]);
    // Contiguous: each mark is the end of a whole prefix of batches.
    expect(marks.map((m) => m.seq)).toEqual([10, 20, 30, 40]);
    expect(marks.map((m) => m.offset)).toEqual([1000, 2000, 3000, 4000]);
    expect(marks.at(-1)).toMatchObject({ written: 34, rejected: 6 });
    expect(await target.count()).toBe(34);
  });
});
