/** Bad rows, the rejects file, --max-errors, --fail-if exit statuses, usage errors. */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { errorCatalogue, exitCodeOf } from '@wharf/wire';
import { afterAll, describe, expect, it } from 'vitest';
import { countOf, readNdjson, tempDir, wharf, wharfImport, withDb } from './helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());
const cwd = tmp.dir;

describe('wharf import: bad rows', () => {
  it('writes every bad row to the rejects file with its line, reason and raw text; exit 3', async () => {
    await wharf(['gen', '-n', '500', '--size', '200', '--bad-every', '50', '-o', 'bad.ndjson'], { cwd });
    // plus a duplicate key: a conflict
    const first = readFileSync(join(cwd, 'bad.ndjson'), 'utf8').split('\n')[0]!;
    writeFileSync(join(cwd, 'bad.ndjson'), `${readFileSync(join(cwd, 'bad.ndjson'), 'utf8')}${first}\n`);
    const data = join(cwd, 'data1');
    const r = await wharfImport(
      'bad.ndjson',
      'b',
      `embedded:${data}`,
      ['--rejects', 'rej.ndjson', '--report', 'r.json'],
      { cwd },
    );
    expect(r.code, r.stdout + r.stderr).toBe(3);
    expect(r.stdout).toMatch(/501 documents read, 490 written, 11 rejected/);
    const rej = readNdjson(join(cwd, 'rej.ndjson'));
    expect(rej.map((x) => x.line)).toEqual([50, 100, 150, 200, 250, 300, 350, 400, 450, 500, 501]);
    const lines = readFileSync(join(cwd, 'bad.ndjson'), 'utf8').split('\n');
    for (const x of rej) {
      expect(x.raw).toBe(lines[x.line - 1]);
      expect(typeof x.reason).toBe('string');
      expect(typeof x.offset).toBe('number');
    }
    expect(rej[10]).toMatchObject({ kind: 'conflict', line: 501 });
    expect(rej[0].kind).toBe('invalid');
    expect(await countOf(data, 'b')).toBe(490);
    const report = JSON.parse(readFileSync(join(cwd, 'r.json'), 'utf8'));
    expect(report).toMatchObject({
      status: 'rejects',
      exitCode: 3,
      ok: true,
      documents: { read: 501, written: 490, rejected: 11, missing: 0 },
    });
    expect(report.rejects.count).toBe(11);
  });

  it('stops after --max-errors and fails (exit 1), never claiming success', async () => {
    await wharf(['gen', '-n', '20000', '--size', '100', '--bad-every', '100', '-o', 'many.ndjson'], { cwd });
    const data = join(cwd, 'data2');
    const r = await wharfImport(
      'many.ndjson',
      'm',
      `embedded:${data}`,
      ['--max-errors', '3', '--batch-size', '100', '--report', 'm.json'],
      { cwd },
    );
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toMatch(/FAILED/);
    const report = JSON.parse(readFileSync(join(cwd, 'm.json'), 'utf8'));
    expect(report.status).toBe('failed');
    expect(report.ok).toBe(false);
    expect(report.error.code).toBe('WHARF_ERR_MAX_ERRORS');
    expect(r.code).toBe(errorCatalogue.WHARF_ERR_MAX_ERRORS.exit);
    expect(report.documents.rejected).toBeGreaterThan(3);
    expect(report.documents.read).toBeLessThan(20000);
    expect(report.checkpoint.complete).toBe(false);
    // What the report says was written is what the table holds.
    expect(await countOf(data, 'm')).toBe(report.documents.written);
  });

  it('writes its data, checkpoint, rejects, report and chart under directories that do not exist yet', async () => {
    writeFileSync(join(cwd, 'three.ndjson'), '{"id":1,"name":"a"}\n{"id":2,"name":"b"}\n{"id":3,"name":\n');
    const out = join(cwd, 'new', 'nested');
    const r = await wharfImport(
      'three.ndjson',
      'people',
      `embedded:${join(out, 'data', 'db')}`,
      [
        '--rejects',
        join(out, 'rejects', 'r.ndjson'),
        '--report',
        join(out, 'reports', 'r.json'),
        '--chart',
        join(out, 'charts', 'c.html'),
      ],
      { cwd },
    );
    expect(r.code, r.stdout + r.stderr).toBe(3);
    expect(r.stdout).toMatch(/3 documents read, 2 written, 1 rejected/);
    expect(await countOf(join(out, 'data', 'db'), 'people')).toBe(2);
    expect(JSON.parse(readFileSync(join(out, 'rejects', 'r.ndjson'), 'utf8'))).toMatchObject({
      line: 3,
      kind: 'invalid',
    });
    const report = JSON.parse(readFileSync(join(out, 'reports', 'r.json'), 'utf8'));
    expect(report).toMatchObject({ status: 'rejects', documents: { read: 3, written: 2, rejected: 1 } });
    expect(report.checkpoint.path).toBe(join(out, 'reports', 'r.checkpoint'));
    expect(readFileSync(join(out, 'charts', 'c.html'), 'utf8')).toMatch(/<html/i);

    // Without a report, the checkpoint goes beside the data directory, whose parent is new too.
    const bare = join(cwd, 'fresh', 'db');
    const r2 = await wharfImport('three.ndjson', 'people', `embedded:${bare}`, [], { cwd });
    expect(r2.code, r2.stdout + r2.stderr).toBe(3);
    expect(await countOf(bare, 'people')).toBe(2);
  });

  it('a JSON array with a broken structure stops with the line, exit 1', async () => {
    writeFileSync(join(cwd, 'broken.json'), '[\n{"id":1},\n{"id":2}\n{"id":3}\n]');
    const r = await wharfImport('broken.json', 'x', `embedded:${join(cwd, 'data3')}`, [], { cwd });
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toMatch(/line 4/);
  });
});

