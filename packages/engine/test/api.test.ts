import { describe, expect, it } from 'vitest';
import { Database } from '../src/index.ts';
import { openTemp, rejection, tempDir, withDb } from './helpers.ts';

describe('tables', () => {
  it('creates, lists and drops tables', async () => {
    const { db } = await openTemp();
    await db.createTable('people');
    await db.createTable('orders', { primaryKey: 'orderId' });
    expect(db.listTables()).toEqual([
      { name: 'orders', primaryKey: 'orderId', documents: 0, bytes: 0 },
      { name: 'people', primaryKey: 'id', documents: 0, bytes: 0 },
    ]);

    await db.table('people').insert([{ id: 1 }, { id: 2 }]);
    const [, people] = db.listTables();
    expect(people).toMatchObject({ name: 'people', documents: 2 });
    expect(people!.bytes).toBeGreaterThan(0);

    await db.dropTable('people');
    expect(db.listTables().map((t) => t.name)).toEqual(['orders']);
    // A dropped table's name can be used again, and the new table starts empty.
    await db.createTable('people');
    expect(await db.table('people').count()).toBe(0);
  });

  it('uses the table primary key for documents', async () => {
    const { db } = await openTemp();
    await db.createTable('orders', { primaryKey: 'orderId' });
    const orders = db.table('orders');
    await orders.insert({ orderId: 'a-1', total: 3 });
    expect(await orders.get('a-1')).toEqual({ orderId: 'a-1', total: 3 });
    const result = await orders.insert({ id: 7 });
    expect(result.inserted).toBe(1);
    expect(result.generated_keys).toHaveLength(1);
    expect(await orders.get(result.generated_keys![0]!)).toEqual({ orderId: result.generated_keys![0], id: 7 });
  });

  it('db.table does no I/O: a missing table fails on use', async () => {
    const { db } = await openTemp();
    const ghost = db.table('ghost');
    expect(ghost.name).toBe('ghost');
    for (const op of [
      () => ghost.get(1),
      () => ghost.getMany([1]),
      () => ghost.count(),
      () => ghost.scan(),
      () => ghost.insert({ id: 1 }),
      () => ghost.insertNdjson('{"id":1}\n'),
      () => ghost.delete(1),
    ]) {
      expect((await rejection(op())).code).toBe('WHARF_ERR_TABLE_NOT_FOUND');
    }
  });
});

