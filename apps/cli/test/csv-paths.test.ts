/**
 * The two CSV paths (@wharf/engine's native transcoder and csv-parse, used when the engine is not
 * installed) give the same documents, rejects, lines, offsets and input errors on the same inputs:
 * chosen edge cases, then generated ones (fast-check), each fed in random chunk sizes.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { CsvParser, type CsvTypes, loadNativeCsv } from '../src/commands/import/formats/index.js';

interface Outcome {
  records: { doc?: unknown; line: number; end: number; error?: string; raw?: string }[];
  /** The input error that stopped the parse: its kind (the message up to its first `:`) and line. */
  failure?: { kind: string; line: number };
}

function parseAll(native: boolean, input: Buffer, delimiter: string, types: CsvTypes, chunk: number): Outcome {
  const p = new CsvParser({ delimiter, types, native });
  const records: Outcome['records'] = [];
  const emit = (doc: unknown, line: number, end: number, error?: string, raw?: string) => {
    if (error) records.push({ line, end, error, raw });
    // What reaches the engine: the native path's JSON bytes, csv-parse's object as the loader encodes it.
    else
      records.push({
        doc: JSON.parse(doc instanceof Uint8Array ? Buffer.from(doc).toString() : JSON.stringify(doc)),
        line,
        end,
      });
  };
  try {
    for (let i = 0; i < input.length; i += chunk) p.feed(input.subarray(i, i + chunk), emit);
    p.end(emit);
  } catch (err) {
    const e = err as Error & { line?: number };
    return { records, failure: { kind: e.message.split(':')[0]!, line: e.line ?? -1 } };
  }
  return { records };
}

function expectSamePaths(input: string | Buffer, delimiter = ',', types: CsvTypes = 'none', chunks = [1, 3, 1 << 20]) {
  const buf = typeof input === 'string' ? Buffer.from(input) : input;
  const reference = parseAll(false, buf, delimiter, types, 1 << 20);
  for (const chunk of chunks) {
    expect(
      parseAll(true, buf, delimiter, types, chunk),
      `native, chunks of ${chunk}: ${JSON.stringify(input)}`,
    ).toEqual(reference);
  }
  return reference;
}

beforeAll(async () => {
  expect(await loadNativeCsv()).toBe(true);
});

describe('CSV: the native path and csv-parse agree', () => {
  it('on chosen edge cases', () => {
    const cases: [string, string?, CsvTypes?][] = [
      ['id,name,age\n1,Ada,36\n\n2,"Grace\nHopper",85\n3,only-two\n4,"Alan, ""T""",41\n'],
      ['id,name\r\n1,Ada\r\n\r\n2,"Gr\r\nace"\r\n3\r\n'],
      ['\ufeffid,name\n1,x\n'],
      ['a,b\n1,2', ',', 'auto'],
      ['a,b,c,d,e,f,g\n1,true,,x,-2.5e3,null,1.50\n-0,01,1e400,12345678901234567890,0.1,"",-\n', ',', 'auto'],
      ['a,b,c\n0.000001,0.0000001,1e21\n123456789012345.6,1.0000000000000002,-0.0\n', ',', 'auto'],
      [
        'id:int,tags:json,ok:boolean,zip:string,n:number,x:auto\n7,"[""a"", {""b"" :\n 1}]",YES,01234, 2.0 ,1\nx,[],no,1,,\n1.5,,,,,\n1,{,1,,,\n1,,maybe,,,\n1,,,,1e999,\n9007199254740993,,,,,\n',
        ',',
        'header',
      ],
      ['j:json,k:json\n-0,"[-0.0, 1.50, 1e400, {""a"": 1E2, ""a"": 2}]"\n', ',', 'header'],
      ['a\tb\n"x\ty\n1\t2\t3\n', '\t'],
      ['a;b\n1;"2;3"\n', ';'],
      ['a,b\n1,"2"x\n3,4\n'],
      ['a,b\n1,2"x\n'],
      ['a,b\n1, "2"\n'],
      ['a,b\n1,2\n3,"4\n5,6\n'],
      ['a,"b\n'],
      ['a,a\n1,2\n'],
      ['a:date\n1\n', ',', 'header'],
      [''],
      ['\n\n'],
      ['a\n\n\n'],
      ['a,b\n\u00e9,\u{1F600}\n'],
      ['name\n"line1\nline2\nline3"\nnext\n'],
    ];
    for (const [input, delimiter, types] of cases) expectSamePaths(input, delimiter, types);
    // Invalid UTF-8 reads as U+FFFD on both paths.
    expectSamePaths(Buffer.from([0x61, 0x0a, 0xff, 0x62, 0x0a, 0xe2, 0x82, 0x0a]));
  });

  it('on generated inputs', () => {
    const token = fc.constantFrom(
      'x',
      '1',
      '-0',
      '2.50',
      '1e3',
      '007',
      'true',
      'FALSE',
      'null',
      'yes',
      ' ',
      '',
      ',',
      ',',
      ',',
      '"',
      '""',
      '"q,\n"',
      '\n',
      '\n',
      '[1, 2]',
      '{"k":"v"}',
      'é',
    );
    const header = fc.constantFrom('a,b,c', 'a:int,b:json,c:boolean', 'a:number,b:auto,c:string', 'a');
    fc.assert(
      fc.property(
        header,
        fc.array(token, { maxLength: 40 }),
        fc.constantFrom<CsvTypes>('none', 'auto', 'header'),
        fc.boolean(),
        fc.integer({ min: 1, max: 64 }),
        (head, tokens, types, crlf, chunk) => {
          const nl = crlf ? '\r\n' : '\n';
          const input = `${head}\n${tokens.join('')}`.replaceAll('\n', nl);
          expectSamePaths(input, ',', types, [chunk, 1 << 20]);
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('CSV: the native path', () => {
  it('is the default once loaded, for a one-byte delimiter (csv-parse takes the others)', () => {
    expect(new CsvParser({ delimiter: ',', types: 'none' }).path).toBe('native');
    expect(new CsvParser({ delimiter: '\t', types: 'none' }).path).toBe('native');
    expect(new CsvParser({ delimiter: '::', types: 'none' }).path).toBe('csv-parse');
    expect(new CsvParser({ delimiter: '§', types: 'none' }).path).toBe('csv-parse');
  });

  it('rejects and skips a record longer than the limit, quoted line breaks included', () => {
    const long = `a,b\n1,x\n2,"${'y\n'.repeat(60)}"\n3,z\n`;
    for (const chunk of [1, 7, 1000]) {
      const p = new CsvParser({ delimiter: ',', types: 'none', native: true }, undefined, 50);
      const out: unknown[] = [];
      const emit = (doc: unknown, line: number, end: number, error?: string) => {
        out.push([line, end, error ?? JSON.parse(Buffer.from(doc as Uint8Array).toString())]);
      };
      for (let i = 0; i < long.length; i += chunk) p.feed(Buffer.from(long.slice(i, i + chunk)), emit);
      p.end(emit);
      expect(out).toEqual([
        [2, 8, { a: '1', b: 'x' }],
        [3, long.indexOf('3,z'), 'record longer than 50 bytes'],
        [64, long.length, { a: '3', b: 'z' }],
      ]);
    }
  });
});