describe("wharf import: the exit status of a failure is its code's in the error catalogue", () => {
  /** Runs an import that fails; returns its exit status and its report's error code. */
  async function failing(args: string[], report: string): Promise<{ exit: number | null; code: string }> {
    const r = await wharf([...args, '--report', report], { cwd });
    const written = JSON.parse(readFileSync(join(cwd, report), 'utf8'));
    expect(written.status, r.stdout + r.stderr).toBe('failed');
    expect(written.exitCode).toBe(r.code);
    return { exit: r.code, code: written.error.code };
  }

  it('an engine refusal of a bad argument: WHARF_ERR_INVALID_ARGUMENT, exit 2 (usage)', async () => {
    writeFileSync(join(cwd, 'two.ndjson'), '{"id":1}\n{"id":2}\n');
    const r = await failing(
      ['import', 'two.ndjson', '-t', 'x', '--target', `embedded:${join(cwd, 'data-pk')}`, '--primary-key', 'bad key'],
      'pk.json',
    );
    expect(r).toEqual({ exit: exitCodeOf('WHARF_ERR_INVALID_ARGUMENT'), code: 'WHARF_ERR_INVALID_ARGUMENT' });
    expect(r.exit).toBe(2);
  });

  it('a directory another handle holds: WHARF_ERR_LOCKED, exit 1', async () => {
    writeFileSync(join(cwd, 'two.ndjson'), '{"id":1}\n{"id":2}\n');
    const dir = join(cwd, 'data-locked');
    const r = await withDb(dir, () =>
      failing(['import', 'two.ndjson', '-t', 'x', '--target', `embedded:${dir}`], 'locked.json'),
    );
    expect(r).toEqual({ exit: errorCatalogue.WHARF_ERR_LOCKED.exit, code: 'WHARF_ERR_LOCKED' });
    expect(r.exit).toBe(1);
  });

  it('a bad command line: WHARF_ERR_USAGE, exit 2', async () => {
    // Found by the import itself, not the argument parser: it throws a WHARF_ERR_USAGE error.
    const r = await wharf(['import', '-', '-t', 'x', '--resume', '--target', `embedded:${join(cwd, 'data-usage')}`], {
      cwd,
    });
    expect(r.stderr).toMatch(/--resume from standard input needs --format/);
    expect(r.code, r.stdout + r.stderr).toBe(exitCodeOf('WHARF_ERR_USAGE'));
    expect(r.code).toBe(2);
  });
});

describe('wharf import: --fail-if thresholds', () => {
  it('exit 0 when thresholds hold, 4 when one is breached, 2 when one cannot be read', async () => {
    await wharf(['gen', '-n', '300', '--size', '100', '-o', 't.ndjson'], { cwd });
    const target = ['--target', `embedded:${join(cwd, 'data4')}`];
    const ok = await wharf(
      [
        'import',
        't.ndjson',
        '-t',
        't1',
        ...target,
        '--fail-if',
        'rejected==0',
        '--fail-if',
        'p99<1h',
        '--fail-if',
        'rate>0',
        '--report',
        't1.json',
      ],
      { cwd },
    );
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(cwd, 't1.json'), 'utf8')).thresholds).toMatchObject([
      { expr: 'rejected==0', ok: true, actual: 0 },
      { expr: 'p99<1h', ok: true },
      { expr: 'rate>0', ok: true },
    ]);
    const breached = await wharf(
      ['import', 't.ndjson', '-t', 't2', ...target, '--fail-if', 'p(99)<0.001us', '--report', 't2.json'],
      { cwd },
    );
    expect(breached.code, breached.stdout + breached.stderr).toBe(4);
    expect(breached.stdout).toMatch(/BREACHED/);
    const report = JSON.parse(readFileSync(join(cwd, 't2.json'), 'utf8'));
    expect(report).toMatchObject({
      status: 'thresholds',
      exitCode: 4,
      thresholds: [{ expr: 'p(99)<0.001us', ok: false }],
    });
    const bad = await wharf(['import', 't.ndjson', '-t', 't3', ...target, '--fail-if', 'p99 is small'], { cwd });
    expect(bad.code, bad.stdout + bad.stderr).toBe(2);
    expect(bad.stderr).toMatch(/cannot read threshold/);
  });

  it('usage errors exit 2; bench names its scenarios; serve answers --help', async () => {
    expect((await wharf(['import', 'x.ndjson'], { cwd })).code).toBe(2); // no --table
    expect((await wharf(['import', 'x.ndjson', '-t', 'x', '--durability', 'firm'], { cwd })).code).toBe(2);
    expect((await wharfImport('x.ndjson', 'x', 'mongodb://h/db', [], { cwd })).code).toBe(2);
    const bench = await wharf(['bench'], { cwd });
    expect(bench.code).toBe(2);
    expect(bench.stderr).toMatch(/scenario/);
    const unknown = await wharf(['bench', 'nope'], { cwd });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/seed000, group-commit, bulk, import, job, sustained, kv, reql, or all/);
    const help = await wharf(['serve', '--help'], { cwd });
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/--data/);
  });
});
