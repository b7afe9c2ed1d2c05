// A real RethinkDB server (2.4.x) for the scenarios that compare with it, found through the
// environment variable RETHINKDB_BIN or `rethinkdb` on PATH, started on free ports of 127.0.0.1
// in a directory of its own, and its own import tool (`rethinkdb-import`, from
// `pip install rethinkdb`: env RETHINKDB_IMPORT or PATH). Absent, the rows that need them are
// skipped with one line saying how to get them.

import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { freePort } from './free-port.js';

export const RETHINKDB_MISSING =
  'RethinkDB: not found, skipped (set RETHINKDB_BIN to a rethinkdb 2.4 server binary, or put it on PATH)';
export const RETHINKDB_IMPORT_MISSING =
  'rethinkdb-import: not found, skipped (pip install rethinkdb, then RETHINKDB_IMPORT=…/bin/rethinkdb-import or PATH)';

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const p = join(dir, name);
    if (dir && existsSync(p)) return p;
  }
  return undefined;
}

/** The server binary, or undefined. */
export function findRethinkdb(): string | undefined {
  const env = process.env.RETHINKDB_BIN;
  if (env) return existsSync(env) ? env : undefined;
  return onPath('rethinkdb');
}

/** RethinkDB's own import tool, or undefined. */
export function findRethinkdbImport(): string | undefined {
  const env = process.env.RETHINKDB_IMPORT;
  if (env) return existsSync(env) ? env : undefined;
  return onPath('rethinkdb-import');
}

export interface RethinkdbProc {
  proc: ChildProcess;
  /** Its `--server-name`, when one was given. */
  name: string | undefined;
  driverPort: number;
  clusterPort: number;
  /** Resolves when the process has exited (killed by a test, say). */
  exited: Promise<void>;
  stop(): Promise<void>;
}

export interface RethinkdbStartOptions {
  /** The cluster port of a running server, to make this one a node of its cluster. */
  join?: number;
  /** `--server-name` (RethinkDB makes one up otherwise). */
  name?: string;
}

/** Starts a fresh server in `dir` (removed by stop()); resolves once it accepts drivers. */
export async function startRethinkdb(bin: string, dir: string, o: RethinkdbStartOptions = {}): Promise<RethinkdbProc> {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const driverPort = await freePort();
  const clusterPort = await freePort();
  const data = join(dir, 'data');
  const proc = spawn(
    bin,
    ['--bind', '127.0.0.1', '--driver-port', String(driverPort), '--cluster-port', String(clusterPort)].concat([
      '--no-http-admin',
      '--directory',
      data,
      ...(o.join === undefined ? [] : ['--join', `127.0.0.1:${o.join}`]),
      ...(o.name === undefined ? [] : ['--server-name', o.name]),
    ]),
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const exited = new Promise<void>((res) => proc.once('exit', () => res()));
  await new Promise<void>((res, rej) => {
    let out = '';
    const timer = setTimeout(() => rej(new Error(`rethinkdb did not start in 120 s:\n${out.slice(-2000)}`)), 120_000);
    const onData = (d: Buffer) => {
      out += d.toString();
      if (out.includes('Server ready')) {
        clearTimeout(timer);
        res();
      }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', onData);
    void exited.then(() => {
      clearTimeout(timer);
      rej(new Error(`rethinkdb exited before it was ready:\n${out.slice(-2000)}`));
    });
  });
  return {
    proc,
    name: o.name,
    driverPort,
    clusterPort,
    exited,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * `nodes` servers on 127.0.0.1 named n0, n1…, each in `dir/nN`, the others joined to the first;
 * resolves once the first sees them all.
 */
export async function startRethinkdbCluster(bin: string, dir: string, nodes: number): Promise<RethinkdbProc[]> {
  const first = await startRethinkdb(bin, join(dir, 'n0'), { name: 'n0' });
  const rest = await Promise.all(
    Array.from({ length: nodes - 1 }, (_, i) =>
      startRethinkdb(bin, join(dir, `n${i + 1}`), { join: first.clusterPort, name: `n${i + 1}` }),
    ),
  );
  const { default: r } = await import('rethinkdb');
  const conn = await r.connect({ host: '127.0.0.1', port: first.driverPort });
  try {
    for (let i = 0; ; i++) {
      const seen = (await r.db('rethinkdb').table('server_status').count().run(conn)) as number;
      if (seen === nodes) break;
      if (i > 1200) throw new Error(`the RethinkDB cluster's first node sees ${seen} of ${nodes} nodes after 120 s`);
      await new Promise((res) => setTimeout(res, 100));
    }
  } finally {
    await conn.close();
  }
  return [first, ...rest];
}

/**
 * `rethinkdb-import -f FILE --table db.table --pkey id`: wall time of the tool's process, in ms.
 * FILE must end in .json; the tool reads an array or a sequence of objects (NDJSON). `--pkey` is
 * given because the tool's table creation fails without it (it passes primary_key=None).
 */
export function rethinkdbImport(tool: string, driverPort: number, file: string, table: string): number {
  const t0 = performance.now();
  const args = ['-f', file, '--table', table, '--pkey', 'id', '-c', `127.0.0.1:${driverPort}`, '--force'];
  const r = spawnSync(tool, args, {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`rethinkdb-import exited ${r.status}:\n${(r.stderr || r.stdout).slice(-2000)}`);
  return ms;
}
