// Deterministic test documents (~150 bytes of JSON each), the same for every engine compared:
// drawn from mulberry32 (../random.ts), so every run and every engine gets byte-identical documents.

import { mulberry32 } from '../random.js';

const CITIES = ['Lisbon', 'Oslo', 'Kyoto', 'Lagos', 'Quito', 'Perth', 'Tallinn', 'Recife', 'Hanoi', 'Tunis'];
const TAGS = ['alpha', 'beta', 'gamma', 'delta', 'omega', 'sigma', 'kappa', 'theta'];

/** Primary key of document i: sequential, zero-padded strings ("k000000042"). */
export function docKey(i: number): string {
  return `k${String(i).padStart(9, '0')}`;
}

const LINE_SCRATCH = Buffer.alloc(256);

/**
 * Document i as one JSON line (no newline), about 150 bytes. The key is the "id" field:
 * `{"id":"k000000042","name":"user 42","email":"user42@example.com","age":37,"city":"Oslo",
 * "score":12.3456,"tags":["beta","omega"],"active":true}`. Written by writeDocLine, the one
 * definition of these documents. `rand` must come from mulberry32() and be called in order for
 * i = 0, 1, 2, …
 */
export function docLine(i: number, rand: () => number): string {
  return LINE_SCRATCH.toString('latin1', 0, writeDocLine(LINE_SCRATCH, 0, i, rand));
}

const ASCII = (s: string) => Buffer.from(s, 'latin1');
/** Bytes of each city and tag name, for writeDocLine. */
const CITY_BYTES = CITIES.map(ASCII);
const TAG_BYTES = TAGS.map(ASCII);
const PARTS = {
  id: ASCII('{"id":"k'),
  name: ASCII('","name":"user '),
  email: ASCII('","email":"user'),
  age: ASCII('@example.com","age":'),
  city: ASCII(',"city":"'),
  score: ASCII('","score":'),
  tags: ASCII(',"tags":["'),
  tagSep: ASCII('","'),
  active: ASCII('"],"active":'),
  yes: ASCII('true}'),
  no: ASCII('false}'),
};

function put(buf: Buffer, pos: number, bytes: Buffer): number {
  for (let k = 0; k < bytes.length; k++) buf[pos + k] = bytes[k]!; // short: a loop beats a native copy
  return pos + bytes.length;
}

/** Writes the decimal digits of integer n ≥ 0, at least `width` of them (zero-padded). */
function putInt(buf: Buffer, pos: number, n: number, width = 1): number {
  let digits = 1;
  for (let x = n; x >= 10; x = Math.floor(x / 10)) digits++;
  const len = Math.max(digits, width);
  for (let k = len - 1; k >= 0; k--, n = Math.floor(n / 10)) buf[pos + k] = 0x30 + (n % 10);
  return pos + len;
}

/**
 * Document i (see docLine) written as bytes into `buf` at `pos` (no newline), without making a
 * string. Returns the position after it. A feeder that hands the loader slices of a reused
 * buffer allocates as `wharf import` does with the slices of its read buffer, not as string
 * templating does. `buf` needs 256 bytes free at `pos`.
 */
export function writeDocLine(buf: Buffer, pos: number, i: number, rand: () => number): number {
  const city = CITY_BYTES[Math.floor(rand() * CITIES.length)]!;
  const t1 = TAG_BYTES[Math.floor(rand() * TAGS.length)]!;
  const t2 = TAG_BYTES[Math.floor(rand() * TAGS.length)]!;
  const age = 18 + Math.floor(rand() * 70);
  const score = Math.floor(rand() * 1e6); // printed as the number score / 1e4: no trailing zeros
  pos = put(buf, pos, PARTS.id);
  pos = putInt(buf, pos, i, 9);
  pos = put(buf, pos, PARTS.name);
  pos = putInt(buf, pos, i);
  pos = put(buf, pos, PARTS.email);
  pos = putInt(buf, pos, i);
  pos = put(buf, pos, PARTS.age);
  pos = putInt(buf, pos, age);
  pos = put(buf, pos, PARTS.city);
  pos = put(buf, pos, city);
  pos = put(buf, pos, PARTS.score);
  pos = putInt(buf, pos, Math.floor(score / 1e4));
  let frac = score % 1e4;
  if (frac !== 0) {
    let width = 4;
    while (frac % 10 === 0) {
      frac /= 10;
      width--;
    }
    buf[pos++] = 0x2e; // '.'
    pos = putInt(buf, pos, frac, width);
  }
  pos = put(buf, pos, PARTS.tags);
  pos = put(buf, pos, t1);
  pos = put(buf, pos, PARTS.tagSep);
  pos = put(buf, pos, t2);
  pos = put(buf, pos, PARTS.active);
  return put(buf, pos, rand() < 0.5 ? PARTS.yes : PARTS.no);
}

/** Documents [0, n) as lines, in order. */
export function* docLines(n: number, seed = 42): Generator<{ key: string; line: string }> {
  const rand = mulberry32(seed);
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
      const b = Buffer.from(`${lines.join('\n')}\n`);
      bytes += b.length;
      buffers.push(b);
      lines = [];
    }
  }
  if (lines.length) {
    const b = Buffer.from(`${lines.join('\n')}\n`);
    bytes += b.length;
    buffers.push(b);
  }
  return { buffers, bytes };
}

/** A small document for the single-insert scenarios (~100 bytes of JSON). */
export function smallDoc(writer: number, i: number): { id: string; writer: number; seq: number; payload: string } {
  return { id: `w${writer}-${i}`, writer, seq: i, payload: 'x'.repeat(48) };
}
