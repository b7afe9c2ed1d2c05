/**
 * The driver port's single-document insert (`r.table(T).insert(DOC)` straight to the engine):
 * which queries take it, and that they answer and store exactly what the general path does
 * (`r.db('test').table(T).insert(DOC)`, the same insert through the evaluator), on a real engine
 * in a temporary directory with terms built by the official driver.
 */

import type { Database } from '@wharf/engine';
import rethinkdb from 'rethinkdb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openTemp } from '../../../test/helpers/temp-database.js';
import { ReqlError } from '../src/rethinkdb/errors.js';
import { compile } from '../src/rethinkdb/term/compiler.js';
import { type EvaluatorDeps, runQuery } from '../src/rethinkdb/term/evaluator.js';
import { singleInsertOf } from '../src/rethinkdb/term/single-insert.js';
import { evaluatorDeps } from './evaluator-deps.js';

const r: any = rethinkdb;

let db: Database;
let deps: EvaluatorDeps;
let tracked = 0;

async function run(q: { build(): unknown }, optargs: Record<string, unknown> = {}): Promise<unknown> {
  const res = await runQuery(deps, q.build(), optargs);
  if (res.kind !== 'atom') throw new Error('expected an atom');
  return res.value;
}

async function failure(q: { build(): unknown }): Promise<{ message: string; type: number; backtrace: unknown }> {
  try {
    await run(q);
  } catch (err) {
    expect(err).toBeInstanceOf(ReqlError);
    const e = err as ReqlError;
    return { message: e.message, type: e.responseType, backtrace: e.backtrace };
  }
  throw new Error('expected a ReQL error');
}

const taken = (q: { build(): unknown }, optargs: Record<string, unknown> = {}) =>
  singleInsertOf(compile(q.build()), optargs) !== undefined;

beforeEach(async () => {
  ({ db } = await openTemp());
  tracked = 0;
  deps = evaluatorDeps(db, (p) => {
    tracked++;
    return p;
  });
  await db.createTable('fast');
  await db.createTable('general');
});

afterEach(async () => {
  await db.close();
});

describe('the single-document insert', () => {
  it('is taken by r.table(T).insert(literal object) with at most a literal durability', () => {
    const doc = { id: 1, tags: ['a', 'b'], nested: { x: [1, { y: [2] }] }, n: null };
    expect(taken(r.table('fast').insert(doc))).toBe(true);
    expect(taken(r.table('fast').insert(doc, { durability: 'hard' }))).toBe(true);
    expect(taken(r.table('fast').insert(doc, { durability: 'soft' }))).toBe(true);
    expect(taken(r.table('fast').insert({}))).toBe(true);
  });

  it('leaves every other shape to the general path', () => {
    const doc = { id: 1 };
    expect(taken(r.db('test').table('fast').insert(doc))).toBe(false);
    expect(taken(r.table('fast', { readMode: 'outdated' }).insert(doc))).toBe(false);
    expect(taken(r.table('fast').insert([doc]))).toBe(false);
    expect(taken(r.table('fast').insert(doc, { conflict: 'replace' }))).toBe(false);
    expect(taken(r.table('fast').insert(doc, { returnChanges: true }))).toBe(false);
    expect(taken(r.table('fast').insert(doc, { durability: r.expr('ha').add('rd') }))).toBe(false);
    expect(taken(r.table('fast').insert(doc, { durability: 'fast' }))).toBe(false);
    expect(taken(r.table('fast').insert({ id: 1, at: r.now() }))).toBe(false);
    expect(taken(r.table('fast').insert(r.expr(5)))).toBe(false);
    expect(taken(r.table('no.dots').insert(doc))).toBe(false);
    expect(taken(r.table(r.expr('fast').add('')).insert(doc))).toBe(false);
    expect(taken(r.table('fast').insert(doc), { db: r.db('test').build() })).toBe(false);
    expect(taken(r.table('fast').insert(doc), { durability: 'soft' })).toBe(false);
  });

  it('answers and stores what the general path does', async () => {
    const docs: Record<string, unknown>[] = [
      { id: 1, name: 'ada', tags: ['x', 'y'], nested: { deep: [1, { z: true }] } },
      { id: 'k', empty: {}, list: [] },
      { id: 1, name: 'duplicate' },
      { name: 'no key' },
    ];
    for (const [i, doc] of docs.entries()) {
      const before = tracked;
      const fast = (await run(r.table('fast').insert(doc, { durability: i % 2 ? 'soft' : 'hard' }))) as Record<
        string,
        unknown
      >;
      expect(tracked, 'every write is tracked for shutdown').toBe(before + 1);
      const general = (await run(
        r
          .db('test')
          .table('general')
          .insert(doc, { durability: i % 2 ? 'soft' : 'hard' }),
      )) as Record<string, unknown>;
      const keys = [fast.generated_keys, general.generated_keys];
      if (keys[0] !== undefined || keys[1] !== undefined) {
        expect((keys[0] as string[]).length).toBe(1);
        expect((keys[1] as string[]).length).toBe(1);
        fast.generated_keys = general.generated_keys = ['generated'];
      }
      expect(fast).toEqual(general);
    }
    const fastRows = await db.table('fast').scan();
    const generalRows = await db.table('general').scan();
    const withoutGenerated = (rows: Record<string, unknown>[]) =>
      rows.map((row) => (row.name === 'no key' ? { ...row, id: 'generated' } : row));
    expect(withoutGenerated(fastRows)).toEqual(withoutGenerated(generalRows));
    expect(fastRows).toHaveLength(3);
    expect(await db.table('fast').get(1)).toEqual(docs[0]);
  });

  it('gives the general path error for a missing table, with its backtrace', async () => {
    const e = await failure(r.table('missing').insert({ id: 1 }));
    expect(e.message).toBe('Table `test.missing` does not exist.');
    expect(e.backtrace).toEqual([0]);
    expect(e).toEqual(await failure(r.db('test').table('missing').insert({ id: 1 })));
    expect(await db.table('fast').count()).toBe(0);
  });
});
