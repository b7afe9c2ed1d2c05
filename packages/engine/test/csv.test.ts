/**
 * `csvToNdjson` through the TS API: its documents go straight into a real database's bulk path,
 * its spans locate every record, and bad options are refused before the addon sees them.
 */
import { describe, expect, it } from 'vitest';
import { CSV_REJECT, csvToNdjson } from '../src/index.ts';
import { openTemp } from './helpers.ts';

describe('csvToNdjson', () => {
  it('makes documents insertNdjson takes, with each record located', async () => {
    const input = Buffer.from('id,name,age\r\n1,Ada,36\r\n2,"Grace\r\nHopper",x\r\n3,Alan,41\r\n4,Ke');
    const head = csvToNdjson(input);
    expect(head.header).toEqual(['id', 'name', 'age']);
    const columns = [
      { name: 'id', type: 'int' },
      { name: 'name', type: 'string' },
      { name: 'age', type: 'number' },
    ] as const;
    const rest = input.subarray(head.consumed);
    const batch = csvToNdjson(rest, { columns, newline: 'crlf' });
    // 4 numbers per record: lines before it, input end, document bounds (a reject: none).
    expect(Array.from(batch.records)).toEqual([0, 10, 0, 30, 1, 31, CSV_REJECT, CSV_REJECT, 3, 42, 31, 62]);
    expect(batch.errors).toEqual([
      { record: 1, message: 'column "age": "x" is not a number', raw: '2,"Grace\r\nHopper",x' },
    ]);
    expect(batch.consumed).toBe(42); // "4,Ke" is unfinished
    const end = csvToNdjson(rest.subarray(batch.consumed), { columns, newline: 'crlf', atEnd: true });
    expect(end.errors[0]?.message).toBe('2 fields, the header has 3');

    const { db } = await openTemp();
    try {
      await db.createTable('people', { primaryKey: 'id' });
      const result = await db.table('people').insertNdjson(batch.ndjson);
      expect(result.inserted).toBe(2);
      expect(await db.table('people').get(3)).toEqual({ id: 3, name: 'Alan', age: 41 });
    } finally {
      await db.close();
    }
  });

  it('reports a quoting error at its record, after the records before it', () => {
    const batch = csvToNdjson(Buffer.from('1\n"2"x\n3\n'), { columns: [{ name: 'a', type: 'auto' }], atEnd: true });
    expect(batch.ndjson.toString()).toBe('{"a":1}\n');
    expect(batch.syntaxError).toMatchObject({ line: 1, message: expect.stringMatching(/^Invalid Closing Quote/) });
  });

  it('refuses bad options with a TypeError naming them', () => {
    const input = Buffer.from('a\n');
    expect(() => csvToNdjson(input, { delimiter: '||' })).toThrow(/delimiter must be one ASCII character/);
    expect(() => csvToNdjson(input, { newline: 'x' as 'lf' })).toThrow(/newline must be/);
    expect(() => csvToNdjson(input, { maxRecordBytes: -1 })).toThrow(/maxRecordBytes/);
    expect(() => csvToNdjson(input, { columns: [{ name: 'a', type: 'date' as 'int' }] })).toThrow(/column 1 needs/);
    expect(() => csvToNdjson('a' as unknown as Buffer)).toThrow(/Buffer or Uint8Array/);
  });
});
