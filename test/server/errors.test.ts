/**
 * The error catalogue (@wharf/wire, docs/ERRORS.md) is what callers of a real server get: for a
 * representative code of each kind, the HTTP answer has the code and the status the catalogue
 * gives it, and a query through the official driver fails with the driver class of the code's
 * ReQL type. A server on 127.0.0.1 with the real engine in a temporary directory.
 */

import { errorCatalogue, reqlErrorClasses, type WharfErrorCode } from '@wharf/wire';
import rethinkdb from 'rethinkdb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeDir, type SpawnedServer, spawnServer } from '../helpers/spawn-server.js';

// @types/rethinkdb lags the driver: use it untyped.
type Any = any;
const r: Any = rethinkdb;

const BODY_LIMIT = 4096;

describe('error codes as the catalogue says, from a real server', () => {
  let server: SpawnedServer;
  let conn: Any;

  beforeAll(async () => {
    server = await spawnServer({ args: ['--limit', `httpBodyBytes=${BODY_LIMIT}`] });
    conn = await r.connect({ host: server.driver.host, port: server.driver.port });
  });

  afterAll(async () => {
    await conn?.close({ noreplyWait: false }).catch(() => {});
    await server?.stop('SIGKILL');
    if (server) removeDir(server.dataDir);
  });

  async function call(method: string, path: string, body?: string, contentType = 'application/json') {
    const res = await fetch(`${server.url}${path}`, {
      method,
      ...(body === undefined ? {} : { body, headers: { 'content-type': contentType } }),
    });
    return { status: res.status, body: (await res.json()) as { statusCode: number; code: string; message: string } };
  }

  /** The answer has `code`, and the status the catalogue gives it, in the status line and the body. */
  function expectCatalogued(res: Awaited<ReturnType<typeof call>>, code: WharfErrorCode): void {
    expect(res.body.code).toBe(code);
    expect(res.status).toBe(errorCatalogue[code].status);
    expect(res.body.statusCode).toBe(errorCatalogue[code].status);
  }

  it('HTTP: engine codes keep their code, and name the table and index', async () => {
    const missing = await call('GET', '/api/tables/zzz');
    expectCatalogued(missing, 'WHARF_ERR_TABLE_NOT_FOUND');
    expect(missing.body.message).toBe('Table `zzz` does not exist');

    expect((await call('POST', '/api/tables', JSON.stringify({ name: 'people' }))).status).toBe(201);
    const twice = await call('POST', '/api/tables', JSON.stringify({ name: 'people' }));
    expectCatalogued(twice, 'WHARF_ERR_TABLE_EXISTS');
    expect(twice.body.message).toBe('Table `people` already exists');

    const noIndex = await call('GET', '/api/tables/people/indexes/by_zip/docs?value=1');
    expectCatalogued(noIndex, 'WHARF_ERR_INDEX_NOT_FOUND');
    expect(noIndex.body.message).toBe('Index `by_zip` does not exist on table `people`');

    expectCatalogued(
      await call('POST', '/api/tables', JSON.stringify({ name: 'bad name' })),
      'WHARF_ERR_INVALID_ARGUMENT',
    );
  });

  it("HTTP: the server's own codes", async () => {
    expectCatalogued(await call('GET', '/api/nothing-here'), 'WHARF_ERR_NOT_FOUND');
    expectCatalogued(
      await call('POST', '/api/tables/people/documents', '[{"id":1},', 'application/json'),
      'WHARF_ERR_MALFORMED_JSON',
    );
    expectCatalogued(
      await call('POST', '/api/tables/people/documents', 'id=1', 'text/plain'),
      'WHARF_ERR_UNSUPPORTED_MEDIA_TYPE',
    );
    const big = JSON.stringify([{ id: 1, pad: 'x'.repeat(BODY_LIMIT) }]);
    const tooLarge = await call('POST', '/api/tables/people/documents', big, 'application/json');
    expectCatalogued(tooLarge, 'WHARF_ERR_BODY_TOO_LARGE');
    expect(tooLarge.body.message).toContain(String(BODY_LIMIT));
  });

  /** What the driver raises for `query`: its class name and message. */
  async function driverError(query: Any): Promise<{ name: string; msg: string }> {
    try {
      await query.run(conn);
    } catch (err) {
      return { name: (err as Error).name, msg: (err as { msg?: string }).msg ?? (err as Error).message };
    }
    throw new Error('expected the query to fail');
  }

  it('ReQL: the driver raises the class of the ReQL type the catalogue gives the code', async () => {
    const opFailed = reqlErrorClasses[errorCatalogue.WHARF_ERR_TABLE_EXISTS.reql];
    expect(opFailed).toBe('ReqlOpFailedError');

    const exists = await driverError(r.tableCreate('people'));
    expect(exists).toEqual({ name: opFailed, msg: 'Table `test.people` already exists.' });

    await r.table('people').indexCreate('by_city').run(conn);
    const noIndex = await driverError(r.table('people').getAll('Paris', { index: 'by_zip' }));
    expect(noIndex.name).toBe(reqlErrorClasses[errorCatalogue.WHARF_ERR_INDEX_NOT_FOUND.reql]);
    expect(noIndex.msg).toBe('Index `by_zip` was not found on table `test.people`.');

    const twice = await driverError(r.table('people').indexCreate('by_city'));
    expect(twice.name).toBe(reqlErrorClasses[errorCatalogue.WHARF_ERR_INDEX_EXISTS.reql]);
    expect(twice.msg).toBe('Index `by_city` already exists on table `test.people`.');
  });
});
