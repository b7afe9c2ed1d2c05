/**
 * Runs the real server (packages/server/src/main.ts) as a child process on 127.0.0.1 with free
 * ports (port 0) and a temporary data directory, and reads the ports it picked from its
 * "wharf listening" log line. Tests stop it with SIGTERM (graceful) or SIGKILL.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const MAIN = join(ROOT, 'packages/server/src/main.ts');

export interface SpawnOptions {
  /** Reuse a data directory (restart tests); default: a new temporary one. */
  dataDir?: string;
  /** Extra CLI arguments, e.g. ['--limit', 'httpBodyBytes=1024']. */
  args?: string[];
  /** Extra environment (e.g. WHARF_PASSWORD). */
  env?: Record<string, string>;
  /** How long to wait for the listening line. Default 30 s. */
  startTimeoutMs?: number;
  /** Called with the child as soon as it is spawned, before it listens (e.g. to kill it during recovery). */
  onSpawn?: (proc: ChildProcess) => void;
}

export interface SpawnedServer {
  proc: ChildProcess;
  dataDir: string;
  http: { host: string; port: number };
  driver: { host: string; port: number };
  /** Base URL of the HTTP API, e.g. http://127.0.0.1:40000 */
  url: string;
  /** Every line the server wrote to stdout and stderr. */
  output: string[];
  /** Send a signal and wait for the exit; resolves with the exit code (null when killed by a signal). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export function makeTempDir(prefix = 'wharf-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

export async function spawnServer(opts: SpawnOptions = {}): Promise<SpawnedServer> {
  const dataDir = opts.dataDir ?? makeTempDir();
  const proc = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      MAIN,
      '--data',
      dataDir,
      '--http-port',
      '0',
      '--driver-port',
      '0',
      '--host',
      '127.0.0.1',
      ...(opts.args ?? []),
    ],
    { cwd: ROOT, env: { ...process.env, WHARF_PASSWORD: '', ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  opts.onSpawn?.(proc);
  const output: string[] = [];
  const exited = new Promise<number | null>((resolveExit) => proc.once('exit', (code) => resolveExit(code)));

  const listening = new Promise<{ http: { host: string; port: number }; driver: { host: string; port: number } }>(
    (resolveListen, reject) => {
      const timer = setTimeout(
        () =>
          reject(new Error(`server did not start within ${opts.startTimeoutMs ?? 30_000} ms:\n${output.join('\n')}`)),
        opts.startTimeoutMs ?? 30_000,
      );
      const onLine = (line: string): void => {
        output.push(line);
        if (!line.startsWith('{')) return;
        try {
          const rec = JSON.parse(line) as {
            msg?: string;
            http?: { host: string; port: number };
            driver?: { host: string; port: number };
          };
          if (rec.msg === 'wharf listening' && rec.http && rec.driver) {
            clearTimeout(timer);
            resolveListen({ http: rec.http, driver: rec.driver });
          }
        } catch {
          // not a log record
        }
      };
      const lines = (stream: NodeJS.ReadableStream): void => {
        let rest = '';
        stream.setEncoding('utf8');
        stream.on('data', (chunk: string) => {
          rest += chunk;
          let nl: number;
          while ((nl = rest.indexOf('\n')) !== -1) {
            onLine(rest.slice(0, nl));
            rest = rest.slice(nl + 1);
          }
        });
      };
      lines(proc.stdout as NodeJS.ReadableStream);
      lines(proc.stderr as NodeJS.ReadableStream);
      void exited.then((code) => {
        clearTimeout(timer);
        reject(new Error(`server exited with ${code} before listening:\n${output.join('\n')}`));
      });
    },
  );

  let addresses: Awaited<typeof listening>;
  try {
    addresses = await listening;
  } catch (err) {
    proc.kill('SIGKILL');
    throw err;
  }
  return {
    proc,
    dataDir,
    ...addresses,
    url: `http://${addresses.http.host}:${addresses.http.port}`,
    output,
    stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      return exited;
    },
  };
}
