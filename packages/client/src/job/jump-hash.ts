/**
 * Task assignment by jump consistent hashing (Lamping & Veach, "A Fast, Minimal Memory,
 * Consistent Hash Algorithm", 2014), with seed 001's failover: a task's preferred owner is
 * `jumpHash(hash(key), workers)`; when that worker is down it is taken out of the list and the
 * key is hashed again, so a dead worker's tasks spread over the live ones and no other task moves.
 */
import { createHash } from 'node:crypto';

const MULTIPLIER = 2862933555777941757n;

/** The paper's algorithm: a bucket in [0, buckets) for a 64-bit key. */
export function jumpHash(key: bigint, buckets: number): number {
  if (!Number.isInteger(buckets) || buckets < 1)
    throw new RangeError(`buckets must be a positive integer, got ${buckets}`);
  let k = BigInt.asUintN(64, key);
  let b = -1;
  let j = 0;
  while (j < buckets) {
    b = j;
    k = BigInt.asUintN(64, k * MULTIPLIER + 1n);
    j = Math.floor((b + 1) * (2 ** 31 / Number((k >> 33n) + 1n)));
  }
  return b;
}

/** A task key's 64-bit hash: the first 8 bytes of its SHA-256, the same on every machine. */
export function keyHash(key: string): bigint {
  return createHash('sha256').update(key).digest().readBigUInt64BE(0);
}

/** The next hash of a key whose preferred worker is down. */
export function rehash(h: bigint): bigint {
  const b = Buffer.allocUnsafe(8);
  b.writeBigUInt64BE(h);
  return createHash('sha256').update(b).digest().readBigUInt64BE(0);
}

/**
 * The worker that owns `taskKey`: its preferred worker in `workers` (every worker of the job,
 * in the order they joined) if live, else the same search without that worker and with the key
 * hashed again. Null when no worker is live.
 */
export function ownerOf(
  taskKey: string,
  workers: readonly string[],
  isLive: (worker: string) => boolean,
): string | null {
  const candidates = [...workers];
  let h = keyHash(taskKey);
  while (candidates.length > 0) {
    const i = jumpHash(h, candidates.length);
    const w = candidates[i] as string;
    if (isLive(w)) return w;
    candidates.splice(i, 1);
    h = rehash(h);
  }
  return null;
}