describe('documents', () => {
  it('inserts, gets, counts and deletes', async () => {
    const { db } = await openTemp();
    await db.createTable('t');
    const t = db.table('t');
    const doc = { id: 'ada', name: 'Ada Lovelace', born: 1815, tags: ['math', 'poetry'], nested: { a: { b: null } } };
    expect(await t.insert(doc)).toEqual({ inserted: 1, replaced: 0, unchanged: 0, deleted: 0, skipped: 0, errors: 0 });
    expect(await t.get('ada')).toEqual(doc);
    expect(await t.get('nobody')).toBeNull();
    expect(await t.count()).toBe(1);

    await t.insert([{ id: 1 }, { id: 2 }, { id: 3 }]);
    expect(await t.getMany([3, 'ada', 'nobody', 1])).toEqual([{ id: 3 }, doc, null, { id: 1 }]);
    expect(await t.getMany([])).toEqual([]);

    expect(await t.delete(2)).toMatchObject({ deleted: 1, skipped: 0 });
    expect(await t.delete([1, 2, 'nobody'])).toMatchObject({ deleted: 1, skipped: 2 });
    expect(await t.count()).toBe(2);
    expect(await t.get(1)).toBeNull();
  });

  it('answers point reads from memory on the calling thread, and from run files after a reopen', async () => {
    const dir = await tempDir();
    const db = await Database.open(dir);
    await db.createTable('t');
    await db
      .table('t')
      .insertNdjson(Array.from({ length: 3000 }, (_, i) => JSON.stringify({ id: i, v: 'x'.repeat(50) })).join('\n'));
    const before = db.stats().readsFromMemory;
    expect(await db.table('t').get(7)).toEqual({ id: 7, v: 'x'.repeat(50) });
    expect(await db.table('t').getMany([8, 'none'])).toEqual([{ id: 8, v: 'x'.repeat(50) }, null]);
    // Both were memtable hits: no thread pool.
    expect(db.stats().readsFromMemory).toBe(before + 2);
    await db.close();

    // Reopened, the documents are in run files: from the page cache or the disk, same answers.
    await withDb(dir, async (again) => {
      expect(again.stats().runs).toBeGreaterThan(0);
      expect(await again.table('t').get(2999)).toEqual({ id: 2999, v: 'x'.repeat(50) });
      expect(await again.table('t').getMany([0, 1500, 3000])).toEqual([
        { id: 0, v: 'x'.repeat(50) },
        { id: 1500, v: 'x'.repeat(50) },
        null,
      ]);
      expect(again.stats().reads).toBe(2);
    });
  });

  it('keeps unicode, numbers and escapes exactly', async () => {
    const { db } = await openTemp();
    await db.createTable('t');
    const t = db.table('t');
    const doc = {
      id: 'ключ-🔑',
      text: 'line\nbreak "quoted" \\ tab\t \u0000 é',
      float: 0.1 + 0.2,
      big: 2 ** 53 - 1,
      neg: -1e-300,
      bool: false,
      empty: {},
    };
    await t.insert(doc);
    expect(await t.get('ключ-🔑')).toEqual(doc);
  });

  it('numeric keys: -0 and 0 are one key, and fractional keys work', async () => {
    const { db } = await openTemp();
    await db.createTable('t');
    const t = db.table('t');
    await t.insert([{ id: 0 }, { id: 1.5 }]);
    expect(await t.get(-0)).toEqual({ id: 0 });
    expect(await t.get(1.5)).toEqual({ id: 1.5 });
    expect((await t.insert({ id: -0 })).errors).toBe(1);
  });

  it('bulk NDJSON and JSON array paths, from strings and Buffers', async () => {
    const { db } = await openTemp();
    await db.createTable('t');
    const t = db.table('t');
    expect(await t.insertNdjson('{"id":1}\n\n{"id":2}\r\n{"id":3}')).toMatchObject({ inserted: 3, errors: 0 });
    expect(await t.insertNdjson(Buffer.from('{"id":4}\n'))).toMatchObject({ inserted: 1 });
    expect(await t.insertJsonArray('[{"id":5},{"id":6}]')).toMatchObject({ inserted: 2 });
    const bytes = new TextEncoder().encode('[{"id":7}]');
    expect(await t.insertJsonArray(bytes)).toMatchObject({ inserted: 1 });
    expect(await t.count()).toBe(7);
  });

  it('parses large batches off the event loop with the same results', async () => {
    const { db } = await openTemp();
    await db.createTable('t');
    const t = db.table('t');
    // Over the 64 KiB inline-parse threshold, with a bad line in the middle.
    const lines = Array.from({ length: 3000 }, (_, i) => JSON.stringify({ id: i, pad: 'x'.repeat(40) }));
    lines[1500] = '{"id": oops}';
    const data = Buffer.from(lines.join('\n'));
    expect(data.length).toBeGreaterThan(64 << 10);
    const result = await t.insertNdjson(data);
    expect(result).toMatchObject({ inserted: 2999, errors: 1 });
    expect(result.document_errors).toEqual([{ index: 1500, message: expect.any(String) }]);
    expect(await t.count()).toBe(2999);
    // The JSON-array form, as a string.
    const big = JSON.stringify(Array.from({ length: 3000 }, (_, i) => ({ id: `s${i}`, pad: 'y'.repeat(40) })));
    expect(await t.insertJsonArray(big)).toMatchObject({ inserted: 3000, errors: 0 });
  });

  it('applies writes in the order they were made, large batches parsed on the pool included', async () => {
    const { db } = await openTemp();
    await db.createTable('t');
    const t = db.table('t');
    const batch = (n: number, v: number) =>
      Buffer.from(Array.from({ length: n }, (_, i) => JSON.stringify({ id: i, v, pad: 'p'.repeat(40) })).join('\n'));
    // The first batch takes longest to parse: unordered, the later writes would land first.
    const first = batch(40_000, 1);
    const second = batch(2_000, 2);
    expect(second.length).toBeGreaterThan(64 << 10);
    const writes = [
      t.insertNdjson(first, { durability: 'soft' }),
      t.insertNdjson(second, { durability: 'soft', conflict: 'replace' }),
      t.insert({ id: 0, v: 3 }, { durability: 'soft', conflict: 'replace' }),
      t.delete(1, { durability: 'soft' }),
    ];
    const durableAtSync = db.sync().then(() => db.stats().durableSeq); // covers every write made before it
    expect(await Promise.all(writes)).toMatchObject([
      { inserted: 40_000 },
      { replaced: 2_000 },
      { replaced: 1 },
      { deleted: 1 },
    ]);
    expect(await durableAtSync).toBeGreaterThanOrEqual(db.stats().appliedSeq);
    expect(await t.getMany([0, 1, 2, 1999, 2000])).toMatchObject([{ v: 3 }, null, { v: 2 }, { v: 2 }, { v: 1 }]);
  });

  it('writes a large batch made just before close before closing', async () => {
    const dir = await tempDir();
    const db = await Database.open(dir, { segmentSize: 1 << 20 });
    await db.createTable('t');
    const lines = Array.from({ length: 5_000 }, (_, i) => JSON.stringify({ id: i, pad: 'q'.repeat(40) }));
    const write = db.table('t').insertNdjson(Buffer.from(lines.join('\n')), { durability: 'soft' });
    await db.close();
    expect(await write).toMatchObject({ inserted: 5_000 });
    const again = await Database.open(dir, { segmentSize: 1 << 20 });
    try {
      expect(await again.table('t').count()).toBe(5_000);
    } finally {
      await again.close();
    }
  });

  it('many writes in flight at once all settle', async () => {
    const { db } = await openTemp();
    await db.createTable('t');
    const t = db.table('t');
    const results = await Promise.all(
      Array.from({ length: 500 }, (_, i) => t.insert({ id: i }, { durability: i % 2 ? 'soft' : 'hard' })),
    );
    expect(results.every((r) => r.inserted === 1)).toBe(true);
    expect(await t.count()).toBe(500);
  });
});

