/**
 * Real `@wharf/engine` databases in fresh temporary directories, for tests that run the engine
 * in-process (the engine's own tests, the server's evaluator and app, the loader's embedded
 * target). Everything is removed when the current test ends.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Database, type Document, type OpenOptions, type Table } from '@wharf/engine';
import { onTestFinished } from 'vitest';

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

/** A database in a fresh directory (as `openTemp`) with one empty table, `t` unless named. */
export async function openTempTable<Doc extends object = Document>(
  name = 't',
  options?: OpenOptions,
): Promise<{ db: Database; dir: string; t: Table<Doc> }> {
  const { db, dir } = await openTemp(options);
  await db.createTable(name);
  return { db, dir, t: db.table<Doc>(name) };
}

/** Opens the database in `dir` (e.g. again, after a close), runs `fn` on it, and closes it. */
export async function withDb<T>(dir: string, fn: (db: Database) => Promise<T>, options?: OpenOptions): Promise<T> {
  const db = await Database.open(dir, options);
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}
