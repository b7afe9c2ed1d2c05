/** A bad document is an error for that document only; the rest of its batch is written. */
import { describe, expect, it } from 'vitest';
import { openTemp } from './helpers.ts';

async function table() {
  const { db } = await openTemp();
  await db.createTable('t');
  return db.table('t');
}

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('bad documents', () => {
  it('rejects non-objects and bad keys one by one, writing the rest', async () => {
    const t = await table();
    const result = await t.insert([
      { id: 1 },
      42 as never,
      'text' as never,
      null as never,
      [1, 2] as never,
      { id: [null] },
      { id: null },
      { id: { nested: 1 } },
      { id: { $reql_type$: 'GEOMETRY' } },
      { id: 'k'.repeat(128) },
      { id: 'k'.repeat(127) },
      { id: 2 },
    ]);
    expect(result).toMatchObject({ inserted: 3, errors: 9 });
    expect(result.document_errors!.map((e) => e.index)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    for (const e of result.document_errors!) expect(e.message).not.toBe('');
    expect(result.first_error).toBe(result.document_errors![0]!.message);
    expect(result.document_errors![8]!.message).toMatch(/128 bytes/);
    expect(await t.count()).toBe(3);
    expect(await t.get('k'.repeat(127))).toEqual({ id: 'k'.repeat(127) });
  });

  it('counts NDJSON lines (blank ones included) for document_errors', async () => {
    const t = await table();
    const ndjson = ['{"id":1}', '', '{"id":2,}', 'not json', '{"id":3}', '[1]', '{"id":4} trailing', '{"id":5}'].join(
      '\n',
    );
    const result = await t.insertNdjson(ndjson);
    expect(result).toMatchObject({ inserted: 3, errors: 4 });
    expect(result.document_errors!.map((e) => e.index)).toEqual([2, 3, 5, 6]);
    expect((await t.scan()).map((d) => d.id)).toEqual([1, 3, 5]);
  });

  it('reports invalid UTF-8 in a Buffer as a document error', async () => {
    const t = await table();
    const bad = Buffer.concat([
      Buffer.from('{"id":1}\n{"id":"'),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('"}\n{"id":2}'),
    ]);
    const result = await t.insertNdjson(bad);
    expect(result).toMatchObject({ inserted: 2, errors: 1 });
    expect(result.document_errors![0]!.index).toBe(1);
  });

  it('fails a JSON array that cannot be split as a whole', async () => {
    const t = await table();
    await expect(t.insertJsonArray('[{"id":1}, {')).rejects.toMatchObject({ code: 'WHARF_ERR_MALFORMED_JSON' });
    await expect(t.insertJsonArray('{"id":1}')).rejects.toMatchObject({ code: 'WHARF_ERR_MALFORMED_JSON' });
    expect(await t.count()).toBe(0);
  });

  it('generates UUID v4 keys for documents without one, in order', async () => {
    const t = await table();
    const result = await t.insert([{ name: 'a' }, { id: 5 }, { name: 'b' }, {}]);
    expect(result.inserted).toBe(4);
    expect(result.generated_keys).toHaveLength(3);
    for (const key of result.generated_keys!) expect(key).toMatch(UUID_V4);
    expect(await t.getMany(result.generated_keys!)).toEqual([
      { id: result.generated_keys![0], name: 'a' },
      { id: result.generated_keys![1], name: 'b' },
      { id: result.generated_keys![2] },
    ]);
  });
});

describe('conflicts', () => {
  it("conflict 'error' (the default) rejects the duplicate only", async () => {
    const t = await table();
    await t.insert({ id: 1, v: 'first' });
    const result = await t.insert([{ id: 2 }, { id: 1, v: 'second' }, { id: 3 }]);
    expect(result).toMatchObject({ inserted: 2, replaced: 0, errors: 1 });
    expect(result.document_errors).toEqual([{ index: 1, message: expect.stringMatching(/duplicate/i) }]);
    expect(await t.get(1)).toEqual({ id: 1, v: 'first' });
  });

  it('a duplicate within one batch is caught too', async () => {
    const t = await table();
    const result = await t.insert([
      { id: 1, v: 'a' },
      { id: 1, v: 'b' },
    ]);
    expect(result).toMatchObject({ inserted: 1, errors: 1 });
    expect(await t.get(1)).toEqual({ id: 1, v: 'a' });
  });

  it('a key written twice in one batch sees its earlier write, whatever the order of keys', async () => {
    const t = await table();
    // Increasing keys, then out of order: 3 comes back after 5, and 1 twice after that.
    const replaced = await t.insert(
      [{ id: 1, v: 'a' }, { id: 3, v: 'a' }, { id: 5 }, { id: 3, v: 'b' }, { id: 1, v: 'b' }, { id: 1, v: 'c' }],
      { conflict: 'replace' },
    );
    expect(replaced).toMatchObject({ inserted: 3, replaced: 3, errors: 0 });
    expect(await t.getMany([1, 3, 5])).toEqual([{ id: 1, v: 'c' }, { id: 3, v: 'b' }, { id: 5 }]);
    const updated = await t.insert([{ id: 7, n: 1 }, { id: 6 }, { id: 7, m: 2 }], { conflict: 'update' });
    expect(updated).toMatchObject({ inserted: 2, replaced: 1 });
    expect(await t.get(7)).toEqual({ id: 7, n: 1, m: 2 });
    const refused = await t.insert([{ id: 9 }, { id: 8 }, { id: 9, v: 'x' }]);
    expect(refused).toMatchObject({ inserted: 2, errors: 1 });
    expect(refused.document_errors).toEqual([{ index: 2, message: expect.stringMatching(/duplicate/i) }]);
    expect(await t.count()).toBe(7);
  });

  it("conflict 'replace' replaces, and counts identical documents as unchanged", async () => {
    const t = await table();
    await t.insert([
      { id: 1, v: 'a', extra: true },
      { id: 2, v: 'same' },
    ]);
    const result = await t.insert([{ id: 1, v: 'b' }, { id: 2, v: 'same' }, { id: 3 }], { conflict: 'replace' });
    expect(result).toMatchObject({ inserted: 1, replaced: 1, unchanged: 1, errors: 0 });
    expect(await t.get(1)).toEqual({ id: 1, v: 'b' });
  });

  it("conflict 'update' merges fields (nested objects recursively)", async () => {
    const t = await table();
    await t.insert({ id: 1, a: 1, nested: { x: 1, y: 2 }, keep: 'yes' });
    const result = await t.insert({ id: 1, a: 2, nested: { y: 3, z: 4 } }, { conflict: 'update' });
    expect(result).toMatchObject({ replaced: 1, unchanged: 0 });
    expect(await t.get(1)).toEqual({ id: 1, a: 2, nested: { x: 1, y: 3, z: 4 }, keep: 'yes' });
    expect(await t.insert({ id: 1, a: 2 }, { conflict: 'update' })).toMatchObject({ replaced: 0, unchanged: 1 });
    expect(await t.insert({ id: 9, a: 1 }, { conflict: 'update' })).toMatchObject({ inserted: 1 });
  });
});
