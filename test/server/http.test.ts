/**
 * The HTTP API against a real server process: every route, and bad input (malformed JSON,
 * oversized bodies, wrong content types, invalid parameters, garbage bytes) answered with a
 * WHARF_ERR_* code while the server keeps serving.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeDir, type SpawnedServer, spawnServer } from '../helpers/spawn-server.js';

const BODY_LIMIT = 256 * 1024;

describe('HTTP API', () => {
  let server: SpawnedServer;
  const api = async (
    method: string,
    path: string,
    body?: unknown,
    type = 'application/json',
  ): Promise<{ status: number; json: any }> => {
    const init: RequestInit = { method };
    if (body !== undefined) {
      init.body = typeof body === 'string' || Buffer.isBuffer(body) ? (body as string) : JSON.stringify(body);
      init.headers = { 'content-type': type };
    }
    const res = await fetch(`${server.url}${path}`, init);
    const text = await res.text();
    let json: unknown = text;
    try {
      json = JSON.parse(text);
    } catch {
      // text answers (metrics)
    }
    return { status: res.status, json };
  };

  beforeAll(async () => {
    server = await spawnServer({ args: ['--limit', `httpBodyBytes=${BODY_LIMIT}`] });
  });

  afterAll(async () => {
    await server?.stop('SIGKILL');
    if (server) removeDir(server.dataDir);
  });

  it('reports health and serves an OpenAPI document generated from the route schemas', async () => {
    expect(await api('GET', '/health')).toMatchObject({ status: 200, json: { status: 'ok' } });
    const { json } = await api('GET', '/openapi.json');
    expect(json.openapi).toMatch(/^3\./);
    for (const path of [
      '/api/tables',
      '/api/tables/{table}/documents',
      '/api/tables/{table}/documents/{key}',
      '/api/tables/{table}/count',
      '/api/sync',
      '/api/tables/{table}/sync',
      '/api/stats',
      '/api/jobs',
      '/api/jobs/{job}',
      '/metrics',
      '/health',
    ]) {
      expect(Object.keys(json.paths)).toContain(path);
    }
    expect(Object.keys(json.components.schemas)).toEqual(
      expect.arrayContaining(['WriteResult', 'ErrorResponse', 'TableInfo']),
    );
    expect(json.paths['/api/tables/{table}/documents'].post.requestBody.content).toHaveProperty('application/x-ndjson');
  });

  it('creates, lists, describes and drops tables', async () => {
    expect(await api('POST', '/api/tables', { name: 'people', primaryKey: 'name' })).toEqual({
      status: 201,
      json: { created: true, name: 'people', primaryKey: 'name' },
    });
    expect(await api('POST', '/api/tables', { name: 'people' })).toMatchObject({
      status: 409,
      json: { code: 'WHARF_ERR_TABLE_EXISTS' },
    });
    expect(await api('POST', '/api/tables', { name: 'bad name!' })).toMatchObject({
      status: 400,
      json: { code: 'WHARF_ERR_INVALID_ARGUMENT' },
    });
    expect(await api('POST', '/api/tables', { nme: 'x' })).toMatchObject({
      status: 400,
      json: { code: 'WHARF_ERR_BAD_REQUEST' },
    });
    expect(await api('POST', '/api/tables', { name: 'tmp' })).toMatchObject({ status: 201 });
    const list = await api('GET', '/api/tables');
    expect(list.json.tables.map((t: { name: string }) => t.name).sort()).toEqual(['people', 'tmp']);
    expect(await api('GET', '/api/tables/people')).toMatchObject({
      status: 200,
      json: { name: 'people', primaryKey: 'name', documents: 0 },
    });
    expect(await api('DELETE', '/api/tables/tmp')).toEqual({ status: 200, json: { dropped: true, name: 'tmp' } });
    expect(await api('DELETE', '/api/tables/tmp')).toMatchObject({
      status: 404,
      json: { code: 'WHARF_ERR_TABLE_NOT_FOUND' },
    });
    expect(await api('GET', '/api/tables/tmp')).toMatchObject({
      status: 404,
      json: { code: 'WHARF_ERR_TABLE_NOT_FOUND' },
    });
  });

  it('inserts a JSON array, one object, and NDJSON with a bad line, with RethinkDB-shaped results', async () => {
    await api('POST', '/api/tables', { name: 'docs' });
    const arr = await api('POST', '/api/tables/docs/documents?durability=hard', [
      { id: 1, a: 1 },
      { id: 'one', a: 2 },
      { a: 3 },
      4,
    ]);
    expect(arr.status).toBe(200);
    expect(arr.json).toMatchObject({ inserted: 3, errors: 1, replaced: 0, unchanged: 0, deleted: 0, skipped: 0 });
    expect(arr.json.generated_keys).toHaveLength(1);
    expect(arr.json.document_errors).toEqual([{ index: 3, message: expect.any(String) }]);

    expect((await api('POST', '/api/tables/docs/documents', { id: 2, a: 'single' })).json).toMatchObject({
      inserted: 1,
    });
    const nd = await api(
      'POST',
      '/api/tables/docs/documents?durability=soft',
      '{"id":10}\n\n{broken\n{"id":11}\n',
      'application/x-ndjson',
    );
    expect(nd.json).toMatchObject({ inserted: 2, errors: 1, document_errors: [{ index: 2 }] });
    expect((await api('POST', '/api/tables/docs/documents', [{ id: 1, a: 9 }])).json).toMatchObject({
      errors: 1,
      inserted: 0,
    });
    expect((await api('POST', '/api/tables/docs/documents?conflict=replace', [{ id: 1, a: 9 }])).json).toMatchObject({
      replaced: 1,
    });
    expect((await api('POST', '/api/tables/docs/documents?conflict=update', [{ id: 1, b: 2 }])).json).toMatchObject({
      replaced: 1,
    });
    expect((await api('GET', '/api/tables/docs/documents/1')).json).toEqual({ id: 1, a: 9, b: 2 });
    expect(await api('POST', '/api/tables/missing/documents', [{ id: 1 }])).toMatchObject({
      status: 404,
      json: { code: 'WHARF_ERR_TABLE_NOT_FOUND' },
    });
  });

  it('gets by key (numbers and strings), counts, scans with paging, deletes and syncs', async () => {
    await api('POST', '/api/tables', { name: 'keys' });
    const docs = [...Array.from({ length: 25 }, (_, i) => ({ id: i })), { id: '5' }, { id: 'a' }, { id: 'b' }];
    await api('POST', '/api/tables/keys/documents', docs);
    expect((await api('GET', '/api/tables/keys/documents/5')).json).toEqual({ id: 5 });
    expect((await api('GET', '/api/tables/keys/documents/5?keyType=string')).json).toEqual({ id: '5' });
    expect((await api('GET', '/api/tables/keys/documents/a')).json).toEqual({ id: 'a' });
    expect(await api('GET', '/api/tables/keys/documents/zzz')).toMatchObject({
      status: 404,
      json: { code: 'WHARF_ERR_DOCUMENT_NOT_FOUND' },
    });
    expect((await api('GET', '/api/tables/keys/count')).json).toEqual({ count: 28 });

    const all: unknown[] = [];
    let next: string | null = null;
    let pages = 0;
    do {
      const q: string = next === null ? '' : `&after=${encodeURIComponent(next)}`;
      const page = (await api('GET', `/api/tables/keys/documents?limit=10${q}`)).json as {
        documents: { id: unknown }[];
        next: string | null;
      };
      all.push(...page.documents.map((d) => d.id));
      next = page.next;
      pages++;
    } while (next !== null && pages < 10);
    expect(pages).toBe(3);
    expect(all).toEqual([...Array.from({ length: 25 }, (_, i) => i), '5', 'a', 'b']);

    const rev = (await api('GET', '/api/tables/keys/documents?limit=3&reverse=true')).json;
    expect(rev.documents.map((d: { id: unknown }) => d.id)).toEqual(['b', 'a', '5']);
    const range = (await api('GET', '/api/tables/keys/documents?gte=3&lt=6')).json;
    expect(range.documents.map((d: { id: unknown }) => d.id)).toEqual([3, 4, 5]);
    const strings = (await api('GET', '/api/tables/keys/documents?gte=%225%22')).json;
    expect(strings.documents.map((d: { id: unknown }) => d.id)).toEqual(['5', 'a', 'b']);

    expect((await api('DELETE', '/api/tables/keys/documents/5?keyType=string&durability=hard')).json).toMatchObject({
      deleted: 1,
    });
    expect((await api('DELETE', '/api/tables/keys/documents/5')).json).toMatchObject({ deleted: 1 });
    expect((await api('DELETE', '/api/tables/keys/documents/5')).json).toMatchObject({ deleted: 0, skipped: 1 });
    expect((await api('GET', '/api/tables/keys/count')).json).toEqual({ count: 26 });
    expect(await api('POST', '/api/tables/keys/sync')).toEqual({ status: 200, json: { synced: 1 } });
    expect(await api('POST', '/api/sync')).toEqual({ status: 200, json: { synced: 1 } });
    expect(await api('POST', '/api/tables/nope/sync')).toMatchObject({ status: 404 });
  });

  it('serves stats and Prometheus metrics', async () => {
    const stats = (await api('GET', '/api/stats')).json;
    expect(stats.engine.fdatasyncs).toBeGreaterThan(0);
    expect(stats.engine.documentsWritten).toBeGreaterThan(0);
    // Bytes written per byte loaded, passed through: the inserts above were journaled.
    const e = stats.engine;
    expect(e.bytesLoaded).toBeGreaterThan(0);
    expect(e.bytesWrittenJournal).toBeGreaterThan(0);
    expect(e.bytesWritten).toBe(
      e.bytesWrittenJournal + e.bytesWrittenFlushes + e.bytesWrittenMerges + e.bytesWrittenOther,
    );
    expect(e.bytesWrittenPerByteLoaded).toBeCloseTo(
      (e.bytesWrittenJournal + e.bytesWrittenFlushes + e.bytesWrittenMerges) / e.bytesLoaded,
      9,
    );
    expect(stats.server.httpInsertBatches).toBeGreaterThan(0);
    expect(stats.server.eventLoopDelayMaxMs).toBeGreaterThanOrEqual(stats.server.eventLoopDelayP99Ms);
    expect(stats.server.eventLoopDelayP99Ms).toBeGreaterThan(0);
    // The server process's GC pauses (a fresh server has run scavenges by now; counted from its start).
    expect(stats.server.gcMinor).toBeGreaterThan(0);
    expect(stats.server.gcMinorMs).toBeGreaterThan(0);
    expect(Number.isInteger(stats.server.gcMajor) && stats.server.gcMajor >= 0).toBe(true); // a count, maybe still 0
    const metrics = await fetch(`${server.url}/metrics`);
    expect(metrics.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await metrics.text();
    expect(text).toMatch(/^# TYPE wharf_engine_fdatasyncs_total counter$/m);
    expect(text).toMatch(/^wharf_engine_fdatasyncs_total \d+$/m);
    expect(text).toMatch(/^wharf_server_http_requests_total \d+$/m);
    expect(text).toMatch(/^wharf_engine_bytes_written_journal_total [1-9]\d*$/m);
    expect(text).toMatch(/^# TYPE wharf_engine_bytes_written_per_byte_loaded gauge$/m);
    expect(text).toMatch(/^# TYPE wharf_server_event_loop_delay_max_ms gauge$/m);
    expect(text).toMatch(/^wharf_server_gc_major_total \d+$/m);
    // Per-stage write latency: the inserts above were answered by the engine and delivered.
    expect(stats.engine.writeStages.commit.count).toBeGreaterThan(0);
    expect(stats.engine.writeStages.delivery.count).toBe(stats.engine.writeStages.commit.count);
    expect(text).toMatch(/^wharf_engine_write_stage_us\{stage="commit",quantile="0\.99"\} [1-9]\d*$/m);
    expect(text).toMatch(/^wharf_engine_write_stage_us\{stage="pool_wait",quantile="1"\} \d+$/m);
  });

  it('answers bad input with WHARF_ERR_* codes and keeps serving', async () => {
    expect(await api('POST', '/api/tables', '{"name":', 'application/json')).toMatchObject({
      status: 400,
      json: { code: 'WHARF_ERR_MALFORMED_JSON' },
    });
    expect(await api('POST', '/api/tables/docs/documents', '[{"id":100},', 'application/json')).toMatchObject({
      status: 400,
      json: { code: 'WHARF_ERR_MALFORMED_JSON' },
    });
    expect(await api('POST', '/api/tables/docs/documents', 'a,b\n1,2', 'text/csv')).toMatchObject({
      status: 415,
      json: { code: 'WHARF_ERR_UNSUPPORTED_MEDIA_TYPE' },
    });
    expect(await api('POST', '/api/tables/docs/documents?durability=maybe', [{ id: 101 }])).toMatchObject({
      status: 400,
      json: { code: 'WHARF_ERR_BAD_REQUEST' },
    });
    expect(await api('GET', '/api/tables/docs/documents?limit=0')).toMatchObject({
      status: 400,
      json: { code: 'WHARF_ERR_BAD_REQUEST' },
    });
    expect(await api('GET', '/nowhere')).toMatchObject({ status: 404, json: { code: 'WHARF_ERR_NOT_FOUND' } });

    const big = JSON.stringify(Array.from({ length: 2000 }, (_, i) => ({ id: `big-${i}`, pad: 'x'.repeat(200) })));
    expect(big.length).toBeGreaterThan(BODY_LIMIT);
    expect(await api('POST', '/api/tables/docs/documents', big)).toMatchObject({
      status: 413,
      json: { code: 'WHARF_ERR_BODY_TOO_LARGE' },
    });
    expect((await api('GET', '/api/tables/docs/documents/big-0')).status).toBe(404);

    // Garbage bytes on the HTTP port: 400 and the connection is closed.
    const answer = await new Promise<string>((resolve, reject) => {
      const s = connect(server.http.port, server.http.host);
      let out = '';
      s.on('data', (c) => (out += c.toString()));
      s.on('close', () => resolve(out));
      s.on('error', reject);
      s.write(Buffer.from([0x16, 0x03, 0x01, 0x00, 0xff, 0x00, 0x0d, 0x0a, 0x0d, 0x0a]));
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400/);

    expect(await api('GET', '/health')).toMatchObject({ status: 200 });
    expect((await api('GET', '/api/tables/docs/count')).json).toEqual({ count: 6 });
  });

  it('keeps serving others while a client never reads its responses', async () => {
    await api('POST', '/api/tables', { name: 'wide' });
    for (let b = 0; b < 25; b++) {
      const docs = Array.from({ length: 200 }, (_, i) => ({ id: b * 200 + i, pad: 'w'.repeat(1000) }));
      expect((await api('POST', '/api/tables/wide/documents?durability=soft', docs)).json).toMatchObject({
        inserted: 200,
      });
    }
    const slow = connect(server.http.port, server.http.host);
    await new Promise((resolve) => slow.once('connect', resolve));
    slow.pause(); // never read: ~5 MB per answer piles up
    const req = `GET /api/tables/wide/documents?limit=5000 HTTP/1.1\r\nHost: x\r\n\r\n`;
    for (let i = 0; i < 20; i++) slow.write(req);
    for (let i = 0; i < 20; i++) {
      expect(
        (await api('POST', '/api/tables/docs/documents?durability=hard', [{ id: `during-${i}` }])).json,
      ).toMatchObject({ inserted: 1 });
    }
    expect((await api('GET', '/api/tables/wide/count')).json).toEqual({ count: 5000 });
    slow.destroy();
    expect((await api('GET', '/health')).status).toBe(200);
    expect((await api('GET', '/api/tables/docs/count')).json).toEqual({ count: 26 });
  });
});
