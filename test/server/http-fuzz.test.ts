/**
 * Property test (fast-check) of the HTTP routes against a real server process: arbitrary
 * methods, paths with arbitrary table names and keys, query strings, content types, headers
 * and bodies. Every answer is a success or a catalogued JSON error (`WHARF_ERR_*`, never a 500),
 * and the server keeps serving (/health) throughout.
 */
import { errorCatalogue, type WharfErrorCode } from '@wharf/wire';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest } from '../helpers/raw-http.js';
import { removeDir, type SpawnedServer, spawnServer } from '../helpers/spawn-server.js';

const CODES = new Set(Object.keys(errorCatalogue));

async function send(
  server: SpawnedServer,
  method: string,
  path: string,
  headers: Record<string, string>,
  body: Buffer | undefined,
): Promise<{ status: number; type: string; text: string }> {
  const framing: Record<string, string> = body === undefined ? {} : { 'content-length': String(body.length) };
  const res = await rawRequest(server.http.port, method, path, { ...framing, ...headers }, body);
  return { status: res.status, type: String(res.headers['content-type'] ?? ''), text: res.text };
}

const segment = fc.oneof(
  fc.constantFrom(
    'people',
    'wharf_jobs',
    '.',
    '..',
    '.x',
    '%2e%2e',
    '__proto__',
    'constructor',
    'a'.repeat(200),
    '%00',
    '%ff',
    '',
  ),
  fc.string({ maxLength: 20 }).map(encodeURIComponent),
);
const path = fc.oneof(
  fc.tuple(segment).map(([t]) => `/api/tables/${t}`),
  fc.tuple(segment).map(([t]) => `/api/tables/${t}/documents`),
  fc.tuple(segment, segment).map(([t, k]) => `/api/tables/${t}/documents/${k}`),
  fc.tuple(segment).map(([t]) => `/api/tables/${t}/count`),
  fc.tuple(segment).map(([t]) => `/api/tables/${t}/indexes`),
  fc.tuple(segment, segment).map(([t, n]) => `/api/tables/${t}/indexes/${n}/docs`),
  fc.tuple(segment).map(([t]) => `/api/tables/${t}/indexes/wait`),
  fc.tuple(segment).map(([j]) => `/api/jobs/${j}`),
  fc.constantFrom(
    '/api/tables',
    '/api/sync',
    '/api/stats',
    '/api/imports',
    '/api/imports/1',
    '/api/jobs',
    '/openapi.json',
    '/health',
    '/api',
    '/ws/ingest',
  ),
);
const query = fc
  .dictionary(
    fc.constantFrom(
      'durability',
      'conflict',
      'waitForIndexes',
      'keyType',
      'gt',
      'lt',
      'after',
      'limit',
      'reverse',
      'value',
      'lower',
      'fresh',
      'jobTable',
      'deadAfterMs',
      'x',
    ),
    fc.oneof(
      fc.constantFrom('soft', 'hard', 'true', 'replace', '1', '-1', '1e400', '"a"', '[]', 'null'),
      fc.string({ maxLength: 10 }),
    ),
    { maxKeys: 3 },
  )
  .map((q) => {
    const s = new URLSearchParams(q).toString();
    return s ? `?${s}` : '';
  });
const contentType = fc.constantFrom(
  undefined,
  'application/json',
  'application/x-ndjson',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json; charset=utf-16',
  'application/jsonl',
  '*/*',
  '',
);
const body = fc.oneof(
  fc.constant(undefined),
  fc.json().map((j) => Buffer.from(j)),
  fc.array(fc.json(), { maxLength: 5 }).map((lines) => Buffer.from(lines.join('\n'))),
  fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
  fc
    .record({ name: segment, primaryKey: fc.string({ maxLength: 5 }) }, { requiredKeys: [] })
    .map((o) => Buffer.from(JSON.stringify(o))),
  fc.integer({ min: 100, max: 200 }).map((d) => Buffer.from('['.repeat(d) + ']'.repeat(d))),
);
const extraHeaders = fc.dictionary(
  fc.constantFrom('origin', 'host', 'authorization', 'accept', 'x-forwarded-for'),
  fc.string({ maxLength: 30 }).filter((s) => /^[\x20-\x7e]*$/.test(s)),
  { maxKeys: 2 },
);

describe('HTTP routes (fast-check)', () => {
  let server: SpawnedServer;
  beforeAll(async () => {
    server = await spawnServer({ args: ['--limit', 'httpBodyBytes=4096'] });
    await send(server, 'POST', '/api/tables', { 'content-type': 'application/json' }, Buffer.from('{"name":"people"}'));
  });
  afterAll(async () => {
    await server?.stop('SIGKILL');
    if (server) removeDir(server.dataDir);
  });

  it('answers every request with a success or a catalogued JSON error, and keeps serving', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'),
        path,
        query,
        contentType,
        body,
        extraHeaders,
        async (method, p, q, type, b, headers) => {
          const h: Record<string, string> = { ...headers };
          if (type !== undefined) h['content-type'] = type;
          const res = await send(server, method, p + q, h, method === 'GET' || method === 'HEAD' ? undefined : b);
          // 503 is a catalogued refusal (index building, overload); a 500 is a bug.
          expect(
            res.status === 503 || res.status < 500,
            `${method} ${p}${q} → ${res.status}: ${res.text.slice(0, 300)}`,
          ).toBe(true);
          if (res.status >= 400 && method !== 'HEAD') {
            const e = JSON.parse(res.text) as { code?: string; statusCode?: number; message?: string };
            expect(CODES.has(e.code as string), `${method} ${p}${q}: ${res.text.slice(0, 300)}`).toBe(true);
            expect(e.statusCode).toBe(res.status);
            // The status is the one the catalogue gives the code (docs/ERRORS.md).
            expect(res.status, `${method} ${p}${q}: ${e.code}`).toBe(errorCatalogue[e.code as WharfErrorCode].status);
            expect(typeof e.message).toBe('string');
          }
        },
      ),
      { numRuns: 500 },
    );
    expect((await send(server, 'GET', '/health', {}, undefined)).status).toBe(200);
  });
});
