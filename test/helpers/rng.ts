/** The project's seeded PRNG (mulberry32, @wharf/bench), so a failing random test can be replayed by seed. */
export { mulberry32 as rng } from '@wharf/bench/random';
