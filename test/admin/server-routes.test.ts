/**
 * The server side of the admin UI, against a real server process: the static files at / with the
 * SPA fallback that never shadows the API, the page shown when the build is missing, and the
 * in-memory import-run history (/api/imports). No browser needed.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir, removeDir, type SpawnedServer, spawnServer } from '../helpers/spawn-server.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const ADMIN = join(ROOT, 'apps/admin');

async function get(
  server: SpawnedServer,
  path: string,
  accept = '*/*',
): Promise<{ status: number; type: string; text: string }> {
  const res = await fetch(`${server.url}${path}`, { headers: { accept } });
  return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
}

describe('admin static files', () => {
  let server: SpawnedServer;
  beforeAll(async () => {
    if (!existsSync(join(ADMIN, 'dist/index.html'))) {
      const r = spawnSync(process.execPath, [join(ROOT, 'node_modules/vite/bin/vite.js'), 'build'], {
        cwd: ADMIN,
        encoding: 'utf8',
      });
      if (r.status !== 0) throw new Error(`building the admin UI failed:\n${r.stdout}\n${r.stderr}`);
    }
    server = await spawnServer();
  });
  afterAll(async () => {
    await server?.stop();
    if (server) removeDir(server.dataDir);
  });

  it('serves index.html at / and its assets', async () => {
    const index = await get(server, '/', 'text/html');
    expect(index).toMatchObject({ status: 200 });
    expect(index.type).toContain('text/html');
    expect(index.text).toBe(readFileSync(join(ADMIN, 'dist/index.html'), 'utf8'));
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(index.text)?.[1];
    expect(script, 'index.html names its script under /assets/').toMatch(/^\/assets\/.+\.js$/);
    const js = await get(server, script as string);
    expect(js.status).toBe(200);
    expect(js.type).toContain('text/javascript');
  });

  it('falls back to index.html for page navigations only, and never shadows the API', async () => {
    expect((await get(server, '/tables/anything', 'text/html,application/xhtml+xml')).text).toContain('<div id="app">');
    expect(await get(server, '/nowhere')).toMatchObject({ status: 404 });
    expect(JSON.parse((await get(server, '/nowhere')).text)).toMatchObject({ code: 'WHARF_ERR_NOT_FOUND' });
    for (const path of ['/api/nope', '/api', '/ws/nope']) {
      const r = await get(server, path, 'text/html');
      expect(r.status, path).toBe(404);
      expect(JSON.parse(r.text), path).toMatchObject({ code: 'WHARF_ERR_NOT_FOUND' });
    }
    expect((await get(server, '/assets/missing.js', 'text/html')).status).toBe(404);
    expect((await get(server, '/../../package.json', 'text/html')).text).not.toContain('"workspaces"');
    expect(JSON.parse((await get(server, '/health', 'text/html')).text)).toMatchObject({ status: 'ok' });
    expect(JSON.parse((await get(server, '/openapi.json', 'text/html')).text).paths).toHaveProperty(['/api/imports']);
    expect((await get(server, '/metrics', 'text/html')).text).toContain('wharf_engine_commits_total');
    expect(JSON.parse((await get(server, '/api/tables', 'text/html')).text)).toHaveProperty('tables');
  });

  it('keeps a history of import runs', async () => {
    const send = async (method: string, path: string, body: unknown) => {
      const res = await fetch(`${server.url}${path}`, {
        method,
        body: JSON.stringify(body),
        headers: { 'content-type': 'application/json' },
      });
      return { status: res.status, json: (await res.json()) as any };
    };
    const opened = await send('POST', '/api/imports', {
      table: 't',
      file: 'a.csv',
      format: 'csv',
      bytes: 10,
      source: 'cli',
    });
    expect(opened).toMatchObject({ status: 201, json: { table: 't', source: 'cli', status: 'running' } });
    const id = opened.json.id as number;
    const done = await send('PATCH', `/api/imports/${id}`, {
      status: 'done',
      documents: 5,
      inserted: 5,
      errors: 0,
      latencyP99Ms: 1.5,
    });
    expect(done).toMatchObject({ status: 200, json: { id, status: 'done', inserted: 5 } });
    expect(typeof done.json.finishedAt).toBe('number');
    const list = (await (await fetch(`${server.url}/api/imports`)).json()) as { runs: { id: number }[] };
    expect(list.runs[0]).toMatchObject({ id, status: 'done', documents: 5 });
    expect(await send('PATCH', '/api/imports/999999', { status: 'done' })).toMatchObject({
      status: 404,
      json: { code: 'WHARF_ERR_NOT_FOUND' },
    });
    expect(await send('PATCH', `/api/imports/${id}`, { status: 'finished' })).toMatchObject({
      status: 400,
      json: { code: 'WHARF_ERR_BAD_REQUEST' },
    });
    expect(await send('POST', '/api/imports', { file: 'x' })).toMatchObject({
      status: 400,
      json: { code: 'WHARF_ERR_BAD_REQUEST' },
    });
  });
});

describe('admin static files when the build is missing', () => {
  it('answers / with a page saying how to get it', async () => {
    const empty = makeTempDir('wharf-admin-nodist-');
    const server = await spawnServer({ env: { WHARF_ADMIN_DIST: empty } });
    try {
      const r = await get(server, '/', 'text/html');
      expect(r.status).toBe(200);
      expect(r.text).toContain('The admin UI is not installed: reinstall <code>@wharf/server</code>');
      expect((await get(server, '/api/tables')).status).toBe(200);
    } finally {
      await server.stop();
      removeDir(server.dataDir);
      removeDir(empty);
    }
  });
});
