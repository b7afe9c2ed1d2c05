import { describe, expect, it } from 'vitest';
import { until } from '../../../test/helpers/until.js';
import { BatchBuilder, rawOf, toJsonText } from '../src/batcher.js';
import { createLoader } from '../src/index.js';
import { EngineTarget } from './engine-target.js';

const doc = (i: number) => ({ id: i, pad: 'x'.repeat(10) });

describe('batch triggers', () => {
  it('closes a batch on count', async () => {
    const target = await EngineTarget.create();
    const loader = createLoader({ target, table: 't', batchSize: 10, flushMs: 0 });
    for (let i = 0; i < 35; i++) await loader.write(doc(i));
    const s = await loader.end();
    expect(target.calls.map((c) => c.count)).toEqual([10, 10, 10, 5]);
    expect(await target.count()).toBe(35);
    expect(s.documents).toMatchObject({ read: 35, written: 35, rejected: 0, missing: 0 });
    expect(s.batches).toBe(4);
  });

  it('closes a batch on bytes, before the document that would overflow it', async () => {
    const target = await EngineTarget.create();
    const line = JSON.stringify(doc(0)).length + 1; // with its newline
    const loader = createLoader({ target, table: 't', batchSize: 1000, batchBytes: line * 3 + 2, flushMs: 0 });
    for (let i = 0; i < 10; i++) await loader.write(doc(i));
    await loader.end();
    expect(target.calls.map((c) => c.count)).toEqual([3, 3, 3, 1]);
    for (const c of target.calls) expect(Buffer.byteLength(c.payload)).toBeLessThanOrEqual(line * 3 + 2);
  });

  it('closes a batch on time while the writer is idle', async () => {
    const target = await EngineTarget.create();
    const loader = createLoader({ target, table: 't', batchSize: 1000, flushMs: 20 });
    for (let i = 0; i < 3; i++) await loader.write(doc(i));
    // The writer is idle: only the flush timer can send the batch.
    await until('the flush timer to send the batch', () => target.calls.length > 0);
    expect(target.calls.map((c) => c.count)).toEqual([3]); // sent before end()
    await loader.write(doc(3));
    await loader.end();
    expect(target.calls.map((c) => c.count)).toEqual([3, 1]);
  });

  it('naive mode sends one document per insert, hard, one at a time', async () => {
    const target = await EngineTarget.create();
    const loader = createLoader({ target, table: 't', naive: true, batchSize: 500, concurrency: 8 });
    for (let i = 0; i < 20; i++) await loader.write(doc(i));
    const s = await loader.end();
    expect(target.calls).toHaveLength(20);
    expect(target.calls.every((c) => c.count === 1 && c.opts.durability === 'hard')).toBe(true);
    expect(target.maxActive).toBe(1);
    expect(s.finalSyncMs).toBeNull(); // hard writes need no final sync
    expect(s.durability).toBe('hard');
  });

  it('soft by default, with one final sync timed apart', async () => {
    const target = await EngineTarget.create();
    const loader = createLoader({ target, table: 't' });
    await loader.load(
      (function* () {
        for (let i = 0; i < 2500; i++) yield doc(i);
      })(),
    );
    const s = await loader.end();
    expect(target.calls.every((c) => c.opts.durability === 'soft')).toBe(true);
    expect(target.syncs).toBe(1);
    expect(s.finalSyncMs).not.toBeNull();
    expect(s.latencyMs.count).toBe(2500);
    expect(s.intervals.reduce((n, x) => n + x.docs, 0)).toBe(2500);
  });

  it('finalSync: false makes no sync', async () => {
    const target = await EngineTarget.create();
    const loader = createLoader({ target, table: 't', finalSync: false });
    await loader.write(doc(1));
    const s = await loader.end();
    expect(target.syncs).toBe(0);
    expect(s.finalSyncMs).toBeNull();
  });
});

describe('batch payloads', () => {
  it('builds NDJSON and JSON arrays, and maps documents back to their text', () => {
    for (const format of ['ndjson', 'json'] as const) {
      const b = new BatchBuilder(format, 100, 1 << 16);
      b.append('{"id":1}', 8, 0, 1, 9, false);
      b.append(Buffer.from('{"id":2}'), 8, 0, 2, 18, false);
      const batch = b.seal();
      const text = batch.payload.toString();
      expect(text).toBe(format === 'ndjson' ? '{"id":1}\n{"id":2}\n' : '[{"id":1},{"id":2}]');
      expect(rawOf(batch, 0)).toBe('{"id":1}');
      expect(rawOf(batch, 1)).toBe('{"id":2}');
      if (format === 'json') expect(JSON.parse(text)).toHaveLength(2);
    }
  });

  it('lays later batches out in the buffers of batches it was given back, and no others', () => {
    const b = new BatchBuilder('ndjson', 100, 1 << 16);
    b.append('{"id":1}', 8, 0, 1, 9, false);
    const first = b.seal();
    b.append('{"id":2}', 8, 0, 2, 18, false);
    const second = b.seal(); // laid out while `first` is still out: a buffer of its own
    expect(second.payload.buffer).not.toBe(first.payload.buffer);
    b.recycle(first);
    b.recycle({ ...second, payload: Buffer.from(second.payload) }); // a buffer it did not make
    b.append('{"id":3}', 8, 0, 3, 27, false);
    const third = b.seal(); // was being built in the buffer made at `second`'s seal
    b.append('{"id":4}', 8, 0, 4, 36, false);
    const fourth = b.seal();
    expect(fourth.payload.buffer).toBe(first.payload.buffer);
    expect([third, fourth].map((x) => x.payload.toString())).toEqual(['{"id":3}\n', '{"id":4}\n']);
    b.append('{"id":5}', 8, 0, 5, 45, false);
    expect(b.seal().payload.buffer).not.toBe(second.payload.buffer);
  });

  it('re-encodes multi-line JSON text on one line and rejects what is not JSON', () => {
    expect(toJsonText('{\n  "a": 1\n}')).toEqual({ text: '{"a":1}' });
    expect(toJsonText('{\n  "a": \n}')).toHaveProperty('error');
    expect(toJsonText('{"a":1}')).toEqual({ text: '{"a":1}' });
    expect(toJsonText('[1]', true)).toHaveProperty('error');
    expect(toJsonText({ a: 1n } as object)).toHaveProperty('error');
  });

  it('rethinkdb-style JSON-array targets never get a bad element', async () => {
    const target = await EngineTarget.create();
    target.payloadFormat = 'json';
    const errors: unknown[] = [];
    const loader = createLoader({ target, table: 't', onDocumentError: (e) => errors.push(e) });
    await loader.write('{"id":1}', { line: 1 });
    await loader.write('{"id":2', { line: 2 });
    await loader.write('{"id":3}', { line: 3 });
    const s = await loader.end().catch((e) => e.summary);
    expect(s.documents).toMatchObject({ read: 3, written: 2, rejected: 1, missing: 0 });
    expect(errors).toMatchObject([{ line: 2, kind: 'invalid' }]);
    // The engine parsed every array it was sent: no bad element reached it.
    expect(target.calls.flatMap((c) => JSON.parse(c.payload) as object[])).toEqual([{ id: 1 }, { id: 3 }]);
    expect(await target.count()).toBe(2);
  });
});
