// Counting system calls of a child process with `strace -f -c`.

import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

export interface StraceSummary {
  /** calls per syscall name (e.g. { fdatasync: 1001, fsync: 3 }) */
  calls: Record<string, number>;
  /** seconds spent in each syscall, as strace -c reports them */
  seconds: Record<string, number>;
  errors: Record<string, number>;
  /** the table as strace printed it */
  raw: string;
}

let cached: { ok: boolean; seccomp: boolean } | undefined;

/** Whether strace is installed and can trace here (ptrace may be forbidden in some containers). */
export function straceSupport(): { ok: boolean; seccomp: boolean } {
  if (cached) return cached;
  const plain = spawnSync('strace', ['-f', '-c', '-e', 'trace=fdatasync', '-o', '/dev/null', 'true'], {
    stdio: 'ignore',
  });
  if (plain.error || plain.status !== 0) return (cached = { ok: false, seccomp: false });
  // --seccomp-bpf stops only at the traced syscalls, so the traced process runs at almost full speed.
  const bpf = spawnSync('strace', ['-f', '-c', '--seccomp-bpf', '-e', 'trace=fdatasync', '-o', '/dev/null', 'true'], {
    stdio: 'ignore',
  });
  return (cached = { ok: true, seccomp: !bpf.error && bpf.status === 0 });
}

/**
 * The argv prefix that runs a command under `strace -f -c`, writing the summary to `outFile`.
 * `syscalls` undefined = all syscalls (slow: every syscall stops the process).
 */
export function straceArgv(outFile: string, syscalls?: string[]): string[] {
  const args = ['-f', '-c'];
  if (syscalls) {
    if (straceSupport().seccomp) args.push('--seccomp-bpf');
    args.push('-e', `trace=${syscalls.join(',')}`);
  }
  args.push('-o', outFile);
  return args;
}

/** Parses the table `strace -c` writes. */
export function parseStraceSummary(text: string): StraceSummary {
  const calls: Record<string, number> = {};
  const seconds: Record<string, number> = {};
  const errors: Record<string, number> = {};
  for (const line of text.split('\n')) {
    // % time     seconds  usecs/call     calls    errors syscall
    const m = /^\s*([\d.]+)\s+([\d.]+)\s+(\d+)\s+(\d+)\s+(\d+\s+)?([a-z_0-9]+)\s*$/.exec(line);
    if (!m || m[6] === 'total') continue;
    calls[m[6]!] = Number(m[4]);
    seconds[m[6]!] = Number(m[2]);
    if (m[5]) errors[m[6]!] = Number(m[5].trim());
  }
  return { calls, seconds, errors, raw: text.trimEnd() };
}

export function readStraceSummary(outFile: string): StraceSummary {
  return parseStraceSummary(readFileSync(outFile, 'utf8'));
}

/** fdatasync + fsync calls in a summary (what the durability goals count). */
export function syncCalls(s: StraceSummary): { fdatasync: number; fsync: number; total: number } {
  const fdatasync = s.calls.fdatasync ?? 0;
  const fsync = s.calls.fsync ?? 0;
  return { fdatasync, fsync, total: fdatasync + fsync };
}