describe('single-document inserts made in one tick', () => {
  it('from writers resumed together make one group, one fdatasync, a round', async () => {
    // A long window (the committer waits up to an eighth of it between a cohort's calls), so that
    // no pause of a loaded machine splits a round.
    const { db } = await openTemp({ groupCommitWindowMs: 50 });
    await db.createTable('t');
    const t = db.table('t');
    const writers = 100;
    const rounds = 10;
    const before = db.stats();
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        for (let i = 0; i < rounds; i++) expect((await t.insert({ id: `${w}-${i}` })).inserted).toBe(1);
      }),
    );
    const after = db.stats();
    expect(after.maxGroupOps).toBe(writers);
    // A round goes in three calls (16, 32, 52 documents): one group each would be 30. The first
    // round has no cohort to wait for yet, and a rare pause may split one more.
    expect(after.fdatasyncs - before.fdatasyncs).toBeLessThanOrEqual(rounds + 3);
    expect(await t.count()).toBe(writers * rounds);
  });

  it('more of them than one call carries (4096) are sent in several, each answered', async () => {
    const { db } = await openTemp();
    await db.createTable('t');
    const t = db.table('t');
    // `{}` (keys generated): the id count splits the calls, before their 32 KiB of text does.
    const n = 10_000;
    const results = await Promise.all(Array.from({ length: n }, () => t.insert({}, { durability: 'soft' })));
    expect(results.every((r) => r.inserted === 1 && r.generated_keys?.length === 1)).toBe(true);
    expect(new Set(results.map((r) => r.generated_keys![0])).size).toBe(n);
    expect(await t.count()).toBe(n);
  });

  it('keep their order with every other request, each with its own result', async () => {
    const { db } = await openTemp();
    await db.createTable('t');
    await db.createTable('u', { primaryKey: 'name' });
    const t = db.table('t');
    const u = db.table('u');
    const big = { id: 'big', pad: 'z'.repeat(40_000) }; // longer than one batch: sent alone
    const answers = await Promise.all([
      t.insert({ id: 1, v: 'a' }),
      t.insert({ id: 1, v: 'b' }), // a duplicate of the write just before it
      t.insert({ id: 2 }, { durability: 'soft' }),
      t.delete(2),
      u.insert({ name: 'x' }),
      t.insert({ id: 2, v: 'again' }, { conflict: 'replace' }),
      t.insert(big),
      t.insert({ v: 'no key' }),
      db.sync(),
    ]);
    expect(answers.slice(0, 8)).toMatchObject([
      { inserted: 1 },
      { inserted: 0, errors: 1 },
      { inserted: 1 },
      { deleted: 1 },
      { inserted: 1 },
      { inserted: 1 },
      { inserted: 1 },
      { inserted: 1, generated_keys: [expect.any(String)] },
    ]);
    expect(await t.get(1)).toEqual({ id: 1, v: 'a' });
    expect(await t.get(2)).toEqual({ id: 2, v: 'again' });
    expect(await t.get('big')).toEqual(big);
    expect(await u.get('x')).toEqual({ name: 'x' });
  });

  it('fail together with their table, not with the writes around them', async () => {
    const { db } = await openTemp();
    await db.createTable('t');
    const [ok, ...ghosts] = await Promise.allSettled([
      db.table('t').insert({ id: 1 }),
      db.table('ghost').insert({ id: 1 }),
      db.table('ghost').insert({ id: 2 }),
    ]);
    expect(ok).toMatchObject({ status: 'fulfilled', value: { inserted: 1 } });
    for (const g of ghosts)
      expect(g).toMatchObject({ status: 'rejected', reason: { code: 'WHARF_ERR_TABLE_NOT_FOUND' } });
  });

  it('made just before close are written before it', async () => {
    const dir = await tempDir();
    const db = await Database.open(dir, { segmentSize: 1 << 20 });
    await db.createTable('t');
    const writes = Array.from({ length: 10 }, (_, i) => db.table('t').insert({ id: i }, { durability: 'soft' }));
    await db.close();
    expect((await Promise.all(writes)).every((r) => r.inserted === 1)).toBe(true);
    const again = await Database.open(dir, { segmentSize: 1 << 20 });
    try {
      expect(await again.table('t').count()).toBe(10);
    } finally {
      await again.close();
    }
  });
});

