/**
 * Real `@wharf/engine` databases in fresh temporary directories, for tests that run the engine
 * in-process (the engine's own tests, the server's evaluator and app, the loader's embedded
 * target). Everything is removed when the current test ends.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';
import { Database, type OpenOptions } from '@wharf/engine';

/** A fresh directory under the OS temp dir, removed when the current test ends. */
export async function tempDir(prefix = 'wharf-test-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * A database in a fresh directory, closed (if still open) when the current test ends. Segments
 * are 1 MiB unless asked otherwise: each new segment is zero-filled, and 64 MiB per test adds up.
 */
export async function openTemp(options?: OpenOptions): Promise<{ db: Database; dir: string }> {
  const dir = await tempDir();
  const db = await Database.open(dir, { segmentSize: 1 << 20, ...options });
  // Registered after tempDir's hook, so it runs first (vitest runs these hooks in reverse order).
  onTestFinished(() => db.close());
  return { db, dir };
}
