// The physical reference: N × (write 4 KiB + fdatasync), run as its own process. In a clone with
// cargo it is packages/engine/core/examples/fsync_limit.rs, built once in release mode (no Node in
// the loop); elsewhere (an npm install, no cargo) fsync-limit-loop.ts, the same syscalls from Node.

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ChildResult, moduleArgv, runJsonChild } from './child.js';

export interface OpStats {
  ops: number;
  total_ms: number;
  ops_per_s: number;
  prepare_ms: number;
  op_us: Record<'min' | 'median' | 'mean' | 'p90' | 'p99' | 'max', number>;
  write_us: Record<'min' | 'median' | 'mean' | 'p90' | 'p99' | 'max', number>;
  fdatasync_us: Record<'min' | 'median' | 'mean' | 'p90' | 'p99' | 'max', number>;
  fdatasyncs: number;
}

export interface FsyncLimitOutput {
  tool: 'fsync_limit';
  dir: string;
  n: number;
  block: number;
  results: { overwrite?: OpStats; append?: OpStats };
}

/** Builds the example (`cargo build --release --example fsync_limit`) and returns its binary path. */
export function buildFsyncLimit(repoRoot: string): string {
  return buildExample(repoRoot, 'fsync_limit');
}

/** Builds `packages/engine/core/examples/<name>.rs` in release mode and returns its binary path. */
export function buildExample(repoRoot: string, name: string): string {
  const r = spawnSync(
    'cargo',
    ['build', '--release', '-p', 'wharf-engine', '--example', name, '--message-format=json-render-diagnostics'],
    {
      cwd: join(repoRoot, 'packages/engine'),
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      maxBuffer: 64 << 20,
    },
  );
  if (r.status !== 0) throw new Error(`cargo build --example ${name} failed`);
  for (const line of r.stdout.split('\n')) {
    if (!line.startsWith('{')) continue;
    const msg = JSON.parse(line) as { reason?: string; target?: { name?: string }; executable?: string | null };
    if (msg.reason === 'compiler-artifact' && msg.target?.name === name && msg.executable) {
      return msg.executable;
    }
  }
  throw new Error(`cargo did not report the ${name} executable`);
}

/**
 * The root of the Wharf repository this package sits in (the nearest directory above it holding
 * the engine's Cargo workspace), or undefined in an npm install.
 */
export function findRepoRoot(from = dirname(fileURLToPath(import.meta.url))): string | undefined {
  for (let d = resolve(from); ; d = dirname(d)) {
    if (existsSync(join(d, 'packages/engine/Cargo.toml')) && existsSync(join(d, 'packages/engine/core/examples')))
      return d;
    if (dirname(d) === d) return undefined;
  }
}

/** Whether `cargo` runs here. */
export function hasCargo(): boolean {
  return spawnSync('cargo', ['--version'], { stdio: 'ignore' }).status === 0;
}

export interface FsyncLimitRunner {
  /** 'rust': examples/fsync_limit.rs; 'node': fsync-limit-loop.ts */
  kind: 'rust' | 'node';
  describe: string;
  run(
    dir: string,
    n: number,
    mode: 'overwrite' | 'append' | 'both',
    opts?: { strace?: { syscalls?: string[] } },
  ): Promise<ChildResult<FsyncLimitOutput>>;
}

/**
 * The reference loop to use: the Rust example in a clone with cargo (`prefer: 'node'` forces the
 * Node loop), else the Node loop. The Rust one stays the primary where it can be built: it is the
 * floor with no runtime at all between the loop and the syscalls.
 */
export function fsyncLimitRunner(
  o: { repo?: string; prefer?: 'rust' | 'node'; log?: (line: string) => void } = {},
): FsyncLimitRunner {
  const rust = o.prefer !== 'node' && o.repo !== undefined && hasCargo();
  if (o.prefer === 'rust' && !rust)
    throw new Error(
      'the Rust fdatasync loop needs a clone of the Wharf repository and cargo; use the Node loop (--fsync-loop node)',
    );
  if (rust) {
    let bin: string | undefined;
    return {
      kind: 'rust',
      describe: 'examples/fsync_limit.rs (Rust, cargo build --release)',
      run: (dir, n, mode, opts = {}) => {
        if (!bin) {
          o.log?.('building the fdatasync reference (cargo build --release --example fsync_limit) …');
          bin = buildFsyncLimit(o.repo!);
        }
        return runFsyncLimit(bin, dir, n, mode, { cwd: process.cwd(), ...opts });
      },
    };
  }
  return {
    kind: 'node',
    describe: 'fs.writeSync + fs.fdatasyncSync loop (Node)',
    run: (dir, n, mode, opts = {}) => {
      const [cmd, argv] = moduleArgv('lib/fsync-limit-loop', [dir, String(n), '--mode', mode]);
      return runJsonChild<FsyncLimitOutput>(cmd, argv, { cwd: process.cwd(), ...opts });
    },
  };
}

export function runFsyncLimit(
  bin: string,
  dir: string,
  n: number,
  mode: 'overwrite' | 'append' | 'both',
  opts: { cwd: string; strace?: { syscalls?: string[] } },
): Promise<ChildResult<FsyncLimitOutput>> {
  return runJsonChild<FsyncLimitOutput>(bin, [dir, String(n), '--mode', mode], opts);
}
