// Runs one measurement in a fresh child process and reads the JSON object it prints last on stdout.
// A fresh process per sample keeps samples independent (no GC or page-cache state carried over)
// and lets strace count the syscalls of exactly that measurement.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readStraceSummary, type StraceSummary, straceArgv } from './strace.js';

export interface ChildOptions {
  cwd: string;
  /** Run under `strace -f -c`; `syscalls` undefined traces all of them. */
  strace?: { syscalls?: string[] };
  timeoutMs?: number;
  env?: NodeJS.ProcessEnv;
}

export interface ChildResult<T> {
  json: T;
  wallMs: number;
  stderr: string;
  strace?: StraceSummary;
}

export async function runJsonChild<T>(cmd: string, args: string[], opts: ChildOptions): Promise<ChildResult<T>> {
  let straceDir: string | undefined;
  let argv = [cmd, ...args];
  let outFile = '';
  if (opts.strace) {
    straceDir = mkdtempSync(join(tmpdir(), 'wharf-strace-'));
    outFile = join(straceDir, 'summary.txt');
    argv = ['strace', ...straceArgv(outFile, opts.strace.syscalls), ...argv];
  }
  const t0 = performance.now();
  try {
    const { code, signal, stdout, stderr } = await new Promise<{
      code: number | null;
      signal: NodeJS.Signals | null;
      stdout: string;
      stderr: string;
    }>((resolve, reject) => {
      const child = spawn(argv[0]!, argv.slice(1), {
        cwd: opts.cwd,
        env: opts.env ?? process.env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const timer = opts.timeoutMs ? setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs).unref() : undefined;
      child.on('error', reject);
      child.on('close', (code, signal) => {
        if (timer) clearTimeout(timer);
        resolve({ code, signal, stdout, stderr });
      });
    });
    const wallMs = performance.now() - t0;
    if (code !== 0) {
      throw new Error(
        `${argv.join(' ')} failed (${signal ? `signal ${signal}` : `exit ${code}`}):\n${stderr.slice(-4000)}`,
      );
    }
    const line = stdout
      .trim()
      .split('\n')
      .reverse()
      .find((l) => l.startsWith('{'));
    if (!line) throw new Error(`${argv.join(' ')} printed no JSON:\n${stdout.slice(-2000)}\n${stderr.slice(-2000)}`);
    const result: ChildResult<T> = { json: JSON.parse(line) as T, wallMs, stderr };
    if (opts.strace) result.strace = readStraceSummary(outFile);
    return result;
  } finally {
    if (straceDir) rmSync(straceDir, { recursive: true, force: true });
  }
}

/**
 * This package runs either from its TypeScript sources (in a clone: vitest, tsx, `npm run bench`)
 * or from its built dist/ (an npm install, or `npx wharf bench` in a clone). Its child processes
 * run the same way as the parent.
 */
export const FROM_SOURCE_TREE = import.meta.url.endsWith('.ts');

/**
 * Node flags that run the repository's TypeScript as it is: tsx, and the workspace packages
 * resolved to their sources (the "wharf-source" export condition), not their built dist/. tsx is
 * given as the URL this module resolves it to, so a child finds it whatever its working directory.
 */
export const FROM_SOURCE = ['--conditions=wharf-source', '--import', FROM_SOURCE_TREE ? tsxUrl() : 'tsx'];

function tsxUrl(): string {
  try {
    return import.meta.resolve('tsx');
  } catch {
    return 'tsx'; // a runner without import.meta.resolve: from the working directory
  }
}

/** Node flags for a child that runs like this process: FROM_SOURCE in the sources, none from dist/. */
export const NODE_FLAGS: readonly string[] = FROM_SOURCE_TREE ? FROM_SOURCE : [];

/** Absolute path of one of this package's modules, `rel` from src/ without extension ('lib/engine-worker'). */
export function packageModule(rel: string): string {
  return fileURLToPath(new URL(`../${rel}${FROM_SOURCE_TREE ? '.ts' : '.js'}`, import.meta.url));
}

/** argv to run one of this package's modules (see packageModule) as a child node process. */
export function moduleArgv(rel: string, args: string[]): [string, string[]] {
  return [process.execPath, [...NODE_FLAGS, packageModule(rel), ...args]];
}
