// What bound a run: the CPU its processes used, how busy the whole machine's CPUs were, and how
// busy the disk was, each taken before and after the run (Linux /proc and /sys; null elsewhere).
// CPU figures are in clock ticks of 10 ms (USER_HZ = 100, as procCpuMs in server-proc.ts).
//
// Processes that have exited are counted through this process's own children accounting
// (/proc/self/stat cutime + cstime: the CPU of every child it has waited for, their own waited-for
// children included), so a short-lived child's CPU is exact without sampling it while it runs;
// Node waits for a child before it emits 'exit'. A child still running (a server) is read from
// /proc/PID/stat instead.

import { readFileSync, statSync } from 'node:fs';
import { procCpuMs } from './server-proc.js';

const TICK_MS = 10;

/** Fields of a /proc/PID/stat line after the command name (which may hold spaces): state is [0]. */
function statFields(path: string): string[] | null {
  try {
    const stat = readFileSync(path, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** CPU (user + system, ms) of every child of this process that has exited and been waited for. */
export function exitedChildrenCpuMs(): number | null {
  const f = statFields('/proc/self/stat');
  // cutime and cstime are fields 16 and 17 of the line, [13] and [14] here.
  return f ? (Number(f[13]) + Number(f[14])) * TICK_MS : null;
}

/** Busy and total CPU time of the whole machine (ms, all CPUs together), and the stolen part. */
export interface MachineCpu {
  busyMs: number;
  totalMs: number;
  stealMs: number;
}

export function machineCpu(): MachineCpu | null {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
    // cpu user nice system idle iowait irq softirq steal (guest and guest_nice are inside user)
    const [user, nice, system, idle, iowait, irq, softirq, steal] = line.trim().split(/\s+/).slice(1, 9).map(Number);
    const busy = user! + nice! + system! + irq! + softirq!;
    return {
      busyMs: busy * TICK_MS,
      totalMs: (busy + idle! + iowait! + steal!) * TICK_MS,
      stealMs: steal! * TICK_MS,
    };
  } catch {
    return null;
  }
}

/**
 * The block device statistics file (/sys/dev/block/MAJ:MIN/stat) of the file system holding
 * `dir`, or null (not Linux, or a file system with no block device of its own, such as overlay).
 */
export function blockStatFile(dir: string): string | null {
  try {
    const dev = statSync(dir).dev;
    // Linux's new_encode_dev: minor's low 8 bits, major's 12 bits, then minor's high bits.
    const major = (dev >> 8) & 0xfff;
    const minor = (dev & 0xff) | ((dev >> 12) & 0xfff00);
    const path = `/sys/dev/block/${major}:${minor}/stat`;
    readFileSync(path, 'utf8');
    return path;
  } catch {
    return null;
  }
}

/** Time the device had I/O in flight (ms; io_ticks) and bytes written to it (sectors × 512). */
export interface DiskIo {
  busyMs: number;
  writtenBytes: number;
}

export function diskIo(statFile: string | null): DiskIo | null {
  if (!statFile) return null;
  try {
    const f = readFileSync(statFile, 'utf8').trim().split(/\s+/).map(Number);
    // Documentation/block/stat.rst: [6] write sectors, [9] io_ticks.
    return { busyMs: f[9]!, writtenBytes: f[6]! * 512 };
  } catch {
    return null;
  }
}

/** Readings taken at one moment: see usageBetween. */
export interface UsageMark {
  at: number;
  exitedChildrenCpuMs: number | null;
  /** CPU so far of each running process watched (servers), by pid */
  procCpuMs: (number | null)[];
  machine: MachineCpu | null;
  disk: DiskIo | null;
}

export function usageMark(pids: readonly (number | undefined)[], statFile: string | null): UsageMark {
  return {
    at: performance.now(),
    exitedChildrenCpuMs: exitedChildrenCpuMs(),
    procCpuMs: pids.map((p) => procCpuMs(p)),
    machine: machineCpu(),
    disk: diskIo(statFile),
  };
}

/** What happened between two marks; null where a reading was missing. */
export interface Usage {
  wallMs: number;
  /** children that exited in between (the workers) */
  exitedChildrenCpuMs: number | null;
  /** each watched process (the servers), summed */
  procCpuMs: number | null;
  machineBusyMs: number | null;
  /** busy ÷ (wall × CPUs): 1 is every CPU of the machine busy all the time */
  machineBusyShare: number | null;
  stealShare: number | null;
  diskBusyMs: number | null;
  /** io_ticks ÷ wall: 1 is the disk never idle */
  diskBusyShare: number | null;
  diskWrittenBytes: number | null;
}

export function usageBetween(a: UsageMark, b: UsageMark): Usage {
  const wallMs = b.at - a.at;
  const d = (x: number | null | undefined, y: number | null | undefined) =>
    x === null || x === undefined || y === null || y === undefined ? null : y - x;
  const procs = a.procCpuMs.map((x, i) => d(x, b.procCpuMs[i]));
  const machineTotal = d(a.machine?.totalMs, b.machine?.totalMs);
  const machineBusy = d(a.machine?.busyMs, b.machine?.busyMs);
  const diskBusy = d(a.disk?.busyMs, b.disk?.busyMs);
  return {
    wallMs,
    exitedChildrenCpuMs: d(a.exitedChildrenCpuMs, b.exitedChildrenCpuMs),
    procCpuMs: procs.some((x) => x === null) ? null : procs.reduce<number>((s, x) => s + x!, 0),
    machineBusyMs: machineBusy,
    machineBusyShare: machineBusy !== null && machineTotal ? machineBusy / machineTotal : null,
    stealShare: machineTotal && a.machine && b.machine ? (b.machine.stealMs - a.machine.stealMs) / machineTotal : null,
    diskBusyMs: diskBusy,
    diskBusyShare: diskBusy !== null && wallMs > 0 ? Math.min(1, diskBusy / wallMs) : null,
    diskWrittenBytes: d(a.disk?.writtenBytes, b.disk?.writtenBytes),
  };
}
