import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  type CsvOptions,
  CsvParser,
  detectFormat,
  type FormatParser,
  JsonArrayParser,
  loadNativeCsv,
  NdjsonParser,
  type StartAt,
} from '../src/commands/import/formats/index.js';

interface Rec {
  doc: unknown;
  line: number;
  end: number;
  error?: string;
  raw?: string;
}

function run(
  make: (start?: StartAt) => FormatParser,
  input: string | Buffer,
  chunk: number,
  start?: StartAt,
  pause = false,
  parseJson = false,
): Rec[] {
  const buf = typeof input === 'string' ? Buffer.from(input) : input;
  const p = make(start);
  const out: Rec[] = [];
  const emit = (doc: unknown, line: number, end: number, error?: string, raw?: string) => {
    // The native CSV path gives JSON bytes; compare documents as values.
    const d =
      doc instanceof Uint8Array
        ? parseJson
          ? JSON.parse(Buffer.from(doc).toString())
          : Buffer.from(doc).toString()
        : doc;
    out.push(error ? { doc: d, line, end, error, raw } : { doc: d, line, end });
    return !pause; // pause: stop after every record, as under backpressure
  };
  for (let i = 0; i < buf.length; i += chunk) {
    const piece = buf.subarray(i, i + chunk);
    let off = 0;
    let rounds = 0;
    do {
      off += p.feed(piece.subarray(off), emit);
      if (++rounds > 1e6) throw new Error('no progress');
    } while (off < piece.length || p.pending);
  }
  p.end(emit);
  return out;
}

const CHUNKS = [1, 2, 3, 7, 64, 1 << 20];

/** Every chunking gives the same records, and resuming at any record's end gives the rest. */
function checkStable(
  make: (start?: StartAt) => FormatParser,
  input: string,
  lineAt: (offset: number) => number,
  runWith: typeof run = run,
) {
  const whole = runWith(make, input, 1 << 20);
  for (const c of CHUNKS) {
    expect(runWith(make, input, c)).toEqual(whole);
    expect(runWith(make, input, c, undefined, true)).toEqual(whole);
  }
  const buf = Buffer.from(input);
  whole.forEach((r, i) => {
    const rest = runWith(make, buf.subarray(r.end), 5, { offset: r.end, line: lineAt(r.end), resumed: true });
    expect(rest).toEqual(whole.slice(i + 1));
  });
  return whole;
}

function lineAtFn(input: string) {
  return (offset: number) => Buffer.from(input).subarray(0, offset).toString().split('\n').length;
}

describe('NDJSON', () => {
  const input = '{"id":1}\n\n{"id":2,"s":"a\\nb"}\r\n   \n{"id":\n{"id":4}';
  it('gives each line with its number and end offset, skipping blank lines', () => {
    const recs = checkStable((s) => new NdjsonParser(s), input, lineAtFn(input));
    expect(recs).toEqual([
      { doc: '{"id":1}', line: 1, end: 9 },
      { doc: '{"id":2,"s":"a\\nb"}', line: 3, end: 31 },
      { doc: '{"id":', line: 5, end: 42 },
      { doc: '{"id":4}', line: 6, end: 50 },
    ]);
  });

  it('rejects and skips a line longer than the limit', () => {
    const long = `{"id":1}\n{"x":"${'y'.repeat(100)}"}\n{"id":3}\n`;
    for (const c of [1, 10, 1000]) {
      const recs = run((s) => new NdjsonParser(s, 50), long, c);
      expect(recs.map((r) => [r.line, r.error ?? r.doc])).toEqual([
        [1, '{"id":1}'],
        [2, 'line longer than 50 bytes'],
        [3, '{"id":3}'],
      ]);
      expect(recs[1]!.end).toBe(long.indexOf('{"id":3}'));
    }
  });

  it('drops a UTF-8 BOM', () => {
    expect(
      run((s) => new NdjsonParser(s), Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"a":1}\n')]), 1),
    ).toEqual([{ doc: '{"a":1}', line: 1, end: 11 }]);
  });
});

