/** Every failure is a WharfError with a stable code, and bad arguments are named in the message. */
import { describe, expect, it } from 'vitest';
import { Database, ERROR_CODES, WharfError } from '../src/index.ts';
import { loadNative } from '../src/native.ts';
import { openTemp, rejection, tempDir } from './helpers.ts';

async function expectCode(promise: Promise<unknown>, code: string, message?: RegExp) {
  const error = await rejection(promise);
  expect(error).toBeInstanceOf(WharfError);
  expect(error.code).toBe(code);
  if (message) expect(error.message).toMatch(message);
}

describe('error codes', () => {
  it("the catalogue's engine codes are exactly the Rust ErrorCode::ALL, both ways", () => {
    // The native list comes from `ErrorCode::ALL` in core/src/error.rs (via the binding's
    // errorCodes()); ERROR_CODES from the catalogue in @wharf/wire. Neither is a copy of the other.
    const native = (loadNative() as { errorCodes(): string[] }).errorCodes();
    expect(native.length).toBeGreaterThan(0);
    expect(new Set(native).size).toBe(native.length);
    expect([...native].sort()).toEqual([...ERROR_CODES].sort());
  });

  it('an index error from the pool names its table and index in fields, not only in the message', async () => {
    const { db } = await openTemp();
    await db.createTable('people');
    const people = db.table('people');
    await people.createIndex('by_city', 'city');
    // indexWait names two indexes; the engine says which one is missing.
    const missing = await rejection(people.indexWait(['by_city', 'by_zip']));
    expect(missing).toBeInstanceOf(WharfError);
    expect(missing).toMatchObject({ code: 'WHARF_ERR_INDEX_NOT_FOUND', table: 'people', index: 'by_zip' });
    const query = await rejection(people.getAll('by_name', ['x']));
    expect(query).toMatchObject({ code: 'WHARF_ERR_INDEX_NOT_FOUND', table: 'people', index: 'by_name' });
    const table = await rejection(db.table('nope').getAll('by_city', ['x']));
    expect(table).toMatchObject({ code: 'WHARF_ERR_TABLE_NOT_FOUND', table: 'nope' });
    expect((table as WharfError).index).toBeUndefined();
  });

  it('WHARF_ERR_TABLE_EXISTS and WHARF_ERR_TABLE_NOT_FOUND', async () => {
    const { db } = await openTemp();
    await db.createTable('t');
    await expectCode(db.createTable('t'), 'WHARF_ERR_TABLE_EXISTS', /`t`/);
    await expectCode(db.dropTable('nope'), 'WHARF_ERR_TABLE_NOT_FOUND', /`nope`/);
  });

  it('WHARF_ERR_LOCKED when the directory is already open', async () => {
    const { dir } = await openTemp();
    await expectCode(Database.open(dir), 'WHARF_ERR_LOCKED');
  });

  it('WHARF_ERR_IO when the directory cannot be used', async () => {
    const dir = await tempDir();
    const { writeFile } = await import('node:fs/promises');
    await writeFile(`${dir}/file`, 'not a directory');
    await expectCode(Database.open(`${dir}/file`), 'WHARF_ERR_IO');
  });

  it('the engine rejects what JS does not check, with WHARF_ERR_INVALID_ARGUMENT', async () => {
    await expectCode(
      Database.open(await tempDir(), { segmentSize: 4096 }),
      'WHARF_ERR_INVALID_ARGUMENT',
      /segment_size/,
    );
  });
});

