/**
 * Bytes written per byte loaded, through the binding: the counters by kind match the files a
 * load leaves on disk, `stats()` after `close()` includes the close's final checkpoint, and a
 * load in key order into an empty table writes each loaded byte at most twice.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openTempTable } from './helpers.ts';

/** `n` documents of ~150 bytes with ascending keys, as NDJSON batches of `batch` lines. */
function batches(n: number, batch: number): { lines: string[]; bytes: number } {
  const lines: string[] = [];
  let bytes = 0;
  for (let start = 0; start < n; start += batch) {
    const docs: string[] = [];
    for (let i = start; i < Math.min(n, start + batch); i++) {
      const doc = JSON.stringify({
        id: `k${String(i).padStart(9, '0')}`,
        name: `user ${i}`,
        email: `user${i}@example.com`,
        age: 18 + (i % 70),
        city: ['Tallinn', 'Kyoto', 'Lagos', 'Lima'][i % 4],
        score: (i * 7.31) % 100,
        tags: ['delta', 'kappa'],
        active: i % 2 === 0,
      });
      bytes += Buffer.byteLength(doc);
      docs.push(doc);
    }
    lines.push(docs.join('\n'));
  }
  return { lines, bytes };
}

const sizeOf = (dir: string, pattern: RegExp) =>
  readdirSync(dir)
    .filter((name) => pattern.test(name))
    .reduce((sum, name) => sum + statSync(join(dir, name)).size, 0);

describe('bytes written per byte loaded', () => {
  it('counts what a load writes, by kind, up to and including the final checkpoint', async () => {
    // A 4 MiB budget: checkpoints every ~1 MiB of memtable, so ~6 MB of documents make many runs.
    const { db, dir, t } = await openTempTable('t', { memoryBudget: 4 << 20 });
    const { lines, bytes } = batches(40_000, 2000);
    for (const ndjson of lines) expect((await t.insertNdjson(ndjson, { durability: 'soft' })).errors).toBe(0);
    await db.sync();
    const open = db.stats();
    expect(open.bytesLoaded).toBe(bytes);
    await db.close();
    const s = db.stats();
    expect(s.bytesLoaded).toBe(bytes);
    // The close's checkpoint wrote the last memtable: after close the runs hold every document.
    expect(s.bytesWrittenFlushes).toBeGreaterThan(open.bytesWrittenFlushes);
    expect(s.checkpoints).toBeGreaterThan(4);
    // Ascending keys: the runs never overlap, so nothing is merged, and every run file written is
    // still there, byte for byte.
    expect(s.merges).toBe(0);
    expect(s.bytesWrittenMerges).toBe(0);
    expect(s.bytesWrittenFlushes).toBe(sizeOf(dir, /^run-\d+\.wrun$/));
    // New journal segments are zero-filled once: the other bytes hold at least their files.
    expect(s.bytesWrittenOther).toBeGreaterThanOrEqual(sizeOf(dir, /^journal-\d+\.wal$/));
    expect(s.bytesWritten).toBe(
      s.bytesWrittenJournal + s.bytesWrittenFlushes + s.bytesWrittenMerges + s.bytesWrittenOther,
    );
    const perByte = (s.bytesWrittenJournal + s.bytesWrittenFlushes + s.bytesWrittenMerges) / bytes;
    expect(s.bytesWrittenPerByteLoaded).toBeCloseTo(perByte, 9);
    expect(perByte).toBeLessThanOrEqual(2);
  });
});
