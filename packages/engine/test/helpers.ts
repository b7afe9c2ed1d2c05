/** Shared by the engine's tests: real databases in fresh temporary directories. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';
import { Database, type OpenOptions } from '../src/index.ts';

/** A fresh directory under the OS temp dir, removed when the current test ends. */
export async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'wharf-engine-test-'));
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

/** Runs `promise` and returns what it rejected with; fails if it resolved. */
export async function rejection(promise: Promise<unknown>): Promise<Error & { code?: string }> {
  try {
    await promise;
  } catch (error) {
    return error as Error & { code?: string };
  }
  throw new Error('expected the promise to reject, but it resolved');
}