describe('scan', () => {
  async function filled() {
    const { db } = await openTemp();
    await db.createTable('t');
    const t = db.table('t');
    // Inserted out of order, mixing numbers and strings.
    const keys = ['b', 10, 'a', -5, 'ab', 2.5, 'B', 0, '', 'é'];
    await t.insert(keys.map((id) => ({ id })));
    return t;
  }
  const ids = (docs: { id?: unknown }[]) => docs.map((d) => d.id);

  it('returns documents in key order: numbers by value, then strings by UTF-8 bytes', async () => {
    const t = await filled();
    expect(ids(await t.scan())).toEqual([-5, 0, 2.5, 10, '', 'B', 'a', 'ab', 'b', 'é']);
    expect(ids(await t.scan({ reverse: true }))).toEqual([-5, 0, 2.5, 10, '', 'B', 'a', 'ab', 'b', 'é'].reverse());
  });

  it('bounds, limits and reverses', async () => {
    const t = await filled();
    expect(ids(await t.scan({ gt: 0, lt: 'a' }))).toEqual([2.5, 10, '', 'B']);
    expect(ids(await t.scan({ gte: 0, lte: 'a' }))).toEqual([0, 2.5, 10, '', 'B', 'a']);
    expect(ids(await t.scan({ gte: 'a' }))).toEqual(['a', 'ab', 'b', 'é']);
    expect(ids(await t.scan({ lt: 0 }))).toEqual([-5]);
    expect(ids(await t.scan({ gt: 'a', limit: 2 }))).toEqual(['ab', 'b']);
    expect(ids(await t.scan({ lte: 10, limit: 2, reverse: true }))).toEqual([10, 2.5]);
    expect(ids(await t.scan({ gte: 'b', lte: 'a' }))).toEqual([]);
    expect(ids(await t.scan({ gt: 'a', lt: 'a' }))).toEqual([]);
    expect(ids(await t.scan({ limit: 0 }))).toEqual([]);
  });
});

