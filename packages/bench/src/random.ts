/**
 * mulberry32: the project's one small seeded pseudo-random generator, returning numbers in [0, 1).
 * The same seed gives the same sequence on every run, so generated documents are byte-identical
 * across runs and systems compared, and a failing randomized test replays from its seed.
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
