/**
 * Defect 7: SIGTERM while the engine is poisoned exited 1 with a stack trace. Now a clean drain
 * exits 0 (test/server/shutdown.test.ts) and a poisoned engine exits 3 with one clear line on
 * stderr. The disk fails by the data directory vanishing under the server: the next checkpoint
 * (soon, with a 4 MiB memory budget) cannot create its run file, and a failed checkpoint poisons
 * the engine.
 */
import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { removeDir, type SpawnedServer, spawnServer } from '../helpers/spawn-server.js';

describe('shutdown with a poisoned engine', () => {
  let server: SpawnedServer | undefined;
  afterAll(async () => {
    await server?.stop('SIGKILL');
    if (server) removeDir(server.dataDir);
  });

  it('answers writes with one 503 message, then exits 3 on SIGTERM with one line and no stack trace', async () => {
    server = await spawnServer({ args: ['--memory-budget-mb', '4'] });
    const post = (path: string, body: string, type = 'application/json') =>
      fetch(`${server!.url}${path}`, { method: 'POST', headers: { 'content-type': type }, body }).then(async (res) => ({
        status: res.status,
        json: (await res.json()) as any,
      }));
    expect((await post('/api/tables', JSON.stringify({ name: 't' }))).status).toBe(201);
    rmSync(server.dataDir, { recursive: true, force: true });
    // Hard writes of ~64 KiB until a checkpoint fails (bounded: 400 batches = 25 MiB, six times the memory budget).
    const pad = 'x'.repeat(64 * 1024);
    let failed: { status: number; json: any } | null = null;
    for (let i = 0; i < 400 && failed === null; i++) {
      const res = await post('/api/tables/t/documents?durability=hard', JSON.stringify([{ id: i, pad }]));
      if (res.status !== 200) failed = res;
    }
    expect(failed).not.toBeNull();
    // Once poisoned, every write gets WHARF_ERR_POISONED, its message saying it once.
    const refused = await post('/api/tables/t/documents', JSON.stringify([{ id: 'after' }]));
    expect(refused.status).toBe(503);
    expect(refused.json.code).toBe('WHARF_ERR_POISONED');
    expect(refused.json.message).toMatch(/^Writes are refused: an earlier journal write or fdatasync failed \(/);
    expect(refused.json.message).not.toMatch(/I\/O failure/);
    expect((await fetch(`${server.url}/health`)).status).toBe(503);

    const before = server.output.length;
    const code = await server.stop('SIGTERM');
    expect(code).toBe(3);
    const stderrLines = server.output.slice(before).filter((l) => l.startsWith('wharf-server:'));
    expect(stderrLines).toHaveLength(1);
    expect(stderrLines[0]).toMatch(
      /^wharf-server: stopped with the engine poisoned by an I\/O failure, so writes after it were refused: /,
    );
    expect(server.output.join('\n')).not.toMatch(/^\s+at /m);
  });
});
