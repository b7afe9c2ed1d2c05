// The generated documents are part of what benchmarks and tests compare: the same seed must give
// the same bytes. The hashes below were taken from the generators as they were before they shared
// one PRNG (the CLI's gen, scripts/bench/lib/docs.ts, test/helpers/rng.ts, the engine's crash
// fixture, each with its own copy of mulberry32); a change to the PRNG or to a document's layout
// changes them.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { docLines, ndjsonBatches } from '../src/lib/docs.ts';
import { mulberry32 } from '../src/random.ts';
import { generate, keyOf } from '../src/ycsb.ts';

const sha = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 16);

describe('mulberry32', () => {
  it('gives the same sequence for a seed (seed 0 included)', () => {
    const draws = (seed: number) => {
      const r = mulberry32(seed);
      return Array.from({ length: 1000 }, () => r()).join(',');
    };
    expect(sha(draws(0))).toBe('08887b1ccb4c7516');
    expect(sha(draws(1))).toBe('12df72de007c72bc');
    expect(sha(draws(99))).toBe('cdda70c87fc892ab');
  });
});

describe('YCSB documents (wharf gen)', () => {
  const text = (seed: number, format: 'ndjson' | 'json' | 'csv') =>
    [...generate({ count: 3000, size: 300, seed, format, badEvery: 97 })].join('');
  it.each([
    [0, 'ndjson', '5d082642ec968308'],
    [0, 'json', 'fcf80b94b400fbcc'],
    [0, 'csv', 'ec043b5f9a58e4ee'],
    [1, 'ndjson', 'ad80328831e52ac1'],
    [1, 'json', 'f2ad511dad95e495'],
    [1, 'csv', '91e9db67211c4bc0'],
    [42, 'ndjson', '57bf9900e61e6144'],
    [42, 'json', '48c541d3d00156f9'],
    [42, 'csv', '6e0802303702663f'],
  ] as const)('seed %i, %s: the same bytes', (seed, format, hash) => {
    expect(sha(text(seed, format))).toBe(hash);
  });
  it('seed 0 writes what seed 1 writes (as wharf gen always has), keys apart', () => {
    const body = (seed: number) => text(seed, 'ndjson').replace(/"id":"user\d+"/g, '');
    expect(body(0)).toBe(body(1));
    expect(keyOf(5, 0)).not.toBe(keyOf(5, 1));
  });
});

describe('benchmark documents (lib/docs.ts)', () => {
  it.each([
    [0, '83bcbd24419bc8d4', 'b02158952a0d97b7'],
    [42, '11fcc9581f2cbd19', '2560fb0c8b164bef'],
  ] as const)('seed %i: the same lines and NDJSON batches', (seed, lines, batches) => {
    expect(sha([...docLines(5000, seed)].map((d) => d.key + d.line).join('\n'))).toBe(lines);
    expect(
      sha(
        ndjsonBatches(3000, 1000, seed)
          .buffers.map((b) => b.toString())
          .join(''),
      ),
    ).toBe(batches);
  });
});
