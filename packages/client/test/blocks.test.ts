/**
 * pushBlock: blocks of NDJSON lines on the real engine. The loader keeps no entry per document,
 * so everything reported per document (line, offset, text of a reject; present on a re-send;
 * latency counts; the resume marks) is computed from the blocks: these tests check each against
 * the input the blocks were cut from.
 */
import { describe, expect, it } from 'vitest';
import { createLoader, type DocumentError, type Mark } from '../src/index.js';
import { EngineTarget } from './engine-target.js';

/** `lines` as one input; block(i, j) is lines [i, j) with the position pushBlock wants. */
function input(lines: string[]) {
  const text = lines.map((l) => `${l}\n`).join('');
  const buf = Buffer.from(text);
  const starts = [0];
  for (const l of lines) starts.push(starts[starts.length - 1]! + Buffer.byteLength(l) + 1);
  return {
    buf,
    block: (i: number, j: number) =>
      [buf.subarray(starts[i]!, starts[j]!), j - i, { line: i + 1, offset: starts[j]! }] as const,
    /** Offset just past line i (1-based). */
    endOf: (line: number) => starts[line]!,
  };
}

describe('pushBlock', () => {
  it('reports each rejected document of a block with its line, offset, text and seq; counts and latency per document', async () => {
    const target = await EngineTarget.create();
    const errors: DocumentError[] = [];
    const marks: Mark[] = [];
    const loader = createLoader({
      target,
      table: 't',
      flushMs: 0,
      onDocumentError: (e) => errors.push(e),
      onProgress: (m) => marks.push(m),
    });
    const lines = Array.from({ length: 40 }, (_, i) => `{"id":${i},"v":"x"}`);
    lines[7] = '{"id":3,"dup":true}'; // a conflict with line 4
    lines[22] = '{"id":'; // not JSON
    lines[39] = '{"id":{"a":1}}'; // a bad key (an object)
    const inp = input(lines);
    expect(loader.pushBlock(...inp.block(0, 10))).toBe(true);
    expect(loader.pushBlock(...inp.block(10, 25))).toBe(true);
    loader.pushBlock(...inp.block(25, 40));
    const summary = await loader.end();
    expect(errors).toMatchObject([
      { seq: 7, line: 8, offset: inp.endOf(8), kind: 'conflict', raw: lines[7] },
      { seq: 22, line: 23, offset: inp.endOf(23), kind: 'invalid', raw: lines[22] },
      { seq: 39, line: 40, offset: inp.endOf(40), kind: 'invalid', raw: lines[39] },
    ]);
    expect(summary.documents).toEqual({ read: 40, written: 37, rejected: 3, present: 0, missing: 0 });
    expect(await target.count()).toBe(37);
    // Three blocks, one batch (5000 documents / 4 MiB): no batch per block, no entry per document.
    expect(target.calls).toHaveLength(1);
    expect(target.calls[0]!.count).toBe(40);
    expect(summary.latencyMs.count).toBe(40);
    expect(marks.at(-1)).toMatchObject({ seq: 40, line: 40, offset: inp.buf.length, written: 37, rejected: 3 });
  });

  it('cuts blocks at line ends to keep batches within batchBytes and the target limit; lines stay right', async () => {
    const target = await EngineTarget.create();
    Object.assign(target, { maxPayloadBytes: 200 });
    const errors: DocumentError[] = [];
    const marks: Mark[] = [];
    const loader = createLoader({
      target,
      table: 't',
      flushMs: 0,
      batchBytes: 100,
      batchSize: 3,
      onDocumentError: (e) => errors.push(e),
      onDispatch: (h) =>
        marks.push({ seq: h.seq, line: h.line, offset: h.offset, written: 0, rejected: 0, present: 0 }),
    });
    const lines = Array.from({ length: 30 }, (_, i) => `{"id":${i},"pad":"${'p'.repeat(i % 7)}"}`);
    lines[12] = `{"id":12,"big":"${'b'.repeat(300)}"}`; // larger than the target takes
    lines[20] = '{"id":5}'; // a conflict
    const inp = input(lines);
    loader.pushBlock(...inp.block(0, 30));
    const summary = await loader.end();
    expect(errors).toMatchObject([
      { seq: 12, line: 13, offset: inp.endOf(13), kind: 'invalid', reason: /larger than the target accepts \(200/ },
      { seq: 20, line: 21, offset: inp.endOf(21), kind: 'conflict', raw: '{"id":5}' },
    ]);
    expect(summary.documents).toMatchObject({ read: 30, written: 28, rejected: 2, missing: 0 });
    for (const c of target.calls) {
      expect(Buffer.byteLength(c.payload)).toBeLessThanOrEqual(100 + 40);
      expect(c.count).toBeLessThanOrEqual(3);
    }
    expect(target.calls.length).toBeGreaterThan(5);
    // Each batch ends at a line end: the high-water marks are offsets just past a line.
    for (const m of marks) expect(m.offset).toBe(inp.endOf(m.line!));
    expect(marks.at(-1)).toMatchObject({ seq: 30, line: 30, offset: inp.buf.length });
  });

  it('cuts a block where a batch is full (batchSize); each batch ends just past a document', async () => {
    const target = await EngineTarget.create();
    const errors: DocumentError[] = [];
    const highs: { seq: number; line?: number; offset?: number }[] = [];
    const loader = createLoader({
      target,
      table: 't',
      flushMs: 0,
      batchSize: 7,
      onDocumentError: (e) => errors.push(e),
      onDispatch: (h) => highs.push(h),
    });
    const lines = Array.from({ length: 30 }, (_, i) => `{"id":${i}}`);
    lines[19] = '{"id":3}';
    const inp = input(lines);
    loader.pushBlock(...inp.block(0, 30));
    // A JSON array, one element per line: `{"id":100} ,` … with the commas made blanks.
    const arr = `[\n${Array.from({ length: 9 }, (_, i) => `{"id":${100 + i}}`).join(',\n')}\n]`;
    const from = arr.indexOf('{');
    const to = arr.lastIndexOf('}') + 1;
    loader.pushBlock(Buffer.from(arr.slice(from, to).replace(/,\n/g, ' \n')), 9, {
      line: 2,
      offset: to,
      endOfDoc: 'value',
    });
    const summary = await loader.end();
    expect(target.calls.map((c) => c.count)).toEqual([7, 7, 7, 7, 7, 4]);
    expect(errors).toMatchObject([{ seq: 19, line: 20, offset: inp.endOf(20), kind: 'conflict' }]);
    expect(summary.documents).toMatchObject({ read: 39, written: 38, rejected: 1, missing: 0 });
    expect(highs.slice(0, 4)).toEqual([7, 14, 21, 28].map((n) => ({ seq: n, line: n, offset: inp.endOf(n) })));
    // 30 + 5 = 35: the fifth batch ends after the array's fifth element, on line 6.
    const fifthEnd = arr.indexOf('{"id":105}');
    expect(highs[4]).toEqual({ seq: 35, line: 6, offset: arr.lastIndexOf('}', fifthEnd) + 1 });
    expect(highs[5]).toEqual({ seq: 39, line: 10, offset: to });
  });

  it('JSON-array blocks: elements on one line (lineStep 0) with offsets just past each element', async () => {
    const target = await EngineTarget.create();
    const errors: DocumentError[] = [];
    const loader = createLoader({ target, table: 't', onDocumentError: (e) => errors.push(e) });
    // `[{"id":1},{"id":1},{"id":2}]` on line 3: commas made newlines, as the JSON-array parser does.
    const text = '\n\n[{"id":1},{"id":1},{"id":2}]';
    const first = text.indexOf('{');
    const last = text.lastIndexOf('}') + 1;
    const bytes = Buffer.from(text.slice(first, last).replace(/},{/g, '}\n{'));
    loader.pushBlock(bytes, 3, { line: 3, lineStep: 0, offset: last, endOfDoc: 'value' });
    const summary = await loader.end();
    expect(errors).toMatchObject([
      { seq: 1, line: 3, offset: text.indexOf('},{"id":2') + 1, kind: 'conflict', raw: '{"id":1}' },
    ]);
    expect(summary.documents).toMatchObject({ read: 3, written: 2, rejected: 1 });
  });

  it('a replayed block (resume) and a re-sent batch (retry): conflicts count as present', async () => {
    const target = await EngineTarget.create();
    const lines = Array.from({ length: 20 }, (_, i) => `{"id":${i}}`);
    const inp = input(lines);
    const first = createLoader({ target, table: 't' });
    first.pushBlock(...inp.block(0, 12));
    await first.end();

    // The resumed run re-sends lines 1–12 as a replay, then the rest; one answer is lost.
    target.loseAnswers = 1;
    const errors: DocumentError[] = [];
    const loader = createLoader({
      target,
      table: 't',
      retry: { minDelayMs: 1, maxDelayMs: 2 },
      onDocumentError: (e) => errors.push(e),
    });
    const [b1, n1, m1] = inp.block(0, 12);
    loader.pushBlock(b1, n1, { ...m1, replay: true });
    loader.pushBlock(...inp.block(12, 20));
    const summary = await loader.end();
    expect(errors).toEqual([]);
    expect(summary.documents).toEqual({ read: 20, written: 20, rejected: 0, present: 20, missing: 0 });
    expect(summary.retries).toBe(1);
    expect(await target.count()).toBe(20);
  });

  it('blocks, single documents and rejected records mix in input order', async () => {
    const target = await EngineTarget.create();
    const errors: DocumentError[] = [];
    const loader = createLoader({ target, table: 't', flushMs: 0, onDocumentError: (e) => errors.push(e) });
    const inp = input(['{"id":1}', '{"id":2}', 'bad', '{"id":4}']);
    loader.pushBlock(...inp.block(0, 2));
    loader.reject('line longer than 10 bytes', { line: 3, offset: inp.endOf(3), raw: 'bad' });
    loader.pushBlock(...inp.block(3, 4));
    loader.push('{"id":2}', { line: 5 });
    loader.pushBlock(Buffer.from('{"id":6}'), 1, { line: 6 });
    const summary = await loader.end();
    expect(errors).toMatchObject([
      { seq: 2, line: 3, reason: 'line longer than 10 bytes' },
      { seq: 4, line: 5, kind: 'conflict' },
    ]);
    expect(summary.documents).toMatchObject({ read: 6, written: 4, rejected: 2, missing: 0 });
    expect(summary.latencyMs.count).toBe(5); // every document sent (the engine rejected one)
  });

  it('a JSON-array target gets each line of a block as a document', async () => {
    const target = await EngineTarget.create();
    target.payloadFormat = 'json';
    const errors: DocumentError[] = [];
    const loader = createLoader({ target, table: 't', onDocumentError: (e) => errors.push(e) });
    const inp = input(['{"id":1}', '{"id":', '{"id":3}\r']);
    loader.pushBlock(...inp.block(0, 3));
    const summary = await loader.end();
    expect(errors).toMatchObject([{ seq: 1, line: 2, offset: inp.endOf(2), kind: 'invalid' }]);
    expect(summary.documents).toMatchObject({ read: 3, written: 2, rejected: 1 });
    expect(target.calls[0]!.payload).toBe('[{"id":1},{"id":3}]');
  });
});
