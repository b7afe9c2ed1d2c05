/**
 * Bounded memory: a generated file several times larger than the V8 heap limit given to the
 * process imports completely; and the reading path (--dry-run, no engine) keeps its resident
 * memory well under the file's size.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { countOf, tempDir, wharf } from './helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());
const cwd = tmp.dir;

const HEAP_MB = 16;
const DOCS = 120_000; // of ~1000 bytes: a file of ~120 MB, 7× the heap limit

describe('wharf import: bounded memory', () => {
  it(`imports a file ${Math.round(DOCS / 1000 / HEAP_MB)}× larger than --max-old-space-size=${HEAP_MB}`, async () => {
    expect((await wharf(['gen', '-n', String(DOCS), '--size', '1000', '-o', 'big.ndjson'], { cwd })).code).toBe(0);
    const fileMB = statSync(join(cwd, 'big.ndjson')).size / 1e6;
    expect(fileMB).toBeGreaterThan(HEAP_MB * 5);
    const nodeArgs = [`--max-old-space-size=${HEAP_MB}`];

    const data = join(cwd, 'data');
    const r = await wharf(
      ['import', 'big.ndjson', '-t', 'big', '--target', `embedded:${data}`, '--report', 'imp.json'],
      { cwd, nodeArgs },
    );
    expect(r.stderr).not.toMatch(/heap out of memory/i);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(await countOf(data, 'big')).toBe(DOCS);

    const dry = await wharf(['import', 'big.ndjson', '-t', 'big', '--dry-run', '--report', 'dry.json'], {
      cwd,
      nodeArgs,
    });
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    const report = JSON.parse(readFileSync(join(cwd, 'dry.json'), 'utf8'));
    expect(report.documents.read).toBe(DOCS);
    // Node + tsx take ~90 MB; holding the input would add its whole size.
    expect(report.memory.peakRssMB).toBeLessThan(90 + fileMB / 2);
  });
});
