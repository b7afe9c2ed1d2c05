/**
 * The remote targets against a real Wharf server (started in this process): wharf://host:port
 * (the ws ingest path) and rethinkdb://host:port/db (the driver port, through the official
 * `rethinkdb` driver). Same input, same outcome as embedded.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ServerHandle, startServer } from '@wharf/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { remoteTargets, tempDir, wharf } from './helpers.js';

const tmp = tempDir();
const cwd = tmp.dir;
let server: ServerHandle;

beforeAll(async () => {
  server = await startServer({
    data: join(cwd, 'server-data'),
    httpPort: 0,
    driverPort: 0,
    logger: false,
    password: '',
  });
  const good = Array.from({ length: 3000 }, (_, i) => JSON.stringify({ id: i, v: `value ${i}` }));
  // A duplicate key in the same batch (lines 1001–1500 with --batch-size 500): the later one,
  // line 1002, conflicts. (Across concurrent batches, which one wins is not defined.)
  good.splice(1000, 0, '{"id": 1000}');
  good.splice(2000, 0, '{"id": '); // invalid, line 2001
  writeFileSync(join(cwd, 'in.ndjson'), `${good.join('\n')}\n`);
});

afterAll(async () => {
  await server?.close();
  tmp.cleanup();
});

/** Documents in `table`, as the server's HTTP API lists them. */
async function storedIn(table: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${server.http.port}/api/tables/${table}`);
  expect(res.status, `GET /api/tables/${table}`).toBe(200);
  return ((await res.json()) as { documents: number }).documents;
}

describe.each(remoteTargets(() => server))('wharf import --target %s://', (name, target) => {
  it('imports, reports each bad row by line, and syncs once at the end', async () => {
    const table = `remote_${name}`;
    const r = await wharf(
      [
        'import',
        'in.ndjson',
        '-t',
        table,
        '--target',
        target(),
        '--rejects',
        `${name}.rej`,
        '--report',
        `${name}.json`,
        '--batch-size',
        '500',
      ],
      { cwd },
    );
    expect(r.code, r.stdout + r.stderr).toBe(3);
    const report = JSON.parse(readFileSync(join(cwd, `${name}.json`), 'utf8'));
    expect(report.documents).toMatchObject({ read: 3002, written: 3000, rejected: 2, missing: 0 });
    expect(typeof report.finalSyncMs).toBe('number');
    expect(report.engine).toBeNull();
    const rej = readFileSync(join(cwd, `${name}.rej`), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    if (name === 'rethinkdb') {
      // The RethinkDB protocol says only that a batch had an error, not which document: the
      // reject names the batch's range.
      expect(rej[0]).toMatchObject({ kind: 'unattributed', reason: expect.stringMatching(/Duplicate primary key/) });
      expect(rej[0].range.firstLine).toBeLessThanOrEqual(1002);
      expect(rej[0].range.lastLine).toBeGreaterThanOrEqual(1002);
    } else {
      expect(rej[0]).toMatchObject({ line: 1002, kind: 'conflict' });
    }
    expect(rej[1]).toMatchObject({ line: 2001, kind: 'invalid' });
    expect(await storedIn(table)).toBe(3000);
    if (name === 'wharf') {
      // The run is listed in the server's import history (the admin UI's Imports view).
      const { runs } = (await (await fetch(`http://127.0.0.1:${server.http.port}/api/imports`)).json()) as {
        runs: Record<string, unknown>[];
      };
      expect(runs.find((run) => run.table === table)).toMatchObject({
        source: 'wharf import',
        status: 'done',
        documents: 3002,
        inserted: 3000,
        errors: 2,
      });
    }
  });
});