describe('argument validation names the argument', () => {
  it('Database.open', async () => {
    await expectCode(Database.open(42 as never), 'WHARF_ERR_INVALID_ARGUMENT', /^dir must be/);
    await expectCode(Database.open(''), 'WHARF_ERR_INVALID_ARGUMENT', /^dir must be/);
    const dir = await tempDir();
    await expectCode(Database.open(dir, 'x' as never), 'WHARF_ERR_INVALID_ARGUMENT', /^options must be an object/);
    await expectCode(Database.open(dir, { segmentSize: -1 }), 'WHARF_ERR_INVALID_ARGUMENT', /options\.segmentSize/);
    await expectCode(Database.open(dir, { segmentSize: 1.5 }), 'WHARF_ERR_INVALID_ARGUMENT', /options\.segmentSize/);
    await expectCode(
      Database.open(dir, { checkpointBytes: 0 }),
      'WHARF_ERR_INVALID_ARGUMENT',
      /options\.checkpointBytes/,
    );
    await expectCode(
      Database.open(dir, { flushIntervalMs: Number.NaN }),
      'WHARF_ERR_INVALID_ARGUMENT',
      /options\.flushIntervalMs/,
    );
    await expectCode(
      Database.open(dir, { durability: 'firm' as never }),
      'WHARF_ERR_INVALID_ARGUMENT',
      /'hard' or 'soft'/,
    );
    await expectCode(
      Database.open(dir, { poolReads: 0 }),
      'WHARF_ERR_INVALID_ARGUMENT',
      /options\.poolReads must be a positive integer; got 0/,
    );
    await expectCode(
      Database.open(dir, { flushInterval: 5 } as never),
      'WHARF_ERR_INVALID_ARGUMENT',
      /unknown option options\.flushInterval; did you mean flushIntervalMs\?/,
    );
    // The two millisecond options with a range: each named with its own bound.
    for (const [option, max] of [
      ['groupCommitWindowMs', 1000],
      ['backgroundDelayPerMibMs', 10000],
    ] as const) {
      for (const bad of [-1, max + 1, '5', Number.NaN]) {
        await expectCode(
          Database.open(dir, { [option]: bad } as never),
          'WHARF_ERR_INVALID_ARGUMENT',
          new RegExp(`^options\\.${option} must be a number of milliseconds from 0 to ${max}; got `),
        );
      }
    }
  });

  it('tables and writes', async () => {
    const { db } = await openTemp();
    await expectCode(db.createTable('bad name'), 'WHARF_ERR_INVALID_ARGUMENT', /^name must be a table name/);
    await expectCode(db.createTable('t', { primaryKey: '' }), 'WHARF_ERR_INVALID_ARGUMENT', /options\.primaryKey/);
    await expectCode(db.createTable('t', { primary_key: 'x' } as never), 'WHARF_ERR_INVALID_ARGUMENT', /primaryKey\?/);
    expect(() => db.table(7 as never)).toThrow(/name must be a table name/);
    await db.createTable('t');
    const t = db.table('t');
    await expectCode(t.insert(undefined as never), 'WHARF_ERR_INVALID_ARGUMENT', /^docs must be/);
    await expectCode(
      t.insert({ id: 1 }, { durability: 'HARD' as never }),
      'WHARF_ERR_INVALID_ARGUMENT',
      /options\.durability/,
    );
    await expectCode(
      t.insert({ id: 1 }, { conflict: 'merge' as never }),
      'WHARF_ERR_INVALID_ARGUMENT',
      /options\.conflict/,
    );
    await expectCode(t.insert({ id: 1 }, { durable: true } as never), 'WHARF_ERR_INVALID_ARGUMENT', /options\.durable/);
    await expectCode(
      t.insert([{ id: 1 }, { id: 2, n: 1n }]),
      'WHARF_ERR_INVALID_ARGUMENT',
      /^docs\[1\] cannot be serialized/,
    );
    await expectCode(t.insertNdjson(42 as never), 'WHARF_ERR_INVALID_ARGUMENT', /^data must be a Buffer/);
    await expectCode(t.delete({} as never), 'WHARF_ERR_INVALID_ARGUMENT', /^keys must be/);
    await expectCode(t.delete([1, null] as never), 'WHARF_ERR_INVALID_ARGUMENT', /^keys\[1\] must be/);
    expect(await t.count()).toBe(0);
  });

  it('keys and scans', async () => {
    const { db } = await openTemp();
    await db.createTable('t');
    const t = db.table('t');
    await expectCode(t.get(Number.POSITIVE_INFINITY), 'WHARF_ERR_INVALID_ARGUMENT', /^key must be a finite number/);
    await expectCode(t.get({} as never), 'WHARF_ERR_INVALID_ARGUMENT', /^key must be/);
    await expectCode(
      t.get('é'.repeat(64)),
      'WHARF_ERR_INVALID_ARGUMENT',
      /128 bytes long in UTF-8, over the limit of 127/,
    );
    await expectCode(t.getMany('a' as never), 'WHARF_ERR_INVALID_ARGUMENT', /^keys must be an array/);
    await expectCode(t.scan({ gt: 1, gte: 1 }), 'WHARF_ERR_INVALID_ARGUMENT', /gt and options\.gte/);
    await expectCode(t.scan({ lt: 1, lte: 1 }), 'WHARF_ERR_INVALID_ARGUMENT', /lt and options\.lte/);
    await expectCode(t.scan({ limit: -1 }), 'WHARF_ERR_INVALID_ARGUMENT', /options\.limit/);
    await expectCode(t.scan({ gt: {} as never }), 'WHARF_ERR_INVALID_ARGUMENT', /^options\.gt must be/);
    await expectCode(t.scan({ reverse: 1 as never }), 'WHARF_ERR_INVALID_ARGUMENT', /options\.reverse/);
    await expectCode(t.scan({ from: 1 } as never), 'WHARF_ERR_INVALID_ARGUMENT', /unknown option options\.from/);
    // Write options: an unknown one is named, and nothing is written.
    await expectCode(
      t.insert({ id: 1 }, { wait_for_indexes: true } as never),
      'WHARF_ERR_INVALID_ARGUMENT',
      /unknown option options\.wait_for_indexes; did you mean waitForIndexes\?/,
    );
    await expectCode(
      t.insert({ id: 1 }, { sync: true } as never),
      'WHARF_ERR_INVALID_ARGUMENT',
      /unknown option options\.sync; known options: durability, conflict, waitForIndexes/,
    );
    await expectCode(
      t.insert({ id: 1 }, { conflict: 'merge' } as never),
      'WHARF_ERR_INVALID_ARGUMENT',
      /^options\.conflict must be/,
    );
    expect(await t.count()).toBe(0);
  });
});

