/**
 * CountHistogram against node:perf_hooks' HDR histogram (same range and precision): the same
 * percentiles, max and count for the same values, whether recorded one by one or with a count,
 * and after merges.
 */
import { createHistogram } from 'node:perf_hooks';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CountHistogram, latencyOf } from '../src/latency.js';

describe('CountHistogram', () => {
  it('agrees with node:perf_hooks createHistogram', () => {
    const value = fc.oneof(
      fc.integer({ min: 1, max: 5000 }),
      fc.integer({ min: 1, max: 3_600_000_000 }),
      fc.constantFrom(1, 2047, 2048, 4095, 4096, 2 ** 31, 3_600_000_000),
    );
    fc.assert(
      fc.property(
        fc.array(fc.tuple(value, fc.integer({ min: 1, max: 50 })), { minLength: 1, maxLength: 40 }),
        (items) => {
          const node = createHistogram({ lowest: 1, highest: 3_600_000_000, figures: 3 });
          const ours = new CountHistogram();
          const half = new CountHistogram();
          items.forEach(([v, n], i) => {
            for (let k = 0; k < n; k++) node.record(v);
            (i % 2 ? half : ours).record(v, n);
          });
          ours.add(half);
          expect(ours.count).toBe(node.count);
          expect(ours.max).toBe(node.max);
          expect(ours.min).toBe(node.min);
          for (const p of [1, 50, 90, 99, 99.9, 100]) expect(ours.percentile(p)).toBe(node.percentile(p));
          expect(Math.abs(ours.mean - node.mean) / node.mean).toBeLessThan(0.002);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('resets, and summarizes in milliseconds', () => {
    const h = new CountHistogram();
    h.record(1500, 3);
    expect(latencyOf(h)).toMatchObject({ count: 3, p50: 1.5, max: 1.5 });
    h.reset();
    expect(latencyOf(h).count).toBe(0);
    h.record(10);
    expect(latencyOf(h)).toMatchObject({ count: 1, p99: 0.01 });
  });
});
