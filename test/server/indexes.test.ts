/**
 * Secondary indexes over the HTTP API of a real server process (127.0.0.1, temp data dir):
 * the lifecycle (create, list, wait, drop), the error answers, and getAll/between results
 * checked against a filter over a full scan after random inserts, replaces and deletes.
 */
import { describe, expect, it } from 'vitest';
import { rng } from '../helpers/rng.js';
import { serverForSuite } from '../helpers/server-suite.js';

type Doc = Record<string, unknown> & { id: number };
type Scalar = string | number | boolean | null;

const suiteServer = serverForSuite();

async function api(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${suiteServer().url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : null };
}

const CITIES = ['Paris', 'Lyon', 'Nice', 'Lille', 'Brest', 'Metz'];
const TAGS = ['red', 'green', 'blue', 'black', 'white'];

function makeDoc(id: number, rand: () => number): Doc {
  const doc: Doc = { id, v: Math.floor(rand() * 1e6) };
  const r = rand();
  // n: usually a small integer; sometimes missing, sometimes an array (not indexed: not multi).
  if (r < 0.8) doc.n = Math.floor(rand() * 20);
  else if (r < 0.9) doc.n = [1, 2];
  const c = rand();
  if (c < 0.85) doc.address = { city: CITIES[Math.floor(rand() * CITIES.length)], zip: String(10000 + id) };
  else if (c < 0.95) doc.address = { zip: 'none' }; // path missing
  const t = rand();
  if (t < 0.8) {
    const tags = TAGS.filter(() => rand() < 0.35);
    doc.tags = tags;
  } else if (t < 0.9) doc.tags = TAGS[Math.floor(rand() * TAGS.length)]; // a scalar: one entry
  return doc;
}

/** The entries a document has in an index on `field` (the documented rule). */
function entries(doc: Doc, field: string, multi: boolean): Scalar[] {
  let v: unknown = doc;
  for (const p of field.split('.')) {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return [];
    v = (v as Record<string, unknown>)[p];
    if (v === undefined) return [];
  }
  if (Array.isArray(v)) return multi ? (v.filter((x) => x === null || typeof x !== 'object') as Scalar[]) : [];
  if (v !== null && typeof v === 'object') return [];
  return [v as Scalar];
}

async function fullScan(table: string): Promise<Doc[]> {
  const out: Doc[] = [];
  let after: string | null = null;
  for (;;) {
    const q: string = `limit=10000${after === null ? '' : `&after=${encodeURIComponent(after)}`}`;
    const { status, json } = await api('GET', `/api/tables/${table}/documents?${q}`);
    expect(status).toBe(200);
    out.push(...json.documents);
    if (json.next === null) return out;
    after = json.next;
  }
}

const ids = (docs: Doc[]): number[] => [...new Set(docs.map((d) => d.id))].sort((a, b) => a - b);

interface IndexDef {
  name: string;
  field: string;
  multi: boolean;
}
const INDEXES: IndexDef[] = [
  { name: 'by_n', field: 'n', multi: false },
  { name: 'by_city', field: 'address.city', multi: false },
  { name: 'by_tag', field: 'tags', multi: true },
];

function q(params: Record<string, string | number | boolean | (string | number)[]>): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(params)) {
    for (const x of Array.isArray(v) ? v : [v]) parts.push(`${k}=${encodeURIComponent(String(x))}`);
  }
  return parts.join('&');
}

async function getAll(
  table: string,
  index: string,
  values: Scalar[],
  extra: Record<string, string | number | boolean> = {},
): Promise<{ status: number; json: any }> {
  return api(
    'GET',
    `/api/tables/${table}/indexes/${index}/docs?${q({ value: values.map((v) => JSON.stringify(v)), limit: 10000, ...extra })}`,
  );
}

