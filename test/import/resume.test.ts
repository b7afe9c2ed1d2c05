/**
 * --resume after kill -9: the import is killed mid-way (once its durable checkpoint has moved),
 * then resumed; the table ends with exactly the documents of the input (no duplicates, no gaps)
 * and the rejects file with exactly the bad rows, once each.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { keyOf, readCheckpoint } from '@wharf/cli';
import { afterAll, describe, expect, it } from 'vitest';
import { until } from '../helpers/until.js';
import { start, tempDir, wharf, withDb } from './helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());
const cwd = tmp.dir;

const N = 400_000;
const BAD_EVERY = 997;
const SEED = 1;

describe('wharf import --resume', () => {
  it('continues after SIGKILL with no duplicates and no gaps', async () => {
    const gen = await wharf(
      [
        'gen',
        '-n',
        String(N),
        '--size',
        '150',
        '--bad-every',
        String(BAD_EVERY),
        '--seed',
        String(SEED),
        '-o',
        'in.ndjson',
      ],
      { cwd },
    );
    expect(gen.code).toBe(0);
    const data = join(cwd, 'data');
    const ck = join(cwd, 'import.checkpoint');
    const args = [
      'import',
      'in.ndjson',
      '-t',
      'r',
      '--target',
      `embedded:${data}`,
      '--checkpoint',
      ck,
      '--rejects',
      'rej.ndjson',
      '--max-errors',
      '-1',
      '--batch-size',
      '1000',
    ];

    // 1. Start, wait until the durable checkpoint has moved past some documents, then kill -9.
    // It moves every 20 ms, so the kill lands long before the import could finish.
    const first = start([...args, '--checkpoint-ms', '20'], { cwd });
    let killedAt = 0;
    await until(
      'the checkpoint to advance past 20,000 documents',
      () => {
        if (!existsSync(ck)) return false;
        try {
          const cp = readCheckpoint(ck);
          if (cp && cp.low.docs >= 20_000) {
            killedAt = cp.low.docs;
            return true;
          }
        } catch {
          // a slot being written: read again
        }
        return false;
      },
      10,
    );
    first.child.kill('SIGKILL');
    const r1 = await first.done;
    expect(r1.signal).toBe('SIGKILL');
    const cp = readCheckpoint(ck)!;
    expect(cp.complete).toBe(false); // killed mid-way, or this test proves nothing
    const stored = await withDb(data, (db) => db.table('r').count());
    expect(stored).toBeGreaterThanOrEqual(killedAt - Math.floor(killedAt / BAD_EVERY));
    expect(stored).toBeLessThan(N - Math.floor(N / BAD_EVERY));

    // 2. Resume.
    const r2 = await wharf([...args, '--resume', '--report', 'r.json'], { cwd });
    expect(r2.stderr).toBe('');
    expect(r2.code, r2.stdout + r2.stderr).toBe(3); // finished, with the bad rows rejected
    const report = JSON.parse(readFileSync(join(cwd, 'r.json'), 'utf8'));
    const bad = Math.floor(N / BAD_EVERY);
    expect(report.documents).toMatchObject({ read: N, written: N - bad, rejected: bad, missing: 0 });
    expect(report.resumed.fromOffset).toBe(cp.low.offset);
    expect(report.resumed.documentsBefore).toBe(cp.low.docs);
    expect(report.checkpoint.complete).toBe(true);

    // 3. Exactly the input's documents: every good key present, and nothing else.
    await withDb(data, async (db) => {
      const t = db.table('r');
      expect(await t.count()).toBe(N - bad);
      for (let from = 0; from < N; from += 50_000) {
        const keys: string[] = [];
        for (let i = from; i < Math.min(N, from + 50_000); i++)
          if ((i + 1) % BAD_EVERY !== 0) keys.push(keyOf(i, SEED));
        const docs = await t.getMany(keys);
        expect(docs.filter((d) => d === null).length).toBe(0);
      }
    });

    // 4. Each bad row in the rejects file exactly once, in input order.
    const lines = readFileSync(join(cwd, 'rej.ndjson'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).line as number);
    expect(lines).toEqual(Array.from({ length: bad }, (_, k) => (k + 1) * BAD_EVERY));

    // 5. Resuming a finished import does nothing.
    const r3 = await wharf([...args, '--resume'], { cwd });
    expect(r3.code, r3.stdout + r3.stderr).toBe(3);
    expect(r3.stdout).toMatch(/already imported completely/);
    expect(await withDb(data, (db) => db.table('r').count())).toBe(N - bad);
  });
});