describe('stats and reopen', () => {
  it('counts commits, groups and fdatasyncs', async () => {
    const { db } = await openTemp();
    await db.createTable('t');
    const before = db.stats();
    await db.table('t').insert({ id: 1 });
    const after = db.stats();
    expect(after.commits).toBe(before.commits + 1);
    expect(after.documentsWritten).toBe(before.documentsWritten + 1);
    expect(after.groups).toBeGreaterThan(before.groups);
    expect(after.fdatasyncs).toBeGreaterThan(before.fdatasyncs);
    expect(after.bytesJournaled).toBeGreaterThan(before.bytesJournaled);
    expect(after.poisoned).toBe(false);
    expect(Array.isArray(after.groupOpsHistogram)).toBe(true);
    expect(typeof after.recoveryMs).toBe('number');
  });

  it('times each write through its stages', async () => {
    const { db } = await openTemp();
    await db.createTable('t');
    const stages = () => db.stats().writeStages;
    const counts = () => Object.fromEntries(Object.entries(stages()).map(([name, stage]) => [name, stage.count]));
    expect(counts()).toEqual({ poolWait: 0, parse: 0, queue: 0, commit: 0, delivery: 0 });
    await db.table('t').insert({ id: 1 }, { durability: 'hard' });
    await db.table('t').delete(1, { durability: 'soft' });
    // A small write is parsed inside the call: no pool stages.
    expect(counts()).toEqual({ poolWait: 0, parse: 0, queue: 2, commit: 2, delivery: 2 });
    // A batch of 64 KiB or more is parsed on the pool.
    const big = Array.from({ length: 1000 }, (_, i) => JSON.stringify({ id: `b${i}`, v: 'x'.repeat(100) })).join('\n');
    expect(big.length).toBeGreaterThan(64 << 10);
    await db.table('t').insertNdjson(big);
    expect(counts()).toEqual({ poolWait: 1, parse: 1, queue: 3, commit: 3, delivery: 3 });
    // A JSON array that fails to parse never reaches the engine.
    const array = `[${big.split('\n').join(',')}`;
    await expect(db.table('t').insertJsonArray(array)).rejects.toThrow();
    expect(counts()).toEqual({ poolWait: 2, parse: 2, queue: 3, commit: 3, delivery: 3 });
    for (const stage of Object.values(stages())) {
      expect(stage.histogramUs.reduce((a: number, b: number) => a + b, 0)).toBe(stage.count);
      expect(stage.p50Us).toBeLessThanOrEqual(stage.p99Us);
      expect(stage.p999Us).toBeLessThanOrEqual(stage.maxUs);
    }
  });

  it('a reopened database holds everything acknowledged before close', async () => {
    const dir = await tempDir();
    let db = await Database.open(dir);
    await db.createTable('a');
    await db.createTable('b', { primaryKey: 'key' });
    const docs = Array.from({ length: 200 }, (_, i) => ({ id: i % 3 ? i : `s${i}`, v: 'x'.repeat(i) }));
    await db.table('a').insert(docs.slice(0, 100));
    await db.table('a').insert(docs.slice(100), { durability: 'soft' });
    await db.table('a').delete([1, 2]);
    await db.table('a').insert({ id: 4, v: 'replaced' }, { conflict: 'replace' });
    await db.table('b').insertNdjson('{"key":"k","n":1}\n');
    const expected = await db.table('a').scan();
    await db.close();

    db = await Database.open(dir);
    try {
      expect(db.listTables().map((t) => [t.name, t.primaryKey, t.documents])).toEqual([
        ['a', 'id', 198],
        ['b', 'key', 1],
      ]);
      expect(await db.table('a').scan()).toEqual(expected);
      expect(await db.table('a').get(4)).toEqual({ id: 4, v: 'replaced' });
      expect(await db.table('b').get('k')).toEqual({ key: 'k', n: 1 });
    } finally {
      await db.close();
    }
  });
});
