/**
 * `wharf import` end to end on the embedded engine: every format, standard input, the report's
 * fields and the chart. Runs the real bin in a child process.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { keyOf } from '@wharf/cli';
import { afterAll, describe, expect, it } from 'vitest';
import { countOf, readNdjson, tempDir, wharf, wharfImport, withDb } from './helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());
const cwd = tmp.dir;

async function gen(args: string[], file: string): Promise<string> {
  const out = join(cwd, file);
  const r = await wharf(['gen', ...args, '--out', out], { cwd });
  expect(r.code, r.stdout + r.stderr).toBe(0);
  return out;
}

describe('wharf import: formats', () => {
  it('imports NDJSON and writes a report with every documented field', async () => {
    const file = await gen(['--count', '3000', '--size', '300'], 'a.ndjson');
    const data = join(cwd, 'data-ndjson');
    const r = await wharf(
      [
        'import',
        file,
        '--table',
        'a',
        '--target',
        `embedded:${data}`,
        '--report',
        'a.json',
        '--chart',
        'a.html',
        '--batch-size',
        '500',
      ],
      { cwd },
    );
    expect(r.stderr).toBe('');
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/3,000 documents read, 3,000 written, 0 rejected/);
    expect(await countOf(data, 'a')).toBe(3000);
    const report = JSON.parse(readFileSync(join(cwd, 'a.json'), 'utf8'));
    expect(report).toMatchObject({
      version: 1,
      status: 'ok',
      ok: true,
      exitCode: 0,
      target: `embedded:${data}`,
      table: 'a',
      format: 'ndjson',
      documents: { read: 3000, written: 3000, rejected: 0, missing: 0 },
      options: { batchSize: 500, durability: 'soft', finalSync: true, naive: false, concurrency: 4 },
      checkpoint: { complete: true },
    });
    for (const k of ['p50', 'p90', 'p99', 'p99.9', 'max', 'mean']) expect(typeof report.latencyMs[k]).toBe('number');
    expect(report.latencyMs.count).toBe(3000);
    expect(report.latencyMs.p50).toBeLessThanOrEqual(report.latencyMs.p99);
    expect(report.wallSeconds).toBeGreaterThan(0);
    expect(report.docsPerSec).toBeGreaterThan(0);
    expect(typeof report.finalSyncMs).toBe('number');
    expect(report.batches).toBeGreaterThanOrEqual(6);
    expect(Array.isArray(report.intervals)).toBe(true);
    expect(report.intervals.reduce((n: number, i: { docs: number }) => n + i.docs, 0)).toBe(3000);
    expect(Array.isArray(report.intervals10s)).toBe(true);
    expect(typeof report.zeroIntervals).toBe('number');
    expect(typeof report.engine.fdatasyncs).toBe('number');
    expect(typeof report.engine.groups).toBe('number');
    // Bytes written per byte loaded, taken after the engine's close: its final checkpoint wrote
    // the documents (too few for one during the load) as a run.
    expect(report.engine.bytesLoaded).toBeGreaterThan(3000 * 300);
    expect(report.engine.bytesWrittenFlushes).toBeGreaterThan(0);
    expect(report.engine.bytesWrittenPerByteLoaded).toBeCloseTo(
      (report.engine.bytesWrittenJournal + report.engine.bytesWrittenFlushes + report.engine.bytesWrittenMerges) /
        report.engine.bytesLoaded,
      9,
    );
    expect(r.stdout).toMatch(
      /bytes written per byte loaded \d+\.\d\d \(journal \d+\.\d\d, runs \d+\.\d\d, merges 0\.00\)/,
    );
    const html = readFileSync(join(cwd, 'a.html'), 'utf8');
    expect(html).toContain('uPlot');
    expect(html).not.toMatch(/<script[^>]+src=/); // self-contained
    expect(html).toContain('"rate":[');
  });

  it('imports a pretty-printed JSON array, streaming it', async () => {
    const docs = Array.from({ length: 500 }, (_, i) => ({
      id: i,
      nested: { list: [i, `s${i}`], text: 'a "quoted" ] } [ {' },
    }));
    const file = join(cwd, 'b.json');
    writeFileSync(file, JSON.stringify(docs, null, 2));
    const data = join(cwd, 'data-json');
    const r = await wharfImport(file, 'b', `embedded:${data}`, ['--progress', 'none'], { cwd });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    await withDb(data, async (db) => {
      expect(await db.table('b').count()).toBe(500);
      expect(await db.table('b').get(123)).toEqual(docs[123]);
    });
  });

  it('JSON arrays in blocks: rejects by line, one element per line or all on one line', async () => {
    const elements = Array.from({ length: 3000 }, (_, i) => JSON.stringify({ id: i, s: `a,]}"${i}` }));
    elements[1234] = JSON.stringify({ id: 7 }); // a conflict
    elements[2500] = '"not an object"';
    for (const [name, text, lineOf] of [
      ['lines', `[\n${elements.join(',\n')}\n]\n`, (i: number) => i + 2],
      ['one', `[${elements.join(',')}]`, () => 1],
    ] as const) {
      const file = join(cwd, `arr-${name}.json`);
      writeFileSync(file, text);
      const data = join(cwd, `data-arr-${name}`);
      const rejects = join(cwd, `arr-${name}.rejects`);
      const report = join(cwd, `arr-${name}.report.json`);
      const r = await wharfImport(
        file,
        'a',
        `embedded:${data}`,
        ['--rejects', rejects, '--report', report, '--memory-budget-mb', '16', '--batch-size', '700'],
        { cwd },
      );
      expect(r.code, r.stdout + r.stderr).toBe(3);
      const rep = JSON.parse(readFileSync(report, 'utf8'));
      expect(rep.documents).toEqual({ read: 3000, written: 2998, rejected: 2, present: 0, missing: 0 });
      expect(rep.latencyMs.count).toBe(2999); // every element sent (the non-object was not)
      expect(rep.batches).toBe(5); // 700 documents a batch
      expect(rep.engine.memoryBudget).toBe(16 << 20);
      expect(readNdjson(rejects).map((e) => [e.line, e.kind, e.raw])).toEqual([
        [lineOf(1234), 'conflict', '{"id":7}'],
        [lineOf(2500), 'invalid', '"not an object"'],
      ]);
      expect(await countOf(data, 'a')).toBe(2998);
    }
  });

  it('imports CSV with a header, typed columns on request, from standard input too', async () => {
    const csv = 'id,name,age,member\n1,Ada,36,true\n2,"Hopper, Grace",85,false\n3,Alan,41,\n';
    const data = join(cwd, 'data-csv');
    writeFileSync(join(cwd, 'c.csv'), csv);
    const r1 = await wharfImport('c.csv', 'plain', `embedded:${data}`, [], { cwd });
    expect(r1.code, r1.stdout + r1.stderr).toBe(0);
    const r2 = await wharf(
      ['import', '-', '--format', 'csv', '-t', 'typed', '--csv-types', 'auto', '--target', `embedded:${data}`],
      { cwd, input: csv },
    );
    expect(r2.code, r2.stdout + r2.stderr).toBe(0);
    await withDb(data, async (db) => {
      expect(await db.table('plain').get('2')).toEqual({ id: '2', name: 'Hopper, Grace', age: '85', member: 'false' });
      expect(await db.table('typed').get(2)).toEqual({ id: 2, name: 'Hopper, Grace', age: 85, member: false });
      expect(await db.table('typed').get(3)).toEqual({ id: 3, name: 'Alan', age: 41 });
    });
  });

  it('reads NDJSON from standard input and detects the format from the first byte', async () => {
    const lines = Array.from({ length: 200 }, (_, i) => JSON.stringify({ id: keyOf(i, 7), i })).join('\n');
    const data = join(cwd, 'data-stdin');
    const r = await wharfImport('-', 's', `embedded:${data}`, [], { cwd, input: lines });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/200 documents read, 200 written/);
    expect(await countOf(data, 's')).toBe(200);
  });

  it('naive mode: one insert per document, hard; --no-final-sync makes no final sync', async () => {
    const file = await gen(['--count', '40', '--size', '100'], 'n.ndjson');
    const data = join(cwd, 'data-naive');
    const r = await wharfImport(file, 'n', `embedded:${data}`, ['--naive', '--report', 'n.json'], { cwd });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const n = JSON.parse(readFileSync(join(cwd, 'n.json'), 'utf8'));
    expect(n.options).toMatchObject({ naive: true, batchSize: 1, concurrency: 1, durability: 'hard' });
    expect(n.batches).toBe(40);
    expect(n.engine.fdatasyncs).toBeGreaterThanOrEqual(40);
    expect(n.finalSyncMs).toBeNull();
    const r2 = await wharfImport(file, 'n2', `embedded:${data}`, ['--no-final-sync', '--report', 'n2.json'], { cwd });
    expect(r2.code, r2.stdout + r2.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(cwd, 'n2.json'), 'utf8')).finalSyncMs).toBeNull();
  });

  it('--dry-run parses and validates without writing', async () => {
    // An object is no key; an array of keys is one (as in RethinkDB).
    writeFileSync(join(cwd, 'd.ndjson'), '{"id":1}\n{"id":{"a":1}}\n{"id":\n[]\n{"id":"x"}\n{"id":[1,"a"]}\n');
    const data = join(cwd, 'data-dry');
    const r = await wharfImport('d.ndjson', 'd', `embedded:${data}`, ['--dry-run', '--rejects', 'd.rej'], { cwd });
    expect(r.code, r.stdout + r.stderr).toBe(3);
    expect(r.stdout).toMatch(/6 documents read, 3 valid, 3 rejected/);
    const rej = readNdjson(join(cwd, 'd.rej'));
    expect(rej.map((x) => x.line)).toEqual([2, 3, 4]);
    const { existsSync } = await import('node:fs');
    expect(existsSync(data)).toBe(false);
  });
});