/** Every getAll and between answer equals the same filter over a full scan. */
async function checkAgainstScan(table: string, rand: () => number): Promise<void> {
  const all = await fullScan(table);
  for (const ix of INDEXES) {
    const values: Scalar[] =
      ix.name === 'by_n' ? [0, 3, 7, 19, 25] : ix.name === 'by_city' ? [...CITIES, 'Nowhere'] : [...TAGS];
    // getAll: one value, then two at once.
    for (const v of values) {
      const { status, json } = await getAll(table, ix.name, [v]);
      expect(status, JSON.stringify(json)).toBe(200);
      const want = all.filter((d) => entries(d, ix.field, ix.multi).includes(v));
      expect(ids(json.documents), `${ix.name} getAll ${JSON.stringify(v)}`).toEqual(ids(want));
      for (const d of json.documents as Doc[]) expect(entries(d, ix.field, ix.multi)).toContain(v);
    }
    const pair = [
      values[Math.floor(rand() * values.length)] as Scalar,
      values[Math.floor(rand() * values.length)] as Scalar,
    ];
    const two = await getAll(table, ix.name, pair);
    expect(two.status).toBe(200);
    expect(ids(two.json.documents)).toEqual(
      ids(all.filter((d) => entries(d, ix.field, ix.multi).some((e) => pair.includes(e)))),
    );

    // between: a few ranges, both bound kinds, unbounded ends, reverse.
    const sorted = [...values].sort() as Scalar[];
    const ranges: [Scalar | undefined, Scalar | undefined][] =
      ix.name === 'by_n'
        ? [
            [3, 9],
            [0, 20],
            [undefined, 5],
            [12, undefined],
            [undefined, undefined],
            [7, 7],
          ]
        : [
            [sorted[1], sorted[3]],
            [undefined, sorted[2]],
            [sorted[2], undefined],
            [undefined, undefined],
          ];
    for (const [lo, hi] of ranges) {
      for (const [leftBound, rightBound] of [
        ['closed', 'open'],
        ['open', 'closed'],
        ['closed', 'closed'],
      ] as const) {
        for (const reverse of [false, true]) {
          const params: Record<string, string | number | boolean> = { leftBound, rightBound, reverse, limit: 10000 };
          if (lo !== undefined) params.lower = JSON.stringify(lo);
          if (hi !== undefined) params.upper = JSON.stringify(hi);
          const { status, json } = await api('GET', `/api/tables/${table}/indexes/${ix.name}/docs?${q(params)}`);
          expect(status, JSON.stringify(json)).toBe(200);
          const inRange = (e: Scalar): boolean => {
            if (
              lo !== undefined &&
              !(leftBound === 'closed' ? (e as number) >= (lo as number) : (e as number) > (lo as number))
            )
              return false;
            if (
              hi !== undefined &&
              !(rightBound === 'closed' ? (e as number) <= (hi as number) : (e as number) < (hi as number))
            )
              return false;
            return true;
          };
          const want = all.filter((d) => entries(d, ix.field, ix.multi).some(inRange));
          const label = `${ix.name} between ${JSON.stringify(lo)} ${JSON.stringify(hi)} ${leftBound}/${rightBound}${reverse ? ' reverse' : ''}`;
          expect(ids(json.documents), label).toEqual(ids(want));
          expect(json.truncated).toBe(false);
          if (!ix.multi) {
            // Index order: the indexed values never go backwards (forwards when reversed).
            const got = (json.documents as Doc[]).map((d) => entries(d, ix.field, false)[0] as number);
            for (let i = 1; i < got.length; i++) {
              if (reverse) expect(got[i]! <= got[i - 1]!, label).toBe(true);
              else expect(got[i]! >= got[i - 1]!, label).toBe(true);
            }
          }
        }
      }
    }
  }
}

