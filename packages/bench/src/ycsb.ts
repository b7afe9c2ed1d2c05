/**
 * YCSB-like documents, deterministic for a seed (what `wharf gen` writes and the loader benchmark
 * loads). Each has a unique string key ("user" + a bijective 32-bit hash of its number, so keys
 * arrive in scattered order, like YCSB's hashed inserts) and 10 string fields field0..field9
 * filling about `size` bytes.
 */
import { mulberry32 } from './random.js';

export interface YcsbOptions {
  count: number;
  /** approximate bytes per document */
  size: number;
  format: 'ndjson' | 'json' | 'csv';
  seed: number;
  /** a bad record every N records (for demos of the rejects file); 0: none */
  badEvery: number;
}

/** A bijective 32-bit mix (lowbias32): different inputs give different outputs. */
export function mix32(x: number): number {
  x ^= x >>> 16;
  x = Math.imul(x, 0x7feb352d);
  x ^= x >>> 15;
  x = Math.imul(x, 0x846ca68b);
  x ^= x >>> 16;
  return x >>> 0;
}

const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const FIELDS = 10;

export function keyOf(i: number, seed: number): string {
  return `user${mix32((i ^ Math.imul(seed, 0x9e3779b1)) >>> 0)}`;
}

/** Generates record text: yields chunks of about 1 MiB. */
export function* generate(o: YcsbOptions): Generator<string> {
  // Seed 0 runs as seed 1 (as `wharf gen` always has: the same seed, the same documents).
  const random = mulberry32(o.seed >>> 0 || 1);
  const pool = Array.from({ length: 1 << 16 }, () => ALPHABET[Math.floor(random() * ALPHABET.length)]).join('');
  // {"id":"user4294967295","field0":"…",…}: about 24 bytes of key and 11 bytes of syntax per field.
  const fieldLen = Math.max(1, Math.floor((o.size - 24 - FIELDS * 11) / FIELDS));
  const names = Array.from({ length: FIELDS }, (_, f) => `field${f}`);
  let chunk = '';
  if (o.format === 'json') chunk += '[\n';
  if (o.format === 'csv') chunk += `id,${names.join(',')}\n`;
  for (let i = 0; i < o.count; i++) {
    const id = keyOf(i, o.seed);
    const values: string[] = [];
    for (let f = 0; f < FIELDS; f++) {
      const at = Math.floor(random() * (pool.length - fieldLen));
      values.push(pool.slice(at, at + fieldLen));
    }
    const bad = o.badEvery > 0 && (i + 1) % o.badEvery === 0;
    let rec: string;
    if (o.format === 'csv') {
      rec = bad ? `${id},only-two-fields\n` : `${id},${values.join(',')}\n`;
    } else {
      const body = bad
        ? o.format === 'json'
          ? '"not an object"'
          : `{"id":"${id}","field0":`
        : `{"id":"${id}",${values.map((v, f) => `"${names[f]}":"${v}"`).join(',')}}`;
      rec = o.format === 'json' ? `${i > 0 ? ',\n' : ''}${body}` : `${body}\n`;
    }
    chunk += rec;
    if (chunk.length >= 1 << 20) {
      yield chunk;
      chunk = '';
    }
  }
  if (o.format === 'json') chunk += '\n]\n';
  if (chunk) yield chunk;
}
