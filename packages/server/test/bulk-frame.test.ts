/**
 * The driver port's bulk insert frame (term/single-insert.ts `bulkInsertFrameOf`): a loader's
 * `insert(r.json(r.binary(BYTES).coerceTo('string')), {durability, conflict})` run from the frame's
 * bytes. Which frames take it (as the official driver and @wharf/client's rethinkdb:// target
 * build them), and that it answers and stores exactly what the general path does, on a real
 * engine in a temporary directory.
 */

import type { Database } from '@wharf/engine';
import { encodeBase64Query, FRAME_HEADER_SIZE } from '@wharf/wire/rethinkdb';
import rethinkdb from 'rethinkdb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openTemp } from '../../../test/helpers/temp-database.js';
import { type EvaluatorDeps, runQuery } from '../src/rethinkdb/term/evaluator.js';
import { BULK_FRAME_MIN_BYTES, bulkInsertFrameOf, runBulkInsert } from '../src/rethinkdb/term/single-insert.js';
import { evaluatorDeps } from './evaluator-deps.js';

const r: any = rethinkdb;

let db: Database;
let deps: EvaluatorDeps;

beforeEach(async () => {
  ({ db } = await openTemp());
  deps = evaluatorDeps(db);
  await db.createTable('fast');
  await db.createTable('general');
});

afterEach(async () => {
  await db.close();
});

/** A JSON array text of `n` documents, large enough for the fast path. */
function arrayText(n: number, extra = ''): Buffer {
  const docs = Array.from({ length: n }, (_, i) => JSON.stringify({ id: i, name: `document number ${i}`, tags: [i] }));
  return Buffer.from(`[${docs.join(',')}${extra}]`);
}

/** The query body as the official driver sends it. */
function driverBody(table: string, bytes: Buffer, optargs?: object, globalOptargs?: object): Buffer {
  const docs = r.json(r.binary(bytes).coerceTo('string'));
  const t = r.db('test').table(table);
  const term = (optargs ? t.insert(docs, optargs) : t.insert(docs)).build();
  return Buffer.from(JSON.stringify(globalOptargs ? [1, term, globalOptargs] : [1, term]));
}

/** The query body as @wharf/client's rethinkdb:// target builds it (frame header cut off). */
function clientBody(db_: string, table: string, bytes: Buffer, optargs = '{"durability":"soft","conflict":"error"}') {
  const prefix = `[1,[56,[[15,[[14,[${JSON.stringify(db_)}]],${JSON.stringify(table)}]],[98,[[51,[{"$reql_type$":"BINARY","data":"`;
  return encodeBase64Query(7, prefix, bytes, `"},"string"]]]]],${optargs}]]`).subarray(FRAME_HEADER_SIZE);
}

describe('the bulk insert frame', () => {
  const bytes = arrayText(2000);

  it('is taken by the driver’s and the client’s frames, with the documents decoded from the frame', () => {
    expect(bytes.length * 1.33).toBeGreaterThan(BULK_FRAME_MIN_BYTES);
    expect(bulkInsertFrameOf(driverBody('fast', bytes))).toEqual({
      table: 'fast',
      bytes,
      durability: undefined,
      conflict: 'error',
    });
    expect(bulkInsertFrameOf(driverBody('fast', bytes, { durability: 'soft', conflict: 'replace' }))).toMatchObject({
      durability: 'soft',
      conflict: 'replace',
    });
    expect(bulkInsertFrameOf(clientBody('test', 'fast', bytes))).toEqual({
      table: 'fast',
      bytes,
      durability: 'soft',
      conflict: 'error',
    });
    // Another database: the catalog's engine name.
    expect(bulkInsertFrameOf(clientBody('other', 'fast', bytes))?.table).toBe('other.fast');
  });

  it('leaves every other frame to the general path', () => {
    const small = arrayText(10);
    expect(bulkInsertFrameOf(driverBody('fast', small))).toBeUndefined();
    expect(bulkInsertFrameOf(driverBody('fast', bytes, undefined, { db: [14, ['test']] }))).toBeUndefined();
    expect(bulkInsertFrameOf(driverBody('fast', bytes, { returnChanges: true }))).toBeUndefined();
    expect(bulkInsertFrameOf(driverBody('fast', bytes, { durability: 'fast' }))).toBeUndefined();
    expect(bulkInsertFrameOf(clientBody('test', 'no.dots', bytes))).toBeUndefined();
    // A document object rather than an array text, and the text as a plain string.
    expect(
      bulkInsertFrameOf(
        clientBody('test', 'fast', Buffer.concat([Buffer.from(' '), bytes.subarray(1, 200), Buffer.from('}')])),
      ),
    ).toBeUndefined();
    const asString = r.table('fast').insert(r.json(bytes.toString())).build();
    expect(bulkInsertFrameOf(Buffer.from(JSON.stringify([1, asString])))).toBeUndefined();
    // An escape inside the base64 string is valid JSON (`\u0057` is the `W` that `[` begins with)
    // and changes the string's text: not the bytes to decode.
    const escaped = Buffer.from(driverBody('fast', bytes).toString().replace('"data":"W', '"data":"\\u0057'));
    expect(escaped.includes('"data":"\\u0057')).toBe(true);
    expect(bulkInsertFrameOf(escaped)).toBeUndefined();
  });

  it('answers and stores what the general path does, per-document errors included', async () => {
    // A duplicate key and a document that is not an object: per-document errors, the rest written.
    const mixed = arrayText(2000, ',{"id":5,"dup":true},7');
    const frame = bulkInsertFrameOf(clientBody('test', 'fast', mixed))!;
    expect(frame).toBeDefined();
    const fast = await runBulkInsert(db, frame, 'hard', (p) => p);
    const general = await runQuery(deps, JSON.parse(clientBody('test', 'general', mixed).toString())[1], {});
    expect(general.kind).toBe('atom');
    expect(fast).toEqual((general as { value: unknown }).value);
    expect(fast).toMatchObject({ inserted: 2000, errors: 2 });
    const rows = async (t: string) => (await db.table(t).scan()).map((d) => JSON.stringify(d)).sort();
    expect(await rows('fast')).toEqual(await rows('general'));
  });

  it('gives back a batch the engine refuses (nothing written), for the general path to word', async () => {
    const frame = bulkInsertFrameOf(clientBody('test', 'missing', bytes))!;
    expect(await runBulkInsert(db, frame, 'hard', (p) => p)).toBeUndefined();
    const notJson = bulkInsertFrameOf(clientBody('test', 'fast', arrayText(2000, ',{"id": oops}')))!;
    expect(await runBulkInsert(db, notJson, 'hard', (p) => p)).toBeUndefined();
    expect(await db.table('fast').count()).toBe(0);
  });
});
