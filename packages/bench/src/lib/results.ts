// Machine details and the results JSON file (results/<name>-<timestamp>.json, gitignored).

import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';

function sh(cmd: string, args: string[]): string | undefined {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

export interface MachineInfo {
  hostname: string;
  platform: string;
  kernel: string;
  cpus: number;
  cpuModel: string;
  memoryGiB: number;
  node: string;
  rustc?: string;
  /** filesystem of the benchmark directory: source device, type, mount options */
  filesystem?: string;
  /** /sys/block/<dev>/queue/write_cache of the device, when found */
  writeCache?: string;
  /** 1/5/15-minute load averages when the info was taken (other work on the machine skews figures) */
  loadavg: number[];
}

export function machineInfo(dir: string): MachineInfo {
  const fs = sh('findmnt', ['-n', '-T', dir, '-o', 'SOURCE,FSTYPE,OPTIONS'])?.replace(/\s+/g, ' ');
  let writeCache: string | undefined;
  const dev = fs?.split(/\s+/)[0]?.match(/^\/dev\/([a-z]+)/)?.[1];
  if (dev) writeCache = sh('cat', [`/sys/block/${dev}/queue/write_cache`]);
  return {
    hostname: os.hostname(),
    platform: `${os.platform()} ${os.arch()}`,
    kernel: os.release(),
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    rustc: sh('rustc', ['--version']),
    filesystem: fs,
    writeCache,
    loadavg: os.loadavg().map((x) => Math.round(x * 100) / 100),
  };
}

export function timestamp(d = new Date()): string {
  return d
    .toISOString()
    .replace(/\.\d+Z$/, 'Z')
    .replace(/:/g, '-');
}

/** Writes `data` as pretty JSON to <repoRoot>/results/<name>-<timestamp>.json; returns the path. */
export function writeResults(repoRoot: string, name: string, data: unknown, when = new Date()): string {
  const dir = join(repoRoot, 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}-${timestamp(when)}.json`);
  writeFileSync(file, `${JSON.stringify(data, null, 2)}\n`);
  return file;
}
