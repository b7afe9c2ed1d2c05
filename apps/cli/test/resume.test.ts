import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generate, keyOf } from '../src/commands/gen/index.js';
import { RejectsFile } from '../src/commands/import/rejects.js';
import {
  type Checkpoint,
  CheckpointWriter,
  canResumeFrom,
  defaultCheckpointPath,
  readCheckpoint,
  SLOT_BYTES,
} from '../src/commands/import/resume.js';

const dir = mkdtempSync(join(tmpdir(), 'wharf-cli-unit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function cp(docs: number): Checkpoint {
  return {
    version: 1,
    input: { path: '/in.ndjson', size: 100 },
    target: 'embedded:/d',
    table: 't',
    format: 'ndjson',
    low: { offset: docs * 10, lastLine: docs, docs, written: docs, rejected: 0, present: 0 },
    high: { offset: docs * 10 + 50, docs: docs + 5 },
    rejects: null,
    complete: false,
    updatedAt: '',
  };
}

describe('checkpoint file', () => {
  it('--resume is suggested only for a checkpoint that records durable progress', () => {
    const path = join(dir, 'resumable.checkpoint');
    expect(canResumeFrom(path)).toBe(false); // no file: an import that failed before writing one
    const w = new CheckpointWriter(path);
    w.write(cp(0), true); // what an import writes before its first document
    expect(canResumeFrom(path)).toBe(false);
    w.write(cp(3), true);
    expect(canResumeFrom(path)).toBe(true);
    w.write({ ...cp(5), complete: true }, true);
    expect(canResumeFrom(path)).toBe(false); // nothing left to resume
    w.close();
    writeFileSync(join(dir, 'torn.checkpoint'), 'garbage');
    expect(canResumeFrom(join(dir, 'torn.checkpoint'))).toBe(false);
  });

  it('keeps the newest valid slot; a torn slot falls back to the other', () => {
    const path = join(dir, 'a.checkpoint');
    const w = new CheckpointWriter(path);
    w.write(cp(1), false);
    w.write(cp(2), false);
    w.write(cp(3), true);
    w.close();
    expect(readCheckpoint(path)!.low.docs).toBe(3);
    // Tear the newest slot (seq 3 sits in slot 1): the previous one (docs 2) is read.
    const buf = readFileSync(path);
    buf.fill(0x41, SLOT_BYTES + 40, SLOT_BYTES + 60);
    writeFileSync(path, buf);
    expect(readCheckpoint(path)!.low.docs).toBe(2);
    // A writer reopening the file continues after the newest sequence number.
    const w2 = new CheckpointWriter(path);
    w2.write(cp(4), false);
    w2.close();
    expect(readCheckpoint(path)!.low.docs).toBe(4);
    expect(readCheckpoint(join(dir, 'absent'))).toBeNull();
    writeFileSync(join(dir, 'junk'), 'hello');
    expect(() => readCheckpoint(join(dir, 'junk'))).toThrow(/unreadable/);
  });

  it('lives beside the report, else beside the data directory, else in the working directory', () => {
    expect(defaultCheckpointPath({ report: '/r/run.json', target: 'embedded:/d', table: 't' })).toBe(
      '/r/run.checkpoint',
    );
    expect(defaultCheckpointPath({ target: 'embedded:/srv/data', table: 'people' })).toBe(
      '/srv/data.people.checkpoint',
    );
    expect(defaultCheckpointPath({ target: 'wharf://h:1', table: 'a/b' })).toMatch(/wharf-import-a_b\.checkpoint$/);
  });

  it('the rejects file is truncated to the rejects before the checkpoint on resume', () => {
    const path = join(dir, 'rej.ndjson');
    const r = new RejectsFile(path);
    for (let i = 1; i <= 5; i++) r.write({ seq: i, line: i, kind: 'invalid', reason: `bad ${i}`, raw: `x${i}` });
    r.close();
    const again = new RejectsFile(path, 3);
    again.write({ seq: 9, line: 9, kind: 'invalid', reason: 'bad 9', raw: 'x9' });
    again.close();
    expect(
      readFileSync(path, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).line),
    ).toEqual([1, 2, 3, 9]);
  });
});

describe('wharf gen', () => {
  it('is deterministic for a seed, with unique keys, in every format', () => {
    const a = [...generate({ count: 2000, size: 200, format: 'ndjson', seed: 3, badEvery: 0 })].join('');
    const b = [...generate({ count: 2000, size: 200, format: 'ndjson', seed: 3, badEvery: 0 })].join('');
    expect(a).toBe(b);
    // … and the seed matters: another seed, other documents.
    expect([...generate({ count: 2000, size: 200, format: 'ndjson', seed: 4, badEvery: 0 })].join('')).not.toBe(a);
    const docs = a
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(new Set(docs.map((d) => d.id)).size).toBe(2000);
    expect(docs[7].id).toBe(keyOf(7, 3));
    expect(Object.keys(docs[0])).toHaveLength(11);
    const avg = a.length / 2000;
    expect(avg).toBeGreaterThan(150);
    expect(avg).toBeLessThan(250);
    const arr = JSON.parse([...generate({ count: 10, size: 100, format: 'json', seed: 1, badEvery: 0 })].join(''));
    expect(arr).toHaveLength(10);
    const csv = [...generate({ count: 3, size: 100, format: 'csv', seed: 1, badEvery: 0 })].join('').trim().split('\n');
    expect(csv[0]).toBe('id,field0,field1,field2,field3,field4,field5,field6,field7,field8,field9');
    expect(csv).toHaveLength(4);
  });
});
