// The raw fdatasync loop in Node: the same syscalls as packages/engine/core/examples/fsync_limit.rs
// (write of `block` bytes at the next offset + fdatasync; the same preparation, the same JSON on
// stdout), through fs.writeSync + fs.fdatasyncSync. It is the reference where the Rust example
// cannot be built (an npm install, or a clone without cargo). Run as its own process:
//
//   node fsync-limit-loop.js DIR [N=1000] [--mode overwrite|append|both] [--block 4096]

import { closeSync, fdatasyncSync, fsyncSync, mkdirSync, openSync, realpathSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { FsyncLimitOutput, OpStats } from './fsync-limit.js';

type Dist = OpStats['op_us'];

function usage(): never {
  process.stderr.write('usage: fsync-limit-loop DIR [N=1000] [--mode overwrite|append|both] [--block BYTES=4096]\n');
  process.exit(2);
}

function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Different bytes every op, so no layer can skip an identical write: i and !i as little-endian
 * u64 at the start and the end, as the Rust example writes them (in 32-bit halves: no BigInt in
 * the timed loop).
 */
function fill(buf: Buffer, i: number): void {
  const lo = i >>> 0;
  const hi = Math.floor(i / 2 ** 32) >>> 0;
  buf.writeUInt32LE(lo, 0);
  buf.writeUInt32LE(hi, 4);
  buf.writeUInt32LE(~lo >>> 0, buf.length - 8);
  buf.writeUInt32LE(~hi >>> 0, buf.length - 4);
}

interface OpTimes {
  write: Float64Array;
  sync: Float64Array;
  totalMs: number;
  prepareMs: number;
}

function loop(fd: number, n: number, block: number, at: (i: number) => number | null): Omit<OpTimes, 'prepareMs'> {
  const buf = Buffer.alloc(block, 0xa5);
  const write = new Float64Array(n);
  const sync = new Float64Array(n);
  const start = performance.now();
  for (let i = 0; i < n; i++) {
    fill(buf, i);
    const t0 = performance.now();
    writeSync(fd, buf, 0, block, at(i));
    const t1 = performance.now();
    fdatasyncSync(fd);
    const t2 = performance.now();
    write[i] = t1 - t0;
    sync[i] = t2 - t1;
  }
  return { write, sync, totalMs: performance.now() - start };
}

function runOverwrite(dir: string, n: number, block: number): OpTimes {
  const path = join(dir, `fsync-limit-overwrite-${process.pid}.dat`);
  const prep = performance.now();
  const fd = openSync(path, 'w+');
  try {
    // Written through: real bytes on every block, then fsync, then the directory entry, so an
    // in-place overwrite needs no metadata update.
    const chunk = Buffer.alloc(1 << 20, 0x5a);
    for (let left = n * block; left > 0; ) {
      const len = Math.min(left, chunk.length);
      left -= writeSync(fd, chunk, 0, len);
    }
    fsyncSync(fd);
    fsyncDir(dir);
    const prepareMs = performance.now() - prep;
    return { ...loop(fd, n, block, (i) => i * block), prepareMs };
  } finally {
    closeSync(fd);
    rmSync(path, { force: true });
  }
}

function runAppend(dir: string, n: number, block: number): OpTimes {
  const path = join(dir, `fsync-limit-append-${process.pid}.dat`);
  const prep = performance.now();
  const fd = openSync(path, 'w');
  try {
    fsyncSync(fd);
    fsyncDir(dir);
    const prepareMs = performance.now() - prep;
    return { ...loop(fd, n, block, () => null), prepareMs };
  } finally {
    closeSync(fd);
    rmSync(path, { force: true });
  }
}

const us = (ms: number) => Math.round(ms * 10_000) / 10;

/** min/median/mean/p90/p99/max in µs, with the Rust example's rounding and percentile rule. */
function dist(samples: Float64Array): Dist {
  const v = Float64Array.from(samples).sort();
  const n = v.length;
  const pct = (p: number) => (n === 0 ? 0 : us(v[Math.min(n - 1, Math.round((p / 100) * (n - 1)))]!));
  const mean = n === 0 ? 0 : us(v.reduce((a, b) => a + b, 0) / n);
  return { min: pct(0), median: pct(50), mean, p90: pct(90), p99: pct(99), max: pct(100) };
}

function report(t: OpTimes, n: number): OpStats {
  const perOp = t.write.map((w, i) => w + t.sync[i]!);
  return {
    ops: n,
    total_ms: Math.round(t.totalMs * 1000) / 1000,
    ops_per_s: Math.round((n / (t.totalMs / 1000)) * 10) / 10,
    prepare_ms: Math.round(t.prepareMs * 1000) / 1000,
    op_us: dist(perOp),
    write_us: dist(t.write),
    fdatasync_us: dist(t.sync),
    fdatasyncs: n,
  };
}

function main(argv: string[]): void {
  const positional: string[] = [];
  let mode = 'both';
  let block = 4096;
  for (let k = 0; k < argv.length; k++) {
    const a = argv[k]!;
    if (a === '--mode') mode = argv[++k] ?? usage();
    else if (a === '--block') block = Number(argv[++k] ?? usage());
    else if (a === '-h' || a === '--help') usage();
    else positional.push(a);
  }
  const n = positional[1] === undefined ? 1000 : Number(positional[1]);
  if (
    positional.length < 1 ||
    positional.length > 2 ||
    !Number.isInteger(n) ||
    n < 0 ||
    !Number.isInteger(block) ||
    block < 16
  )
    usage();
  mkdirSync(positional[0]!, { recursive: true });
  const dir = realpathSync(positional[0]!);
  const results: FsyncLimitOutput['results'] = {};
  if (mode === 'overwrite' || mode === 'both') results.overwrite = report(runOverwrite(dir, n, block), n);
  if (mode === 'append' || mode === 'both') results.append = report(runAppend(dir, n, block), n);
  if (!results.overwrite && !results.append) usage();
  const out: FsyncLimitOutput = { tool: 'fsync_limit', dir, n, block, results };
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main(process.argv.slice(2));
