// CPU "steal": time this VM's vCPUs wanted to run while the hypervisor ran something else
// (/proc/stat). On this machine's host, heavy I/O of ours (writing and deleting ~20 GB) is
// followed by tens of seconds in which a vCPU is now and then held for up to a second: every
// thread of every process stops, whatever the code does. The sustained bench shows it beside its
// latencies, and waits for it to pass between targets.

import { readFileSync } from 'node:fs';

export interface CpuTimes {
  steal: number;
  total: number;
}

/** Cumulative CPU times of the whole machine (clock ticks), or null where /proc/stat is missing. */
export function cpuTimes(): CpuTimes | null {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
    // cpu user nice system idle iowait irq softirq steal guest guest_nice (guest is inside user)
    const t = line.trim().split(/\s+/).slice(1, 9).map(Number);
    return { steal: t[7] ?? 0, total: t.reduce((a, b) => a + b, 0) };
  } catch {
    return null;
  }
}

/** The share of CPU time stolen between two readings (0 when unknown). */
export function stealShare(a: CpuTimes | null, b: CpuTimes | null): number {
  if (!a || !b || b.total <= a.total) return 0;
  return (b.steal - a.steal) / (b.total - a.total);
}
