import { describe, expect, it } from 'vitest';
import { evaluateThresholds, parseThreshold } from '../src/commands/import/thresholds.js';

const report = {
  latencyMs: { p50: 1, p90: 2, p99: 4.5, 'p99.9': 9, max: 20, mean: 1.5 },
  finalSyncMs: 3,
  wallSeconds: 12,
  docsPerSec: 80_000,
  documents: { read: 10, written: 9, rejected: 1, missing: 0 },
  zeroIntervals: 0,
  retries: 2,
};

describe('thresholds (--fail-if)', () => {
  it('parses k6-style expressions with units into base units', () => {
    expect(parseThreshold('p99<5ms')).toMatchObject({ metric: 'p99', op: '<', value: 5 });
    expect(parseThreshold('p(99.9) <= 2s')).toMatchObject({ metric: 'p99.9', op: '<=', value: 2000 });
    expect(parseThreshold('p99<250us')).toMatchObject({ value: 0.25 });
    expect(parseThreshold('med<1')).toMatchObject({ metric: 'p50', value: 1 });
    expect(parseThreshold('avg<1m')).toMatchObject({ metric: 'mean', value: 60_000 });
    expect(parseThreshold('rate>50k')).toMatchObject({ metric: 'rate', op: '>', value: 50_000 });
    expect(parseThreshold('docs_per_sec>=1.5M/s')).toMatchObject({ metric: 'rate', value: 1_500_000 });
    expect(parseThreshold('wall<90')).toMatchObject({ metric: 'wall', value: 90 });
    expect(parseThreshold('wall<500ms')).toMatchObject({ metric: 'wall', value: 0.5 });
    expect(parseThreshold('rejected==0')).toMatchObject({ metric: 'rejected', op: '==', value: 0 });
    expect(parseThreshold('stalls!=1')).toMatchObject({ metric: 'stalls', op: '!=' });
  });

  it('rejects what it cannot read, naming the problem', () => {
    expect(() => parseThreshold('p99 small')).toThrow(/cannot read/);
    expect(() => parseThreshold('p42<5ms')).toThrow(/unknown metric/);
    expect(() => parseThreshold('p99<5kg')).toThrow(/bad unit/);
    expect(() => parseThreshold('rate>5ms')).toThrow(/bad unit/);
  });

  it('evaluates each threshold; a breached one is not ok', () => {
    const r = evaluateThresholds(
      ['p99<5ms', 'p99<4ms', 'rate>=80000', 'rejected==0', 'final_sync<10ms', 'retries<=2'].map(parseThreshold),
      report,
    );
    expect(r.map((x) => [x.expr, x.ok, x.actual])).toEqual([
      ['p99<5ms', true, 4.5],
      ['p99<4ms', false, 4.5],
      ['rate>=80000', true, 80_000],
      ['rejected==0', false, 1],
      ['final_sync<10ms', true, 3],
      ['retries<=2', true, 2],
    ]);
    // no final sync made: a threshold on it cannot pass
    expect(evaluateThresholds([parseThreshold('final_sync<10ms')], { ...report, finalSyncMs: null })[0]!.ok).toBe(
      false,
    );
  });
});
