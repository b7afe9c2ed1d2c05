// Deterministic test documents (~150 bytes of JSON each), the same for every engine compared.

/** mulberry32: a tiny seeded PRNG, so every run and every engine gets byte-identical documents. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const CITIES = ['Lisbon', 'Oslo', 'Kyoto', 'Lagos', 'Quito', 'Perth', 'Tallinn', 'Recife', 'Hanoi', 'Tunis'];
const TAGS = ['alpha', 'beta', 'gamma', 'delta', 'omega', 'sigma', 'kappa', 'theta'];

/** Primary key of document i: sequential, zero-padded strings ("k000000042"). */
export function docKey(i: number): string {
  return 'k' + String(i).padStart(9, '0');
}

/**
 * Document i as one JSON line (no newline), about 150 bytes. The key is the "id" field.
 * `rand` must come from prng() and be called in order for i = 0, 1, 2, …
 */
export function docLine(i: number, rand: () => number): string {
  const city = CITIES[Math.floor(rand() * CITIES.length)]!;
  const t1 = TAGS[Math.floor(rand() * TAGS.length)]!;
  const t2 = TAGS[Math.floor(rand() * TAGS.length)]!;
  const age = 18 + Math.floor(rand() * 70);
  const score = Math.floor(rand() * 1e6) / 1e4;
  return (
    `{"id":"${docKey(i)}","name":"user ${i}","email":"user${i}@example.com","age":${age},` +
    `"city":"${city}","score":${score},"tags":["${t1}","${t2}"],"active":${rand() < 0.5}}`
  );
}

/** Documents [0, n) as lines, in order. */
export function* docLines(n: number, seed = 42): Generator<{ key: string; line: string }> {
  const rand = prng(seed);
  for (let i = 0; i < n; i++) yield { key: docKey(i), line: docLine(i, rand) };
}

/** Documents [0, n) as NDJSON Buffers of `batch` lines each (the last may be shorter). */
export function ndjsonBatches(n: number, batch: number, seed = 42): { buffers: Buffer[]; bytes: number } {
  const buffers: Buffer[] = [];
  let lines: string[] = [];
  let bytes = 0;
  for (const { line } of docLines(n, seed)) {
    lines.push(line);
    if (lines.length === batch) {
      const b = Buffer.from(lines.join('\n') + '\n');
      bytes += b.length;
      buffers.push(b);
      lines = [];
    }
  }
  if (lines.length) {
    const b = Buffer.from(lines.join('\n') + '\n');
    bytes += b.length;
    buffers.push(b);
  }
  return { buffers, bytes };
}

/** A small document for the single-insert scenarios (~100 bytes of JSON). */
export function smallDoc(writer: number, i: number): { id: string; writer: number; seq: number; payload: string } {
  return { id: `w${writer}-${i}`, writer, seq: i, payload: 'x'.repeat(48) };
}
