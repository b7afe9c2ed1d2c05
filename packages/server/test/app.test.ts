/**
 * The composed fastify instance on a real engine in a temporary directory, driven with
 * inject(): no sockets.
 */

import { buildServer, parseArgs, resolveOptions } from '@wharf/server';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { openTemp } from '../../../test/helpers/temp-database.js';

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

describe('buildServer (inject)', () => {
  it('serves the API and syncs an injected database on close without closing it', async () => {
    // No background flush: only a sync makes the soft write below durable.
    const { db } = await openTemp({ flushIntervalMs: 3_600_000 });
    app = buildServer({ database: db, logger: false, driverPort: false });
    await app.ready();
    expect((await app.inject({ method: 'GET', url: '/health' })).json()).toMatchObject({ status: 'ok' });
    expect((await app.inject({ method: 'POST', url: '/api/tables', payload: { name: 't' } })).statusCode).toBe(201);
    const ins = await app.inject({
      method: 'POST',
      url: '/api/tables/t/documents',
      headers: { 'content-type': 'application/x-ndjson' },
      payload: '{"id":1}\n{"id":2}\n',
    });
    expect(ins.json()).toMatchObject({ inserted: 2, errors: 0 });
    expect((await app.inject({ method: 'GET', url: '/api/tables/t/documents/2' })).json()).toEqual({ id: 2 });
    expect((await app.inject({ method: 'GET', url: '/api/tables/t/documents?limit=1' })).json()).toEqual({
      documents: [{ id: 1 }],
      next: '1',
    });
    const err = await app.inject({ method: 'GET', url: '/api/tables/zzz/count' });
    expect(err.statusCode).toBe(404);
    expect(err.json()).toEqual({
      statusCode: 404,
      code: 'WHARF_ERR_TABLE_NOT_FOUND',
      error: 'Not Found',
      message: 'Table `zzz` does not exist',
    });
    const spec = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
    expect(spec.paths['/api/tables/{table}/documents'].get.parameters.map((p: { name: string }) => p.name)).toEqual(
      expect.arrayContaining(['gt', 'limit', 'after', 'table']),
    );
    const soft = await app.inject({
      method: 'POST',
      url: '/api/tables/t/documents?durability=soft',
      headers: { 'content-type': 'application/x-ndjson' },
      payload: '{"id":3}\n',
    });
    expect(soft.json()).toMatchObject({ inserted: 1 });
    const beforeClose = db.stats();
    expect(beforeClose.durableSeq).toBeLessThan(beforeClose.appliedSeq);
    await app.close();
    app = undefined;
    const afterClose = db.stats();
    expect(afterClose.durableSeq).toBe(afterClose.appliedSeq);
    expect(db.closed).toBe(false);
    expect(await db.table('t').get(3)).toEqual({ id: 3 });
  });

  it('validates options and command-line arguments', () => {
    expect(() => resolveOptions({})).toThrow(/data directory is required/);
    expect(() => resolveOptions({ data: 'x', httpPort: 70000 })).toThrow(/httpPort/);
    expect(() => resolveOptions({ data: 'x', limits: { nope: 1 } as never })).toThrow(/unknown limit `nope`/);
    expect(resolveOptions({ data: 'x', password: 'p' })).toMatchObject({
      host: '127.0.0.1',
      httpPort: 8080,
      driverPort: 28015,
      password: 'p',
    });
    // The engine's defaults for a server: a longer cohort wait, no polling for durable answers.
    expect(resolveOptions({ data: 'x' }).engine).toMatchObject({ groupCommitWindowMs: 20, spinWaitUs: 0 });
    expect(resolveOptions({ data: 'x', engine: { spinWaitUs: 500 } }).engine).toMatchObject({ spinWaitUs: 500 });
    expect(parseArgs(['--data', 'd', '--http-port', '0', '--driver-port=off', '--limit', 'httpBodyBytes=10'])).toEqual({
      data: 'd',
      httpPort: 0,
      driverPort: false,
      limits: { httpBodyBytes: 10 },
    });
    expect(() => parseArgs(['--http-port', '1'])).toThrow(/--data DIR is required/);
    expect(() => parseArgs(['--data', 'd', '--bogus'])).toThrow(/unknown option/);
    expect(parseArgs(['--help'])).toBe('help');
  });
});