describe('after close', () => {
  it('every call fails with WHARF_ERR_CLOSED, and close is idempotent', async () => {
    const { db } = await openTemp();
    await db.createTable('t');
    const t = db.table('t');
    await t.insert({ id: 1 });
    await Promise.all([db.close(), db.close()]);
    await db.close();
    expect(db.closed).toBe(true);
    for (const op of [
      () => t.insert({ id: 2 }),
      () => t.insertNdjson('{"id":2}'),
      () => t.get(1),
      () => t.getMany([1]),
      () => t.scan(),
      () => t.count(),
      () => t.delete(1),
      () => db.sync(),
      () => db.createTable('u'),
      () => db.dropTable('t'),
    ]) {
      await expectCode(op(), 'WHARF_ERR_CLOSED');
    }
    expect(() => db.listTables()).toThrow(expect.objectContaining({ code: 'WHARF_ERR_CLOSED' }));
  });

  it('writes sent before close are answered, and the directory is free again', async () => {
    const { db, dir } = await openTemp();
    await db.createTable('t');
    const t = db.table('t');
    const writes = Array.from({ length: 100 }, (_, i) => t.insert({ id: i }, { durability: i % 2 ? 'soft' : 'hard' }));
    await db.close();
    const results = await Promise.all(writes);
    expect(results.every((r) => r.inserted === 1)).toBe(true);
    const again = await Database.open(dir);
    try {
      expect(await again.table('t').count()).toBe(100);
    } finally {
      await again.close();
    }
  });

  it('close succeeds while a large batch is still being parsed on the pool', async () => {
    const { db } = await openTemp();
    await db.createTable('t');
    // Over 64 KiB: parsed on the libuv pool, so its native task is still pending at close.
    const big = Array.from({ length: 2000 }, (_, i) => JSON.stringify({ id: i, pad: 'x'.repeat(60) })).join('\n');
    // Settled into a value right away: the insert may be refused before close returns.
    const outcome = db
      .table('t')
      .insertNdjson(big, { durability: 'soft' })
      .then(
        (r) => r.inserted,
        (e: { code?: string }) => e.code,
      );
    await db.close();
    expect([2000, 'WHARF_ERR_CLOSED']).toContain(await outcome);
  });
});
