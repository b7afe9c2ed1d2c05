/**
 * Jump consistent hashing (job/jump-hash.ts) against the reference algorithm's published values,
 * and seed 001's failover: how many tasks move when a worker dies or joins.
 */
import { describe, expect, it } from 'vitest';
import { jumpHash, ownerOf } from '../src/job/jump-hash.js';

describe('jumpHash', () => {
  it("gives the reference implementation's buckets", () => {
    // Lamping & Veach's C++ function, as ClickHouse's jumpConsistentHash (its test
    // 00580_consistent_hashing_functions) and the Python `jump` package (hash(256, 1024) = 520) give it.
    expect(jumpHash(1n, 1)).toBe(0);
    expect(jumpHash(42n, 57)).toBe(43);
    expect(jumpHash(256n, 1024)).toBe(520);
    expect(jumpHash(3735883980n, 1)).toBe(0);
    expect(jumpHash(3735883980n, 666)).toBe(361);
    expect(jumpHash(16045690984833335023n, 255)).toBe(237);
  });

  it('moves a key only to the new bucket when one is added', () => {
    for (let k = 0n; k < 5000n; k++) {
      const key = k * 0x9e3779b97f4a7c15n;
      for (let n = 1; n < 12; n++) {
        const before = jumpHash(key, n);
        const after = jumpHash(key, n + 1);
        expect(after === before || after === n).toBe(true);
      }
    }
  });

  it('refuses a bucket count below 1', () => {
    expect(() => jumpHash(1n, 0)).toThrow(/positive integer/);
  });
});

describe('ownerOf (seed 001 failover)', () => {
  const tasks = Array.from({ length: 2000 }, (_, i) => `input-${i % 7}.ndjson@${i * 67108864}`);
  const workers = ['w0', 'w1', 'w2', 'w3', 'w4', 'w5'];
  const all = () => true;
  const owners = (ws: string[], live: (w: string) => boolean) => tasks.map((t) => ownerOf(t, ws, live));

  it('spreads tasks over every worker', () => {
    const counts = new Map<string, number>();
    for (const o of owners(workers, all)) counts.set(o!, (counts.get(o!) ?? 0) + 1);
    expect([...counts.keys()].sort()).toEqual(workers);
    for (const c of counts.values()) expect(c).toBeGreaterThan(tasks.length / workers.length / 2);
  });

  it("moves only a dead worker's tasks, and spreads them over the live ones", () => {
    const before = owners(workers, all);
    const after = owners(workers, (w) => w !== 'w2');
    const moved = new Map<string, number>();
    tasks.forEach((_, i) => {
      if (before[i] !== 'w2') expect(after[i]).toBe(before[i]);
      else {
        expect(after[i]).not.toBe('w2');
        moved.set(after[i]!, (moved.get(after[i]!) ?? 0) + 1);
      }
    });
    // Re-hashing sends them to every survivor, not all to the next in the list.
    expect(moved.size).toBe(workers.length - 1);
  });

  it('moves only the tasks of the worker that died next, when one is already dead', () => {
    const one = owners(workers, (w) => w !== 'w2');
    const two = owners(workers, (w) => w !== 'w2' && w !== 'w4');
    tasks.forEach((_, i) => {
      if (one[i] !== 'w4') expect(two[i]).toBe(one[i]);
      else expect(['w2', 'w4']).not.toContain(two[i]);
    });
  });

  it('moves about 1/(n+1) of the tasks to a worker that joins, and no others', () => {
    const before = owners(workers, all);
    const after = owners([...workers, 'w6'], all);
    let moved = 0;
    tasks.forEach((_, i) => {
      if (after[i] !== before[i]) {
        expect(after[i]).toBe('w6');
        moved++;
      }
    });
    expect(moved / tasks.length).toBeGreaterThan(1 / 7 / 2);
    expect(moved / tasks.length).toBeLessThan((1 / 7) * 2);
  });

  it('is null when no worker is live', () => {
    expect(ownerOf('t', workers, () => false)).toBeNull();
  });
});