describe('JSON array', () => {
  const input =
    '[\n  {"id": 1, "s": "]},\\"{["},\n  {"id": 2,\n   "nested": {"a": [1, {"b": 2}]}},\n  42,\n  "str, with comma",\n  [1,2],\n  {"id": 3}\n]\n';
  it('streams elements with their first line; rejects non-objects', () => {
    const recs = checkStable((s) => new JsonArrayParser(s), input, lineAtFn(input));
    expect(recs.map((r) => [r.line, r.error ?? r.doc])).toEqual([
      [2, '{"id": 1, "s": "]},\\"{["}'],
      [3, '{"id": 2,\n   "nested": {"a": [1, {"b": 2}]}}'],
      [5, 'a document must be a JSON object'],
      [6, 'a document must be a JSON object'],
      [7, 'a document must be a JSON object, not an array'],
      [8, '{"id": 3}'],
    ]);
    expect(recs[2]!.raw).toBe('42');
    expect(recs[3]!.raw).toBe('"str, with comma"');
  });

  it('accepts an empty array and stops on a broken structure with the line', () => {
    expect(run((s) => new JsonArrayParser(s), ' [ ] ', 1)).toEqual([]);
    expect(() => run((s) => new JsonArrayParser(s), '[{"a":1}\n {"b":2}]', 3)).toThrow(/expected ',' or '\]'.*line 2/);
    expect(() => run((s) => new JsonArrayParser(s), '[{"a":[1}]', 3)).toThrow(/mismatched/);
    expect(() => run((s) => new JsonArrayParser(s), '[{"a":1},', 3)).toThrow(/closing/);
    expect(() => run((s) => new JsonArrayParser(s), '[{"a":1', 3)).toThrow(/inside the element/);
    expect(() => run((s) => new JsonArrayParser(s), '{"a":1}', 3)).toThrow(/expected '\['/);
  });
});

/** Both CSV paths: @wharf/engine's transcoder and csv-parse (test/csv-paths.test.ts compares them). */
beforeAll(async () => {
  expect(await loadNativeCsv()).toBe(true);
});

describe.each([true, false])('CSV (native: %s)', (native) => {
  const csv = (o: CsvOptions, s?: StartAt) => new CsvParser({ ...o, native }, s);
  const runCsv = (
    make: (start?: StartAt) => FormatParser,
    input: string | Buffer,
    chunk: number,
    start?: StartAt,
    pause = false,
  ) => run(make, input, chunk, start, pause, true);
  const input = 'id,name,age\n1,Ada,36\n\n2,"Grace\nHopper",85\n3,only-two\n4,"Alan, T",41\n';
  it('maps records to objects by header, with first lines and offsets; rejects bad field counts', () => {
    const make = (s?: StartAt) =>
      csv({ delimiter: ',', types: 'none', header: s?.resumed ? ['id', 'name', 'age'] : undefined }, s);
    const recs = checkStable(make, input, lineAtFn(input), runCsv);
    expect(recs.map((r) => [r.line, r.error ?? r.doc])).toEqual([
      [2, { id: '1', name: 'Ada', age: '36' }],
      [4, { id: '2', name: 'Grace\nHopper', age: '85' }],
      [6, '2 fields, the header has 3'],
      [7, { id: '4', name: 'Alan, T', age: '41' }],
    ]);
    expect(recs[2]!.raw).toBe('3,only-two');
  });

  it('types columns: auto inference and header types', () => {
    const auto = runCsv(() => csv({ delimiter: ',', types: 'auto' }), 'a,b,c,d,e\n1,true,,x,-2.5e3\n', 4);
    expect(auto[0]!.doc).toEqual({ a: 1, b: true, d: 'x', e: -2500 });
    const typed = runCsv(
      () => csv({ delimiter: ',', types: 'header' }),
      'id:int,tags:json,ok:boolean,zip:string\n7,"[""a""]",yes,01234\nx,[],no,1\n',
      100,
    );
    expect(typed[0]!.doc).toEqual({ id: 7, tags: ['a'], ok: true, zip: '01234' });
    expect(typed[1]).toMatchObject({ line: 3, error: 'column "id": "x" is not a number' });
  });

  it('TSV, and header errors', () => {
    expect(runCsv(() => csv({ delimiter: '\t', types: 'none' }), 'a\tb\n"x\ty\n', 100)[0]!.doc).toEqual({
      a: '"x',
      b: 'y',
    });
    expect(() => runCsv(() => csv({ delimiter: ',', types: 'none' }), 'a,a\n1,2\n', 100)).toThrow(/twice/);
    expect(() => runCsv(() => csv({ delimiter: ',', types: 'header' }), 'a:date\n1\n', 100)).toThrow(/unknown type/);
    expect(() => runCsv(() => csv({ delimiter: ',', types: 'none' }), '', 100)).toThrow(/no header/);
    expect(() => runCsv(() => csv({ delimiter: ',', types: 'none' }), 'a,b\n1,"2\n', 100)).toThrow(/Quote Not Closed/i);
  });
});

