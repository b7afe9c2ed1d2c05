/**
 * Change feeds through the binding (`table.changes()`): every write applied to the table arrives
 * once, in commit order, with its old and new versions, whichever write path made it; a feed
 * nobody reads holds at most `queueSize` changes and reports what it dropped; a dropped table or a
 * closed database ends the feed; `close()` unsubscribes.
 */
import { describe, expect, it } from 'vitest';
import { type ChangeBatch, type ChangeFeed, Database } from '../src/index.ts';
import { openTempTable, tempDir } from './helpers.ts';

type Doc = { id: number; v?: string; w?: number };

/** Batches until `n` changes (and skips) were seen. */
async function collect(feed: ChangeFeed<Doc>, n: number): Promise<ChangeBatch<Doc>> {
  const all: ChangeBatch<Doc> = { changes: [], skipped: 0 };
  while (all.changes.length + all.skipped < n) {
    const r = await feed.next();
    if (r.done) break;
    all.changes.push(...r.value.changes);
    all.skipped += r.value.skipped;
  }
  return all;
}

describe('table.changes()', () => {
  it('delivers every write once, in commit order, with old and new versions', async () => {
    const { t } = await openTempTable<Doc>();
    await t.insert({ id: 0, v: 'before' });
    const feed = t.changes();
    await t.insert({ id: 1, v: 'a' }, { durability: 'soft' });
    await t.insertNdjson('{"id":2,"v":"b"}\n{"id":3,"v":"c"}\n');
    await t.insert({ id: 1, v: 'dup' }); // refused: no change
    await t.insert({ id: 1, v: 'a2' }, { conflict: 'replace' });
    await t.insert({ id: 2, w: 1 }, { conflict: 'update' });
    await t.delete([3, 99]);
    const got = await collect(feed, 6);
    expect(got.skipped).toBe(0);
    expect(got.changes).toEqual([
      { key: 1, old: null, new: { id: 1, v: 'a' } },
      { key: 2, old: null, new: { id: 2, v: 'b' } },
      { key: 3, old: null, new: { id: 3, v: 'c' } },
      { key: 1, old: { id: 1, v: 'a' }, new: { id: 1, v: 'a2' } },
      { key: 2, old: { id: 2, v: 'b' }, new: { id: 2, v: 'b', w: 1 } },
      { key: 3, old: { id: 3, v: 'c' }, new: null },
    ]);
    feed.close();
    expect((await feed.next()).done).toBe(true);
  });

  it('holds at most queueSize changes for a reader that falls behind, and counts the rest', async () => {
    const { t } = await openTempTable<Doc>();
    const feed = t.changes({ queueSize: 100 });
    const lines = Array.from({ length: 5000 }, (_, i) => JSON.stringify({ id: i })).join('\n');
    await t.insertNdjson(lines);
    const got = await collect(feed, 5000);
    expect(got.changes.length).toBe(100);
    expect(got.changes.map((c) => c.key)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(got.skipped).toBe(4900);
    // Read again: the feed goes on.
    await t.insert({ id: 9999 });
    expect((await collect(feed, 1)).changes).toEqual([{ key: 9999, old: null, new: { id: 9999 } }]);
    feed.close();
  });

  it('ends when the table is dropped, and when the database closes', async () => {
    const dir = await tempDir();
    const db = await Database.open(dir);
    await db.createTable('a');
    await db.createTable('b');
    const a = db.table<Doc>('a').changes();
    const b = db.table<Doc>('b').changes();
    const aEnd = (async () => {
      for await (const _ of a) {
        // nothing is written to a
      }
      return 'ended';
    })();
    await db.dropTable('a');
    expect(await aEnd).toBe('ended');
    await db.table<Doc>('b').insert({ id: 1 });
    expect((await b.next()).value).toEqual({ changes: [{ key: 1, old: null, new: { id: 1 } }], skipped: 0 });
    const pending = b.next();
    await db.close();
    expect((await pending).done).toBe(true);
  });

  it('refuses a bad queueSize and a missing table', async () => {
    const { t, db } = await openTempTable<Doc>();
    expect(() => t.changes({ queueSize: 0 })).toThrow(/queueSize must be an integer from 1/);
    expect(() => db.table('nope').changes()).toThrow(expect.objectContaining({ code: 'WHARF_ERR_TABLE_NOT_FOUND' }));
  });
});
