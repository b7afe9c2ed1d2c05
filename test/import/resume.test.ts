/**
 * --resume after kill -9: the import is killed mid-way (once its durable checkpoint has moved),
 * then resumed; the table ends with exactly the documents of the input (no duplicates, no gaps)
 * and the rejects file with exactly the bad rows, once each.
 */
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { keyOf, readCheckpoint } from '@wharf/cli';
import { afterAll, describe, expect, it } from 'vitest';
import { CheckpointWriter } from '../../apps/cli/src/commands/import/resume.js';
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

describe('wharf import --resume: the block re-sent across the old high-water mark', () => {
  it('counts the re-sent documents before the mark as present and loads those after it', async () => {
    // Lines 1–1500 were imported; the checkpoint says reading resumes after line 500 and that
    // batches up to line 1500 may have been written (its high-water mark). Lines 1501–3000 are
    // new. One block holds lines 501–3000: its part up to line 1500 is a replay.
    const line = (i: number) => (i % 100 === 50 ? `{"id":${i},` : `{"id":${i},"v":"${'x'.repeat(i % 13)}"}`);
    const text = (from: number, to: number) => {
      let s = '';
      for (let i = from; i <= to; i++) s += `${line(i)}\n`;
      return s;
    };
    const file = join(cwd, 'replay.ndjson');
    writeFileSync(file, text(1, 1500));
    const data = join(cwd, 'data-replay');
    const ck = join(cwd, 'replay.checkpoint');
    const args = ['import', file, '-t', 'p', '--target', `embedded:${data}`, '--checkpoint', ck, '--max-errors', '-1'];
    const r1 = await wharf(args, { cwd });
    expect(r1.code, r1.stdout + r1.stderr).toBe(3); // lines 50, 150, … rejected
    appendFileSync(file, text(1501, 3000));

    const cp = readCheckpoint(ck)!;
    const endOf = (n: number) => Buffer.byteLength(text(1, n));
    const writer = new CheckpointWriter(ck);
    writer.write(
      {
        ...cp,
        complete: false,
        low: { offset: endOf(500), lastLine: 500, docs: 500, written: 495, rejected: 5, present: 0 },
        high: { offset: endOf(1500), docs: 1500 },
      },
      true,
    );
    writer.close();

    const r2 = await wharf([...args, '--resume', '--report', 'replay.json', '--rejects', 'replay-rej.ndjson'], {
      cwd,
    });
    expect(r2.code, r2.stdout + r2.stderr).toBe(3);
    const report = JSON.parse(readFileSync(join(cwd, 'replay.json'), 'utf8'));
    // 501–1500: 990 stored ones found present, 10 bad rejected again; 1501–3000: 1485 + 15 bad.
    expect(report.documents).toEqual({ read: 3000, written: 2970, rejected: 30, present: 990, missing: 0 });
    expect(report.run).toEqual({ read: 2500, written: 2475, rejected: 25 });
    expect(report.latencyMs.count).toBe(2500);
    expect(report.resumed).toMatchObject({ fromOffset: endOf(500), fromLine: 501, resent: 1000 });
    const rejected = readFileSync(join(cwd, 'replay-rej.ndjson'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rejected.map((r) => r.line)).toEqual(Array.from({ length: 25 }, (_, k) => 550 + k * 100));
    expect(rejected.map((r) => r.offset)).toEqual(Array.from({ length: 25 }, (_, k) => endOf(550 + k * 100)));
    expect(rejected[0].raw).toBe('{"id":550,');
    expect(await withDb(data, (db) => db.table('p').count())).toBe(2970);
  });
});