describe('format detection', () => {
  it('uses the extension, refined by the first byte', () => {
    const b = (s: string) => Buffer.from(s);
    expect(detectFormat('x.ndjson', b('{'))).toBe('ndjson');
    expect(detectFormat('x.jsonl', b('{'))).toBe('ndjson');
    expect(detectFormat('x.json', b('  [{'))).toBe('json');
    expect(detectFormat('x.json', b('{"a":1}\n'))).toBe('ndjson');
    expect(detectFormat('x.csv', b('a,b'))).toBe('csv');
    expect(detectFormat('x.tsv', b('a\tb'))).toBe('tsv');
    expect(detectFormat(null, b('\n['))).toBe('json');
    expect(detectFormat('x.csv', b('['), 'json')).toBe('json');
    expect(() => detectFormat(null, b('id,name'))).toThrow(/--format/);
  });
});

// ── blocks ──────────────────────────────────────────────────────────────────────────────────────

/**
 * The block path (what `wharf import` uses for NDJSON and JSON arrays), expanded back into
 * records the way the loader finds a document in a block: line k of the block is document k, on
 * input line `line + k × lineStep`, ending at the offset computed from the block's end offset.
 */
function runBlocks(
  make: (start?: StartAt) => FormatParser,
  input: string | Buffer,
  chunk: number,
  start?: StartAt,
  pause = false,
): { recs: Rec[]; blocks: number } {
  const buf = typeof input === 'string' ? Buffer.from(input) : input;
  const p = make(start);
  const out: Rec[] = [];
  let blocks = 0;
  const emit = (doc: unknown, line: number, end: number, error?: string, raw?: string) => {
    const d = doc instanceof Uint8Array ? Buffer.from(doc).toString() : doc;
    out.push(error ? { doc: d, line, end, error, raw } : { doc: d, line, end });
    return !pause;
  };
  const emitBlock = (
    bytes: Buffer,
    docs: number,
    line: number,
    end: number,
    step: 0 | 1,
    endOfDoc: 'newline' | 'value',
  ) => {
    blocks++;
    const copy = Buffer.from(bytes); // a view of the chunk: copy, as the loader does
    const lines = copy.toString().split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    expect(lines.length).toBe(docs);
    const startOffset = end - copy.length;
    let p = 0;
    lines.forEach((l, k) => {
      const lineEnd = p + Buffer.byteLength(l) + 1;
      const textEnd = p + Buffer.byteLength(l.replace(/[ \t\r\f]+$/, ''));
      expect(l.trim(), 'no blank line in a block').not.toBe('');
      const e = k === docs - 1 ? end : startOffset + (endOfDoc === 'newline' ? lineEnd : textEnd);
      out.push({ doc: l, line: line + k * step, end: e });
      p = lineEnd;
    });
    return !pause;
  };
  for (let i = 0; i < buf.length; i += chunk) {
    const piece = buf.subarray(i, i + chunk);
    let off = 0;
    let rounds = 0;
    do {
      off += p.feed(piece.subarray(off), emit, emitBlock);
      if (++rounds > 1e6) throw new Error('no progress');
    } while (off < piece.length || p.pending);
  }
  p.end(emit, emitBlock);
  return { recs: out, blocks };
}

/** A record as the engine sees it: surrounding blanks dropped; a multi-line element on one line. */
function normal(r: Rec): Rec {
  // A too-long line's text is cut where the parser gave up on it, which depends on the chunking.
  if (r.error) return { ...r, raw: r.raw?.slice(0, 40) };
  if (typeof r.doc !== 'string') return r;
  let doc = r.doc.replace(/^[ \t\r\f]+|[ \t\r\f]+$/g, '');
  if (doc.includes('\n')) doc = JSON.stringify(JSON.parse(doc));
  return { ...r, doc };
}

/** Blocks give the records per-record parsing gives, for every chunking, pausing and resume point. */
function checkBlocks(make: (start?: StartAt) => FormatParser, input: string, lineAt: (offset: number) => number) {
  const whole = run(make, input, 1 << 20).map(normal);
  for (const c of [...CHUNKS, 5, 11]) {
    expect(runBlocks(make, input, c).recs.map(normal)).toEqual(whole);
    expect(runBlocks(make, input, c, undefined, true).recs.map(normal)).toEqual(whole);
  }
  const buf = Buffer.from(input);
  whole.forEach((r, i) => {
    const rest = runBlocks(make, buf.subarray(r.end), 7, { offset: r.end, line: lineAt(r.end), resumed: true });
    expect(rest.recs.map(normal)).toEqual(whole.slice(i + 1));
  });
  return whole;
}

