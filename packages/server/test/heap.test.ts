import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { until } from '../../../test/helpers/until.js';
import { GcMonitor } from '../src/heap.js';

// A gc() function without restarting the worker with --expose-gc.
setFlagsFromString('--expose-gc');
// gc() is a full collection; gc({ type: 'minor' }) a scavenge (on this V8, an explicit
// `type: 'major'` ran a scavenge).
const gc = runInNewContext('gc') as (options?: { type: 'minor' }) => void;

describe('GcMonitor', () => {
  it('counts mark-compacts and scavenges, with their pauses, separately', async () => {
    const monitor = new GcMonitor();
    try {
      const before = monitor.current();
      gc();
      gc();
      gc({ type: 'minor' });
      // GC entries reach observers asynchronously, a few event-loop turns after the collection.
      await until(
        'the three collections to be observed',
        () => monitor.current().gcMajor - before.gcMajor >= 2 && monitor.current().gcMinor > before.gcMinor,
        1,
      );
      const after = monitor.current();
      expect(after.gcMajor - before.gcMajor).toBe(2);
      expect(after.gcMinor - before.gcMinor).toBeGreaterThanOrEqual(1);
      expect(after.gcMajorMs).toBeGreaterThan(before.gcMajorMs);
    } finally {
      monitor.close();
    }
  });

  it('stops counting once closed', async () => {
    const closed = new GcMonitor();
    closed.close();
    // An open monitor sees the collection's entry; the closed one, served by the same dispatch, must not.
    const open = new GcMonitor();
    try {
      gc();
      await until('the open monitor to observe the collection', () => open.current().gcMajor >= 1, 1);
      expect(closed.current().gcMajor).toBe(0);
    } finally {
      open.close();
    }
  });
});
