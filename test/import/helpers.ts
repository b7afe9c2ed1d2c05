/** Helpers for the import tests: run the real `wharf` bin, make temp dirs, read tables back. */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ServerHandle } from '@wharf/server';
import { withDb } from '../helpers/temp-database.js';

export const BIN = resolve(dirname(fileURLToPath(import.meta.url)), 'wharf-from-source.mjs');

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  cwd: string;
  /** Written to the child's standard input, then closed. */
  input?: string | Buffer;
  /** Extra node flags, e.g. --max-old-space-size=16. */
  nodeArgs?: string[];
  env?: NodeJS.ProcessEnv;
}

export function start(args: string[], o: RunOptions): { child: ChildProcess; done: Promise<RunResult> } {
  const child = spawn(process.execPath, [...(o.nodeArgs ?? []), BIN, ...args], {
    cwd: o.cwd,
    env: { ...process.env, WHARF_TARGET: '', ...o.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  child.stdin!.on('error', () => {});
  if (o.input !== undefined) child.stdin!.end(o.input);
  else child.stdin!.end();
  const done = new Promise<RunResult>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  return { child, done };
}

export function wharf(args: string[], o: RunOptions): Promise<RunResult> {
  return start(args, o).done;
}

export function tempDir(prefix = 'wharf-import-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Opens an embedded data directory, runs fn, closes it. */
export { withDb };

export async function countOf(dir: string, table: string): Promise<number> {
  return withDb(dir, (db) => db.table(table).count());
}

/**
 * The two remote targets of a server started in the test process, for `describe.each`: its ws
 * ingest path (wharf://) and its driver port through the official driver (rethinkdb://). The
 * server is read when a test runs, after beforeAll started it.
 */
export function remoteTargets(server: () => ServerHandle): [name: 'wharf' | 'rethinkdb', target: () => string][] {
  return [
    ['wharf', () => `wharf://127.0.0.1:${server().http.port}`],
    ['rethinkdb', () => `rethinkdb://admin@127.0.0.1:${server().driver!.port}/test`],
  ];
}
