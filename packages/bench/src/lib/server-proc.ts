// A real Wharf server process (@wharf/server's main: src/main.ts from the sources, dist/main.js
// installed) on a data directory, on free ports of 127.0.0.1, for the benchmarks that go through
// the driver port or the wharf:// ingest path.

import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { FROM_SOURCE_TREE, NODE_FLAGS } from './child.js';

export interface ServerProc {
  proc: ChildProcess;
  url: string;
  httpPort: number;
  driverPort: number;
  stop(): Promise<number | null>;
}

export interface ServerProcOptions {
  /** The engine's memory budget (MiB), passed as env WHARF_MEMORY_BUDGET_MB. */
  memoryBudgetMb?: number;
  /** More environment for the server process. */
  env?: Record<string, string>;
}

/** The server's entry point, resolved as this package resolves @wharf/server (an optional peer). */
function serverMain(): string {
  const dir = dirname(createRequire(import.meta.url).resolve('@wharf/server/package.json'));
  return FROM_SOURCE_TREE ? join(dir, 'src/main.ts') : join(dir, 'dist/main.js');
}

export async function startServerProc(dataDir: string, o: ServerProcOptions = {}): Promise<ServerProc> {
  const main = serverMain();
  const env: NodeJS.ProcessEnv = { ...process.env, WHARF_PASSWORD: '', ...o.env };
  if (o.memoryBudgetMb !== undefined) env.WHARF_MEMORY_BUDGET_MB = String(o.memoryBudgetMb);
  const proc = spawn(
    process.execPath,
    [...NODE_FLAGS, main, '--data', dataDir, '--http-port', '0', '--driver-port', '0'],
    {
      env,
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const exited = new Promise<number | null>((res) => proc.once('exit', (code) => res(code)));
  const addr = await new Promise<{ http: { host: string; port: number }; driver: { port: number } }>((res, rej) => {
    let buf = '';
    const timer = setTimeout(() => rej(new Error('server did not start in 60 s')), 60_000);
    proc.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      buf += chunk;
      let nl: number;
      while ((nl = buf.indexOf('\n')) !== -1) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (line.includes('"wharf listening"')) {
          clearTimeout(timer);
          res(JSON.parse(line));
        }
      }
    });
    void exited.then((code) => rej(new Error(`server exited (${code}) before listening`)));
  });
  proc.stdout?.resume();
  return {
    proc,
    url: `http://${addr.http.host}:${addr.http.port}`,
    httpPort: addr.http.port,
    driverPort: addr.driver.port,
    stop: () => {
      proc.kill('SIGTERM');
      return exited;
    },
  };
}

/** The engine counters from GET /api/stats. */
export async function serverEngineStats(url: string): Promise<Record<string, number>> {
  const res = await fetch(`${url}/api/stats`);
  return ((await res.json()) as { engine: Record<string, number> }).engine;
}

/** Major page faults of a process so far (pages it waited for the disk to read; /proc/PID/stat), or null. */
export function procMajorFaults(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces): state is field 3, majflt field 12.
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[9]);
  } catch {
    return null;
  }
}

/**
 * CPU time (user + system, ms) a process has used so far (/proc/PID/stat utime + stime, in clock
 * ticks of 10 ms), or null: what a server spends on a loop, whatever the disk and the other
 * processes on the machine do to its wall time.
 */
export function procCpuMs(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // After the command name: state is field 3; utime and stime are fields 14 and 15.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return null;
  }
}

/** Resident set size of a process in bytes (Linux /proc/PID/status VmRSS), or null. */
export function procRssBytes(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/**
 * Bytes of run files a stopped server's close left beyond the `runBytes` it reported before it:
 * the run its final checkpoint wrote (a merge the close abandons leaves no file).
 */
export function closeRunBytes(data: string, runBytesBefore: number): number {
  const onDisk = readdirSync(data)
    .filter((name) => /^run-\d+\.wrun$/.test(name))
    .reduce((sum, name) => sum + statSync(join(data, name)).size, 0);
  return Math.max(0, onDisk - runBytesBefore);
}
