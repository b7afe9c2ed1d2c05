import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { GcMonitor } from '../src/heap.js';

// A gc() function without restarting the worker with --expose-gc.
setFlagsFromString('--expose-gc');
// gc() is a full collection; gc({ type: 'minor' }) a scavenge (on this V8, an explicit
// `type: 'major'` ran a scavenge).
const gc = runInNewContext('gc') as (options?: { type: 'minor' }) => void;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('GcMonitor', () => {
  it('counts mark-compacts and scavenges, with their pauses, separately', async () => {
    const monitor = new GcMonitor();
    try {
      const before = monitor.current();
      gc();
      gc();
      gc({ type: 'minor' });
      await sleep(20); // GC entries reach observers asynchronously
      const after = monitor.current();
      expect(after.gcMajor - before.gcMajor).toBe(2);
      expect(after.gcMinor - before.gcMinor).toBeGreaterThanOrEqual(1);
      expect(after.gcMajorMs).toBeGreaterThan(before.gcMajorMs);
    } finally {
      monitor.close();
    }
  });

  it('stops counting once closed', async () => {
    const monitor = new GcMonitor();
    monitor.close();
    gc();
    await sleep(20);
    expect(monitor.current().gcMajor).toBe(0);
  });
});
