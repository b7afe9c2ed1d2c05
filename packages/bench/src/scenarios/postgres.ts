// A throwaway PostgreSQL cluster for the comparisons: initdb in a temp directory on the data disk,
// started on a free port of 127.0.0.1 (and a private socket directory), stopped and removed after.
// fsync, synchronous_commit and full_page_writes stay at their (durable) defaults.

import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../lib/free-port.js';

export interface PgInstall {
  bin: string;
  version: string;
}

/** The newest /usr/lib/postgresql/<v>/bin that has initdb, or undefined. */
export function findPostgres(): PgInstall | undefined {
  // WHARF_BENCH_PG_BASE: another place to look (e.g. a path that does not exist, to try the skip).
  const base = process.env.WHARF_BENCH_PG_BASE ?? '/usr/lib/postgresql';
  if (!existsSync(base)) return undefined;
  const versions = readdirSync(base)
    .filter((v) => existsSync(join(base, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  if (!versions.length) return undefined;
  return { bin: join(base, versions[0]!, 'bin'), version: versions[0]! };
}

export const PG_MISSING = 'PostgreSQL: not installed, skipped (apt-get install postgresql)';

export interface PgCluster {
  port: number;
  dir: string;
  version: string;
  /** connection settings for node `pg` */
  conn: { host: string; port: number; user: string; database: string };
  stop(): void;
}

/** postgres refuses to run as root: run its tools as the `postgres` user then. */
function asPgUser(cmd: string, args: string[]): [string, string[]] {
  if (process.getuid?.() === 0) return ['runuser', ['-u', 'postgres', '--', cmd, ...args]];
  return [cmd, args];
}

export async function startPostgres(pg: PgInstall, parent: string): Promise<PgCluster> {
  const dir = join(parent, `pg-${process.pid}-${Date.now()}`);
  mkdirSync(dir, { recursive: true });
  const data = join(dir, 'data');
  const sock = join(dir, 'sock');
  mkdirSync(sock);
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
    chownSync(sock, uid, gid);
  }
  const user = process.getuid?.() === 0 ? 'postgres' : (process.env.USER ?? 'postgres');
  const [c1, a1] = asPgUser(join(pg.bin, 'initdb'), [
    '-D',
    data,
    '-A',
    'trust',
    '-U',
    user,
    '-E',
    'UTF8',
    '--no-locale',
  ]);
  const init = spawnSync(c1, a1, { encoding: 'utf8' });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr || init.stdout}`);
  const port = await freePort();
  const opts = [
    `-p ${port}`,
    `-k ${sock}`,
    `-c listen_addresses=127.0.0.1`,
    // Enough WAL that a 1M-row COPY does not force checkpoints mid-load (its best case, as SQLite's).
    `-c max_wal_size=4GB`,
    `-c shared_buffers=256MB`,
  ].join(' ');
  const [c2, a2] = asPgUser(join(pg.bin, 'pg_ctl'), [
    '-D',
    data,
    '-o',
    opts,
    '-l',
    join(dir, 'log'),
    '-w',
    '-t',
    '60',
    'start',
  ]);
  const st = spawnSync(c2, a2, { encoding: 'utf8' });
  if (st.status !== 0) throw new Error(`pg_ctl start failed: ${st.stderr || st.stdout}`);
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    const [c3, a3] = asPgUser(join(pg.bin, 'pg_ctl'), ['-D', data, '-m', 'fast', '-w', 'stop']);
    spawnSync(c3, a3, { stdio: 'ignore' });
    rmSync(dir, { recursive: true, force: true });
  };
  process.on('exit', stop);
  return { port, dir, version: pg.version, conn: { host: '127.0.0.1', port, user, database: 'postgres' }, stop };
}

/** Makes `path`'s directory readable by the postgres server (server-side COPY FROM a file). */
export function shareWithPostgres(dir: string): void {
  if (process.getuid?.() !== 0) return;
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  chownSync(dir, uid, gid);
}
