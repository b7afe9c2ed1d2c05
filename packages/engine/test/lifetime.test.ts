/**
 * An open database must not keep Node alive on its own, yet a write in flight must: Node may
 * not exit before its promise settles. Checked in child processes, since it is about exit.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { tempDir } from './helpers.ts';

const SCRIPT = fileURLToPath(new URL('./fixtures/lifetime.ts', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url));

function run(mode: string, dir: string) {
  const child = spawnSync(process.execPath, ['--import', 'tsx', SCRIPT, mode, dir], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    timeout: 30_000, // a hang is the failure this guards against
  });
  return { status: child.status, signal: child.signal, stdout: child.stdout, stderr: child.stderr };
}

it('a database left open does not keep the process alive', async () => {
  const result = run('forgotten', await tempDir());
  expect(result).toMatchObject({ status: 0, signal: null });
  expect(result.stdout).toBe('opened\n');
});

it('writes in flight keep the process alive until they settle', async () => {
  const result = run('in-flight', await tempDir());
  expect(result).toMatchObject({ status: 0, signal: null });
  expect(result.stdout.split('\n').sort()).toEqual(['', 'big 3000', 'hard 1', 'soft 1', 'synced'].sort());
});
