/**
 * One real server process for the tests of the enclosing `describe` block (or file): started
 * before them (spawn-server.ts), killed after them with its data directory removed.
 */
import { afterAll, beforeAll } from 'vitest';
import { removeDir, type SpawnedServer, type SpawnOptions, spawnServer } from './spawn-server.js';

/** Registers the hooks; returns the server, available once the block's tests run. */
export function serverForSuite(opts?: SpawnOptions): () => SpawnedServer {
  let server: SpawnedServer | undefined;
  beforeAll(async () => {
    server = await spawnServer(opts);
  });
  afterAll(async () => {
    await server?.stop('SIGKILL');
    if (server) removeDir(server.dataDir);
  });
  return () => {
    if (!server) throw new Error('the suite server is not started: read it inside a test or hook of its block');
    return server;
  };
}
