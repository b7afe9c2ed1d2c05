/**
 * `wharf gen`: YCSB-like documents, deterministic for a seed. Each has a unique string key
 * ("user" + a bijective 32-bit hash of its number, so keys arrive in scattered order, like
 * YCSB's hashed inserts) and 10 string fields field0..field9 filling about --size bytes.
 */
import { createWriteStream, mkdirSync } from 'node:fs';
import { once } from 'node:events';
import { dirname, resolve } from 'node:path';
import type { GenOptions } from '../../options.js';

/** A bijective 32-bit mix (lowbias32): different inputs give different outputs. */
export function mix32(x: number): number {
  x ^= x >>> 16;
  x = Math.imul(x, 0x7feb352d);
  x ^= x >>> 15;
  x = Math.imul(x, 0x846ca68b);
  x ^= x >>> 16;
  return x >>> 0;
}

function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const FIELDS = 10;

export function keyOf(i: number, seed: number): string {
  return `user${mix32((i ^ Math.imul(seed, 0x9e3779b1)) >>> 0)}`;
}

/** Generates record text: yields chunks of about 1 MiB. */
export function* generate(o: GenOptions): Generator<string> {
  const random = rng(o.seed);
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

export async function runGen(o: GenOptions, stdout: NodeJS.WritableStream): Promise<number> {
  if (o.out) {
    try {
      mkdirSync(dirname(resolve(o.out)), { recursive: true });
    } catch (err) {
      throw new Error(`cannot write ${o.out}: ${(err as Error).message}`);
    }
  }
  const out: NodeJS.WritableStream = o.out ? createWriteStream(o.out) : stdout;
  let failure: NodeJS.ErrnoException | undefined;
  out.on('error', (err: NodeJS.ErrnoException) => (failure = err));
  for (const chunk of generate(o)) {
    if (failure) break;
    if (!out.write(chunk)) await once(out, 'drain').catch(() => {}); // an error lands in `failure`
  }
  if (o.out && !failure) await new Promise<void>((r) => out.end(() => r()));
  // `wharf gen | head`: the reader leaving early is not an error.
  if (failure && failure.code !== 'EPIPE') {
    throw new Error(`cannot write ${o.out ?? 'standard output'}: ${failure.message}`);
  }
  return 0;
}
