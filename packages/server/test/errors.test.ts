/**
 * The server's mapping of engine errors, on errors of the real engine (a temporary directory):
 * the code is kept, the status and message template are the catalogue's, and the names come from
 * the engine error's fields, not from its message.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Database } from '@wharf/engine';
import { errorCatalogue } from '@wharf/wire';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromEngineError } from '../src/errors.js';

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

describe('engine errors through the server', () => {
  let dir: string;
  let db: Database;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'wharf-server-errors-'));
    db = await Database.open(dir, { segmentSize: 1 << 20 });
    await db.createTable('people');
    await db.table('people').createIndex('by_city', 'city');
  });

  afterAll(async () => {
    await db?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('names the index the engine reports, though the request named two', async () => {
    const err = await rejection(db.table('people').indexWait(['by_city', 'by_zip']));
    // The request knows the table but not which of its two indexes is missing: only the engine does.
    const e = fromEngineError(err, { table: 'people' });
    expect(e.code).toBe('WHARF_ERR_INDEX_NOT_FOUND');
    expect(e.statusCode).toBe(errorCatalogue.WHARF_ERR_INDEX_NOT_FOUND.status);
    expect(e.message).toBe('Index `by_zip` does not exist on table `people`');
  });

  it("a missing table's name comes from the engine when the caller does not pass it", async () => {
    const err = await rejection(db.table('nobody').getAll('by_city', ['Paris']));
    const e = fromEngineError(err);
    expect(e.code).toBe('WHARF_ERR_TABLE_NOT_FOUND');
    expect(e.statusCode).toBe(404);
    expect(e.message).toBe('Table `nobody` does not exist');
  });

  it('anything that is not an engine error is WHARF_ERR_INTERNAL, 500', () => {
    const e = fromEngineError(Object.assign(new Error('boom'), { code: 'WHARF_ERR_NOT_A_CODE' }));
    expect(e.code).toBe('WHARF_ERR_INTERNAL');
    expect(e.statusCode).toBe(500);
    expect(e.message).toBe('Internal error: boom');
  });
});
