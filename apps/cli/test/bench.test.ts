// `wharf bench`'s scenario list (parsed before @wharf/bench is loaded) is the suite's own.
import { SCENARIOS } from '@wharf/bench';
import { expect, it } from 'vitest';
import { BENCH_SCENARIOS } from '../src/options.js';

it('wharf bench offers exactly the scenarios of @wharf/bench', () => {
  expect([...BENCH_SCENARIOS]).toEqual([...SCENARIOS]);
});