describe('HTTP secondary indexes', () => {
  it('lifecycle: create, list, wait, read, drop; getAll and between equal a filter over a full scan after random writes', async () => {
    const rand = rng(20261122);
    const table = 'people';
    expect((await api('POST', '/api/tables', { name: table })).status).toBe(201);
    const docs = Array.from({ length: 400 }, (_, i) => makeDoc(i, rand));
    const ins = await api('POST', `/api/tables/${table}/documents`, docs);
    expect(ins.status).toBe(200);
    expect(ins.json.inserted).toBe(400);

    for (const ix of INDEXES) {
      const res = await api('POST', `/api/tables/${table}/indexes`, {
        name: ix.name,
        field: ix.field,
        ...(ix.multi ? { multi: true } : {}),
      });
      expect(res.status, JSON.stringify(res.json)).toBe(201);
      expect(res.json).toEqual({ created: true, name: ix.name, field: ix.field, multi: ix.multi });
    }
    const waited = await api('POST', `/api/tables/${table}/indexes/wait`, {});
    expect(waited.status, JSON.stringify(waited.json)).toBe(200);
    expect(waited.json.indexes.map((i: { name: string }) => i.name).sort()).toEqual(['by_city', 'by_n', 'by_tag']);
    for (const i of waited.json.indexes) expect(i.ready).toBe(true);

    const listed = await api('GET', `/api/tables/${table}/indexes`);
    expect(listed.status).toBe(200);
    const byName = Object.fromEntries(listed.json.indexes.map((i: { name: string }) => [i.name, i]));
    for (const ix of INDEXES)
      expect(byName[ix.name]).toMatchObject({ name: ix.name, field: ix.field, multi: ix.multi, ready: true });

    await checkAgainstScan(table, rand);

    // Random inserts, replaces and deletes; fresh reads (the default) see every acknowledged write.
    let nextId = 400;
    for (let round = 0; round < 4; round++) {
      const inserts = Array.from({ length: 40 }, () => makeDoc(nextId++, rand));
      expect((await api('POST', `/api/tables/${table}/documents?durability=soft`, inserts)).json.inserted).toBe(40);
      const replaces = Array.from({ length: 60 }, () => makeDoc(Math.floor(rand() * nextId), rand));
      const uniq = [...new Map(replaces.map((d) => [d.id, d])).values()];
      const rep = await api('POST', `/api/tables/${table}/documents?conflict=replace&durability=soft`, uniq);
      expect(rep.json.errors).toBe(0);
      for (let k = 0; k < 15; k++) {
        const del = await api(
          'DELETE',
          `/api/tables/${table}/documents/${Math.floor(rand() * nextId)}?durability=soft`,
        );
        expect(del.status).toBe(200);
      }
      await checkAgainstScan(table, rand);
    }

    // limit: the first documents in index order, and truncated says there were more.
    const limited = await api('GET', `/api/tables/${table}/indexes/by_n/docs?${q({ limit: 5 })}`);
    expect(limited.status).toBe(200);
    expect(limited.json.documents).toHaveLength(5);
    expect(limited.json.truncated).toBe(true);

    const dropped = await api('DELETE', `/api/tables/${table}/indexes/by_tag`);
    expect(dropped).toEqual({ status: 200, json: { dropped: true, name: 'by_tag' } });
    const after = await api('GET', `/api/tables/${table}/indexes`);
    expect(after.json.indexes.map((i: { name: string }) => i.name).sort()).toEqual(['by_city', 'by_n']);
    const gone = await getAll(table, 'by_tag', ['red']);
    expect(gone.status).toBe(404);
    expect(gone.json.code).toBe('WHARF_ERR_INDEX_NOT_FOUND');
  });

  it('errors: 404 naming the unknown table or index, 409 when it exists, 400 for bad input', async () => {
    const table = 'errs';
    expect((await api('POST', '/api/tables', { name: table })).status).toBe(201);
    expect((await api('POST', `/api/tables/${table}/indexes`, { name: 'by_a', field: 'a' })).status).toBe(201);

    const noTable = await api('GET', '/api/tables/no_such_table/indexes');
    expect(noTable.status).toBe(404);
    expect(noTable.json.code).toBe('WHARF_ERR_TABLE_NOT_FOUND');
    expect(noTable.json.message).toContain('no_such_table');
    const noTable2 = await api('POST', '/api/tables/no_such_table/indexes', { name: 'x', field: 'x' });
    expect(noTable2.status).toBe(404);
    expect(noTable2.json.message).toContain('no_such_table');

    const noIndex = await getAll(table, 'no_such_index', [1]);
    expect(noIndex.status).toBe(404);
    expect(noIndex.json.code).toBe('WHARF_ERR_INDEX_NOT_FOUND');
    expect(noIndex.json.message).toContain('no_such_index');
    expect(noIndex.json.message).toContain(table);
    const noIndexRange = await api('GET', `/api/tables/${table}/indexes/no_such_index/docs?lower=1`);
    expect(noIndexRange.status).toBe(404);
    const dropMissing = await api('DELETE', `/api/tables/${table}/indexes/no_such_index`);
    expect(dropMissing.status).toBe(404);
    expect(dropMissing.json.code).toBe('WHARF_ERR_INDEX_NOT_FOUND');
    expect(dropMissing.json.message).toContain('no_such_index');
    const waitMissing = await api('POST', `/api/tables/${table}/indexes/wait`, { names: ['by_a', 'no_such_index'] });
    expect(waitMissing.status).toBe(404);
    expect(waitMissing.json.message).toContain('no_such_index');

    const exists = await api('POST', `/api/tables/${table}/indexes`, { name: 'by_a', field: 'b' });
    expect(exists.status).toBe(409);
    expect(exists.json.code).toBe('WHARF_ERR_INDEX_EXISTS');
    expect(exists.json.message).toContain('by_a');

    const badName = await api('POST', `/api/tables/${table}/indexes`, { name: 'bad name!', field: 'a' });
    expect(badName.status).toBe(400);
    expect(badName.json.message).toMatch(/index name/);
    const badField = await api('POST', `/api/tables/${table}/indexes`, { name: 'by_bad', field: 'a..b' });
    expect(badField.status).toBe(400);
    expect(badField.json.code).toBe('WHARF_ERR_INVALID_ARGUMENT');
    const noField = await api('POST', `/api/tables/${table}/indexes`, { name: 'by_x' });
    expect(noField.status).toBe(400);
    expect(noField.json.code).toBe('WHARF_ERR_BAD_REQUEST');

    const badValue = await api('GET', `/api/tables/${table}/indexes/by_a/docs?value=Paris`);
    expect(badValue.status).toBe(400);
    expect(badValue.json.message).toMatch(/value must be JSON/);
    const objValue = await api('GET', `/api/tables/${table}/indexes/by_a/docs?value=${encodeURIComponent('{"a":1}')}`);
    expect(objValue.status).toBe(400);
    const both = await api('GET', `/api/tables/${table}/indexes/by_a/docs?value=1&lower=0`);
    expect(both.status).toBe(400);

    // fresh=false on an index that may still be building: the documents, or 503 not ready.
    await api(
      'POST',
      `/api/tables/${table}/documents`,
      Array.from({ length: 2000 }, (_, i) => ({ id: i, b: i % 7 })),
    );
    expect((await api('POST', `/api/tables/${table}/indexes`, { name: 'by_b', field: 'b' })).status).toBe(201);
    const early = await getAll(table, 'by_b', [3], { fresh: false });
    expect([200, 503]).toContain(early.status);
    if (early.status === 503) {
      expect(early.json.code).toBe('WHARF_ERR_INDEX_NOT_READY');
      expect(early.json.message).toContain('by_b');
    }
    const fresh = await getAll(table, 'by_b', [3]);
    expect(fresh.status).toBe(200);
    expect(fresh.json.documents).toHaveLength(
      Array.from({ length: 2000 }, (_, i) => i).filter((i) => i % 7 === 3).length,
    );
  });

  it('a write with waitForIndexes is seen at once by a getAll that does not wait (fresh=false)', async () => {
    const table = 'wfi';
    expect((await api('POST', '/api/tables', { name: table })).status).toBe(201);
    expect(
      (await api('POST', `/api/tables/${table}/indexes`, { name: 'by_email', field: 'contact.email' })).status,
    ).toBe(201);
    expect(
      (await api('POST', `/api/tables/${table}/indexes/wait`, { names: ['by_email'], timeoutMs: 30_000 })).status,
    ).toBe(200);
    for (let i = 0; i < 20; i++) {
      const email = `user${i}@example.com`;
      const ins = await api('POST', `/api/tables/${table}/documents?waitForIndexes=true&durability=soft`, {
        id: i,
        contact: { email },
      });
      expect(ins.status, JSON.stringify(ins.json)).toBe(200);
      expect(ins.json.inserted).toBe(1);
      const got = await getAll(table, 'by_email', [email], { fresh: false });
      expect(got.status, JSON.stringify(got.json)).toBe(200);
      expect(got.json.documents).toEqual([{ id: i, contact: { email } }]);
    }
    const moved = await api('POST', `/api/tables/${table}/documents?waitForIndexes=true&conflict=replace`, {
      id: 0,
      contact: { email: 'moved@example.com' },
    });
    expect(moved.json.replaced).toBe(1);
    expect((await getAll(table, 'by_email', ['user0@example.com'], { fresh: false })).json.documents).toEqual([]);
    expect((await getAll(table, 'by_email', ['moved@example.com'], { fresh: false })).json.documents).toHaveLength(1);
  });

  it('the routes are in /openapi.json', async () => {
    const { json } = await api('GET', '/openapi.json');
    expect(Object.keys(json.paths)).toEqual(
      expect.arrayContaining([
        '/api/tables/{table}/indexes',
        '/api/tables/{table}/indexes/wait',
        '/api/tables/{table}/indexes/{name}',
        '/api/tables/{table}/indexes/{name}/docs',
      ]),
    );
    const insert = json.paths['/api/tables/{table}/documents'].post;
    expect(insert.parameters.map((p: { name: string }) => p.name)).toContain('waitForIndexes');
  });
});
