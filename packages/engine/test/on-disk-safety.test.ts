/**
 * Options that shape the files on disk come from the database (a different one is ignored, and
 * said in `openNotes`), and the one document depth limit, as the TS API shows them.
 */
import { describe, expect, it } from 'vitest';
import { Database, MAX_DOCUMENT_DEPTH } from '../src/index.ts';
import { openTemp } from './helpers.ts';

/** `{"id":key,"a":{"a":…[key]…}}` with `depth` levels of objects and arrays, the document being 1. */
function nested(key: number, depth: number): string {
  return `{"id":${key},"a":${'{"a":'.repeat(depth - 2)}[${key}]${'}'.repeat(depth - 2)}}`;
}

describe('on-disk options', () => {
  it('a database reopened with a smaller segmentSize keeps its own, every hard write, and says so', async () => {
    const { db, dir } = await openTemp({ segmentSize: 1 << 20 });
    await db.createTable('t');
    const t = db.table('t');
    for (let k = 0; k < 2000; k++) await t.insert({ id: k, pad: 'x'.repeat(300) }, { durability: 'hard' });
    expect(db.openNotes).toEqual([]);
    await db.close();
    const again = await Database.open(dir, { segmentSize: 64 << 10 });
    try {
      expect(again.stats().segmentSize).toBe(1 << 20);
      expect(again.openNotes).toHaveLength(1);
      expect(again.openNotes[0]).toMatch(
        /segment size 65536 bytes ignored: this database was created with 1048576-byte journal segments/,
      );
      expect(await again.table('t').count()).toBe(2000);
      expect(await again.table('t').get(1999)).toEqual({ id: 1999, pad: 'x'.repeat(300) });
    } finally {
      await again.close();
    }
  });
});

describe('document depth', () => {
  it('is one exported limit: at it a document is stored and read back, past it refused with its line', async () => {
    expect(MAX_DOCUMENT_DEPTH).toBe(128);
    const { db } = await openTemp();
    await db.createTable('t');
    const t = db.table('t');
    const lines = [nested(1, MAX_DOCUMENT_DEPTH), nested(2, MAX_DOCUMENT_DEPTH + 1), nested(3, 10_000)];
    const result = await t.insertNdjson(lines.join('\n'));
    expect(result).toMatchObject({ inserted: 1, errors: 2 });
    expect(result.document_errors!.map((e) => e.index)).toEqual([1, 2]);
    for (const e of result.document_errors!)
      expect(e.message).toMatch(/nested deeper than the limit of 128 levels of objects and arrays \(at column \d+\)/);
    expect(await t.get(1)).toEqual(JSON.parse(lines[0]!));
    expect(await t.count()).toBe(1);
  });
});
