import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderCliReference } from '../src/docs.js';
import { importCommand, parseBytes, parseMs } from '../src/options.js';
import { parse } from '../src/parse.js';

describe('parse (pure)', () => {
  it('reads every import option into a typed object with defaults', () => {
    const p = parse(['import', 'in.csv', '-t', 'people']);
    expect(p).toEqual({
      command: 'import',
      options: {
        file: 'in.csv',
        files: ['in.csv'],
        table: 'people',
        target: 'embedded:./wharf-data',
        primaryKey: 'id',
        batchSize: 5000,
        flushMs: 50,
        concurrency: 4,
        durability: 'soft',
        finalSync: true,
        naive: false,
        conflict: 'error',
        maxErrors: 20,
        resume: false,
        checkpointMs: 1000,
        failIf: [],
        dryRun: false,
        csvTypes: 'none',
        progress: 'auto',
        indexes: [],
        status: false,
        json: false,
        taskBytes: 64 << 20,
        heartbeatMs: 1000,
        deadAfterMs: 10_000,
        jobTable: 'wharf_jobs',
      },
    });
  });

  it('reads a job: several inputs, its name, and --status without a table', () => {
    const p = parse(['import', 'a.ndjson', 'logs/*.ndjson', '-t', 't', '--job', 'nightly', '--task-bytes', '1MiB']);
    expect(p.command === 'import' && p.options).toMatchObject({
      file: 'a.ndjson',
      files: ['a.ndjson', 'logs/*.ndjson'],
      job: 'nightly',
      taskBytes: 1 << 20,
    });
    expect(parse(['import', '--job', 'nightly', '--status'])).toMatchObject({
      command: 'import',
      options: { job: 'nightly', status: true, files: [] },
    });
    expect(parse(['import', 'a.ndjson'])).toMatchObject({ command: 'error', exitCode: 2 });
    const bad = parse(['import', 'a.ndjson', '-t', 't', '--job', 'no spaces']);
    expect(bad.command === 'error' && bad.message).toMatch(/a job name is 1 to 100 letters/);
  });

  it('reads the RethinkDB cluster options; --batch-bytes is left to the loader unless given', () => {
    const p = parse([
      'import',
      'x.ndjson',
      '-t',
      't',
      '--target',
      'rethinkdb://h1:28015,h2:28015/db',
      '--shards',
      '3',
      '--replicas',
      '2',
      '--write-acks',
      'majority',
    ]);
    expect(p.command === 'import' && p.options).toMatchObject({ shards: 3, replicas: 2, writeAcks: 'majority' });
    expect(p.command === 'import' && p.options.batchBytes).toBeUndefined();
    expect(parse(['import', 'x.ndjson', '-t', 't', '--batch-bytes', '1MiB'])).toMatchObject({
      options: { batchBytes: 1 << 20 },
    });
    const bad = parse(['import', 'x.ndjson', '-t', 't', '--write-acks', 'all']);
    expect(bad.command === 'error' && bad.message).toMatch(/expected one of single, majority/);
    expect(parse(['import', 'x.ndjson', '-t', 't', '--shards', '0'])).toMatchObject({ command: 'error', exitCode: 2 });
  });

  it('reads repeated --index name=field[:multi]', () => {
    const p = parse([
      'import',
      'x.ndjson',
      '-t',
      't',
      '--index',
      'by_city=address.city',
      '--index',
      'by_tag=tags:multi',
    ]);
    expect(p.command === 'import' && p.options.indexes).toEqual([
      { name: 'by_city', field: 'address.city', multi: false },
      { name: 'by_tag', field: 'tags', multi: true },
    ]);
    const bad = parse(['import', 'x.ndjson', '-t', 't', '--index', 'by_city=']);
    expect(bad).toMatchObject({ command: 'error', exitCode: 2 });
    expect(bad.command === 'error' && bad.message).toMatch(/field path/);
  });

  it('reads the full set of options', () => {
    const p = parse([
      'import',
      '-',
      '--table',
      't',
      '--target',
      'wharf://h:1',
      '--primary-key',
      'key',
      '--format',
      'json',
      '--batch-size',
      '10',
      '--batch-bytes',
      '64KiB',
      '--flush-ms',
      '1s',
      '--concurrency',
      '2',
      '--durability',
      'hard',
      '--no-final-sync',
      '--naive',
      '--conflict',
      'replace',
      '--max-errors',
      '-1',
      '--rejects',
      'r.ndjson',
      '--resume',
      '--checkpoint',
      'c.ck',
      '--report',
      'r.json',
      '--chart',
      'c.html',
      '--fail-if',
      'p99<5ms',
      '--fail-if',
      'rejected==0',
      '--dry-run',
      '--delimiter',
      ';',
      '--csv-types',
      'header',
      '--progress',
      'lines',
    ]);
    expect(p.command).toBe('import');
    if (p.command !== 'import') return;
    expect(p.options).toMatchObject({
      file: '-',
      target: 'wharf://h:1',
      primaryKey: 'key',
      format: 'json',
      batchSize: 10,
      batchBytes: 65536,
      flushMs: 1000,
      concurrency: 2,
      durability: 'hard',
      finalSync: false,
      naive: true,
      conflict: 'replace',
      maxErrors: -1,
      rejects: 'r.ndjson',
      resume: true,
      checkpoint: 'c.ck',
      report: 'r.json',
      chart: 'c.html',
      failIf: ['p99<5ms', 'rejected==0'],
      dryRun: true,
      delimiter: ';',
      csvTypes: 'header',
      progress: 'lines',
    });
  });

  it('takes the default target from WHARF_TARGET', () => {
    const p = parse(['import', 'x', '-t', 't'], { WHARF_TARGET: 'embedded:/srv/w' });
    expect(p.command === 'import' && p.options.target).toBe('embedded:/srv/w');
  });

  it('reports usage errors with exit status 2, help with 0', () => {
    for (const argv of [
      ['import', 'x'],
      ['import', 'x', '-t', 't', '--concurrency', '0'],
      ['import', 'x', '-t', 't', '--conflict', 'ignore'],
      ['frobnicate'],
    ]) {
      const p = parse(argv);
      expect(p.command).toBe('error');
      expect(p.command === 'error' && p.exitCode).toBe(2);
    }
    const help = parse(['import', '--help']);
    expect(help.command).toBe('output');
    if (help.command === 'output') for (const o of importCommand.options) expect(help.text).toContain(`--${o.flag}`);
    expect(parse(['gen', '-n', '5'])).toMatchObject({
      command: 'gen',
      options: { count: 5, size: 1000, format: 'ndjson', seed: 1 },
    });
    expect(parse(['serve', '-p', '9000'])).toMatchObject({
      command: 'serve',
      options: { port: 9000, data: './wharf-data' },
    });
  });

  it('parses sizes and durations', () => {
    expect(parseBytes('4MiB')).toBe(4 << 20);
    expect(parseBytes('512k')).toBe(512_000);
    expect(() => parseBytes('lots')).toThrow();
    expect(parseMs('250')).toBe(250);
    expect(parseMs('2s')).toBe(2000);
  });

  it('docs/reference/cli.md is rendered from the same table, and is up to date', () => {
    const text = renderCliReference();
    for (const o of importCommand.options) expect(text).toContain(`--${o.flag}`);
    const file = resolve(import.meta.dirname, '../../../docs/reference/cli.md');
    // Missing counts as stale: the reference is part of the docs.
    expect(existsSync(file), `${file} is missing: regenerate it (npx tsx apps/cli/scripts/render-docs.ts)`).toBe(true);
    expect(readFileSync(file, 'utf8')).toBe(text);
  });
});