describe('blocks', () => {
  it('NDJSON: whole lines per chunk; blank lines, CRLF, a BOM and too-long lines as per record', () => {
    const input = '\ufeff{"id":1}\n\n{"id":2,"s":"a\\nb"}\r\n   \n\f\n{"id":\n  {"id":4}\n{"id":5}';
    checkBlocks((s) => new NdjsonParser(s), input, lineAtFn(input));
    const long = `{"id":1}\n{"x":"${'y'.repeat(100)}"}\n{"id":3}\n{"id":4}\n`;
    checkBlocks((s) => new NdjsonParser(s, 50), long, lineAtFn(long));
    // One chunk of 1000 lines is one block, not 1000 calls.
    const many = Array.from({ length: 1000 }, (_, i) => `{"id":${i}}\n`).join('');
    expect(runBlocks((s) => new NdjsonParser(s), many, 1 << 20).blocks).toBe(1);
  });

  it('JSON array: one element per line, all on one line, pretty-printed, non-objects', () => {
    const perLine = `[\n${Array.from({ length: 50 }, (_, i) => `{"id":${i},"t":["a","b"],"o":{"s":"x,]}\\"y"}}`).join(',\n')}\n]\n`;
    const oneLine = `[${Array.from({ length: 50 }, (_, i) => `{"id":${i}}`).join(',')}]`;
    const mixed =
      '[\n  {"id": 1, "s": "]},\\"{["},\n  {"id": 2,\n   "nested": {"a": [1, {"b": 2}]}},\n  42,\n  "str, with comma",\n  [1,2],\n  {"id": 3}, {"id": 4},\n\n{"id":5}\n]\n';
    for (const input of [perLine, oneLine, mixed]) checkBlocks((s) => new JsonArrayParser(s), input, lineAtFn(input));
    expect(runBlocks((s) => new JsonArrayParser(s), perLine, 1 << 20).blocks).toBeLessThanOrEqual(2);
    expect(runBlocks((s) => new JsonArrayParser(s), oneLine, 1 << 20).blocks).toBeLessThanOrEqual(2);
    // Broken structures stop the import as on the per-record path.
    const blocks = (input: string) => runBlocks((s) => new JsonArrayParser(s), input, 3);
    expect(() => blocks('[{"a":1}\n {"b":2}]')).toThrow(/expected ',' or '\]'.*line 2/);
    expect(() => blocks('[{"a":[1}]')).toThrow(/mismatched/);
    expect(() => blocks('[{"a":1},')).toThrow(/closing/);
    expect(() => blocks('[{"a":1')).toThrow(/inside the element/);
    expect(blocks(' [ ] ').recs).toEqual([]);
  });

  it('random documents and layouts: blocks and records agree', () => {
    const doc = fc.record({
      id: fc.integer(),
      s: fc.string({ unit: fc.constantFrom('a', ',', ']', '}', '{', '[', '"', '\\', ' ', 'é') }),
      a: fc.array(fc.oneof(fc.integer(), fc.constant({ x: [1] })), { maxLength: 3 }),
    });
    const element = fc.oneof(
      { weight: 8, arbitrary: doc.map((d) => JSON.stringify(d)) },
      { weight: 1, arbitrary: doc.map((d) => JSON.stringify(d, null, 1)) },
      { weight: 1, arbitrary: fc.constantFrom('1', '"s,]"', '[1,{"a":2}]', 'null') },
    );
    const sep = fc.constantFrom(',', ',\n', ' ,\n  ', '\n,', ',\r\n', ',\n\n');
    fc.assert(
      fc.property(fc.array(fc.tuple(element, sep), { maxLength: 12 }), (items) => {
        let text = '[';
        items.forEach(([e, s], i) => {
          text += e + (i < items.length - 1 ? s : '');
        });
        text += ']\n';
        checkBlocks((s) => new JsonArrayParser(s), text, lineAtFn(text));
        const nd = items.map(([e]) => e.replace(/\n/g, ' ')).join('\n');
        checkBlocks((s) => new NdjsonParser(s), nd, lineAtFn(nd));
      }),
      { numRuns: 60 },
    );
  });
});
