// The physical reference: packages/engine/core/examples/fsync_limit.rs, built once in release mode
// and run as its own process (no Node in the loop).

import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { runJsonChild, type ChildResult } from './child.js';

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
    { cwd: join(repoRoot, 'packages/engine'), encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 << 20 },
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

export function runFsyncLimit(
  bin: string,
  dir: string,
  n: number,
  mode: 'overwrite' | 'append' | 'both',
  opts: { cwd: string; strace?: { syscalls?: string[] } },
): Promise<ChildResult<FsyncLimitOutput>> {
  return runJsonChild<FsyncLimitOutput>(bin, [dir, String(n), '--mode', mode], opts);
}
