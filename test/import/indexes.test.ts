/**
 * `wharf import --index name=field[:multi]`: the indexes are created after every document is
 * loaded and synced, waited for, and reported with their build time. Embedded (the real engine
 * on a temp dir), wharf:// (the HTTP index routes of a real server) and rethinkdb:// (index_create
 * and index_wait through the official driver, against the same server's driver port).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLoader, EmbeddedTarget, type IndexSpec, type InsertOptions, type Payload } from '@wharf/client';
import { Database } from '@wharf/engine';
import { type ServerHandle, startServer } from '@wharf/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { remoteTargets, tempDir, wharf, withDb } from './helpers.js';

const tmp = tempDir();
const cwd = tmp.dir;
let server: ServerHandle;

const CITIES = ['Oslo', 'Bergen', 'Tromso'];
const docs = Array.from({ length: 2500 }, (_, i) => ({
  id: i,
  name: `person ${i}`,
  address: { city: CITIES[i % 3], zip: 1000 + i },
  tags: i % 2 === 0 ? ['even', `mod5_${i % 5}`] : [`mod5_${i % 5}`],
}));
const expectedOslo = docs.filter((d) => d.address.city === 'Oslo').map((d) => d.id);
const expectedEven = docs.filter((d) => d.tags.includes('even')).map((d) => d.id);
const sorted = (xs: number[]): number[] => [...xs].sort((a, b) => a - b);

beforeAll(async () => {
  writeFileSync(join(cwd, 'people.ndjson'), `${docs.map((d) => JSON.stringify(d)).join('\n')}\n`);
  server = await startServer({
    data: join(cwd, 'server-data'),
    httpPort: 0,
    driverPort: 0,
    logger: false,
    password: '',
  });
});

afterAll(async () => {
  await server?.close();
  tmp.cleanup();
});

const INDEX_ARGS = ['--index', 'by_city=address.city', '--index', 'by_tag=tags:multi', '--batch-size', '500'];

function checkReport(stdout: string, reportFile: string): void {
  expect(stdout).toMatch(/index by_city on address\.city: built in [\d.]+ ms/);
  expect(stdout).toMatch(/index by_tag on tags \(multi\): built in [\d.]+ ms/);
  const report = JSON.parse(readFileSync(join(cwd, reportFile), 'utf8'));
  expect(report.documents).toMatchObject({ read: 2500, written: 2500, rejected: 0, missing: 0 });
  expect(report.indexes).toHaveLength(2);
  expect(report.indexes[0]).toMatchObject({ name: 'by_city', field: 'address.city', multi: false, existed: false });
  expect(report.indexes[1]).toMatchObject({ name: 'by_tag', field: 'tags', multi: true, existed: false });
  for (const ix of report.indexes) expect(typeof ix.buildMs).toBe('number');
  expect(typeof report.indexBuildMs).toBe('number');
}

describe('createLoader({ indexes })', () => {
  it('creates the indexes only after every batch is acknowledged and the final sync, then waits for each', async () => {
    const db = await Database.open(join(cwd, 'loader-data'));
    const log: string[] = [];
    class Recording extends EmbeddedTarget {
      override insert(table: string, payload: Payload, opts: InsertOptions) {
        log.push('insert');
        return super.insert(table, payload, opts);
      }
      override async sync(): Promise<void> {
        log.push('sync');
        await super.sync();
      }
      override async createIndex(table: string, spec: IndexSpec) {
        log.push(`create ${spec.name}`);
        return super.createIndex(table, spec);
      }
      override async waitIndex(table: string, name: string) {
        log.push(`wait ${name}`);
        await super.waitIndex(table, name);
      }
    }
    try {
      const loader = createLoader({
        target: new Recording(db),
        table: 'loaded',
        batchSize: 100,
        indexes: [
          { name: 'by_g', field: 'g' },
          { name: 'by_tags', field: 'meta.tags', multi: true },
        ],
      });
      for (let i = 0; i < 1000; i++) await loader.write({ id: i, g: i % 10, meta: { tags: [`t${i % 3}`, 'all'] } });
      const summary = await loader.end();
      expect(summary.documents).toMatchObject({ read: 1000, written: 1000, missing: 0 });
      expect(summary.indexes.map((i) => [i.name, i.field, i.multi, i.existed])).toEqual([
        ['by_g', 'g', false, false],
        ['by_tags', 'meta.tags', true, false],
      ]);
      expect(typeof summary.indexBuildMs).toBe('number');
      const firstCreate = log.indexOf('create by_g');
      expect(firstCreate).toBeGreaterThan(log.lastIndexOf('insert'));
      expect(firstCreate).toBeGreaterThan(log.lastIndexOf('sync'));
      expect(log.slice(firstCreate)).toEqual(['create by_g', 'create by_tags', 'wait by_g', 'wait by_tags']);
      const t = db.table('loaded') as any;
      expect((await t.getAll('by_g', [3], { fresh: false })).length).toBe(100);
      expect((await t.getAll('by_tags', ['all'], { fresh: false })).length).toBe(1000);
    } finally {
      await db.close();
    }
  });

  it('rejects bad index specs when the loader is created', () => {
    expect(() =>
      createLoader({ target: 'embedded:/nonexistent', table: 't', indexes: [{ name: 'bad name', field: 'a' }] }),
    ).toThrow(/indexes\[0\]\.name/);
    expect(() =>
      createLoader({ target: 'embedded:/nonexistent', table: 't', indexes: [{ name: 'a', field: 'x..y' }] }),
    ).toThrow(/field path/);
    expect(() =>
      createLoader({
        target: 'embedded:/nonexistent',
        table: 't',
        indexes: [
          { name: 'a', field: 'x' },
          { name: 'a', field: 'y' },
        ],
      }),
    ).toThrow(/given twice/);
  });
});

describe('wharf import --index', () => {
  it('embedded: builds the indexes after the load; getAll works afterwards', async () => {
    const dir = join(cwd, 'embedded-data');
    const r = await wharf(
      [
        'import',
        'people.ndjson',
        '-t',
        'people',
        '--target',
        `embedded:${dir}`,
        '--report',
        'embedded.json',
        ...INDEX_ARGS,
      ],
      { cwd },
    );
    expect(r.code, r.stdout + r.stderr).toBe(0);
    checkReport(r.stdout, 'embedded.json');
    await withDb(dir, async (db) => {
      const t = db.table('people') as any;
      const infos = await t.listIndexes();
      expect(infos.map((i: { name: string }) => i.name).sort()).toEqual(['by_city', 'by_tag']);
      for (const i of infos) expect(i.ready).toBe(true);
      expect(sorted((await t.getAll('by_city', ['Oslo'])).map((d: { id: number }) => d.id))).toEqual(expectedOslo);
      expect(sorted((await t.getAll('by_tag', ['even'])).map((d: { id: number }) => d.id))).toEqual(expectedEven);
    });

    // A second import into the same table: the indexes exist, so they are waited for, not created.
    const again = await wharf(
      [
        'import',
        'people.ndjson',
        '-t',
        'people',
        '--target',
        `embedded:${dir}`,
        '--conflict',
        'replace',
        '--report',
        'embedded2.json',
        ...INDEX_ARGS,
      ],
      { cwd },
    );
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(again.stdout).toMatch(/index by_city on address\.city: existed; caught up in/);
    const report = JSON.parse(readFileSync(join(cwd, 'embedded2.json'), 'utf8'));
    expect(report.indexes.map((i: { existed: boolean }) => i.existed)).toEqual([true, true]);
  });

  it('rejects a bad --index on the command line', async () => {
    const r = await wharf(
      [
        'import',
        'people.ndjson',
        '-t',
        'people',
        '--target',
        `embedded:${join(cwd, 'unused')}`,
        '--index',
        'by city=address.city',
      ],
      { cwd },
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/index name must be/);
    const r2 = await wharf(
      ['import', 'people.ndjson', '-t', 'people', '--target', `embedded:${join(cwd, 'unused')}`, '--index', 'by_city'],
      { cwd },
    );
    expect(r2.code).toBe(2);
    expect(r2.stderr).toMatch(/expected name=field/);
  });

  describe.each(remoteTargets(() => server))('target %s://', (name, target) => {
    it('builds the indexes after the load; getAll through the HTTP routes works afterwards', async () => {
      const table = `people_${name}`;
      const r = await wharf(
        ['import', 'people.ndjson', '-t', table, '--target', target(), '--report', `${name}.json`, ...INDEX_ARGS],
        { cwd },
      );
      expect(r.code, r.stdout + r.stderr).toBe(0);
      checkReport(r.stdout, `${name}.json`);
      const base = `http://127.0.0.1:${server.http.port}/api/tables/${table}`;
      const list = (await (await fetch(`${base}/indexes`)).json()) as {
        indexes: { name: string; field: string; multi: boolean; ready: boolean }[];
      };
      expect(list.indexes.map((i) => [i.name, i.field, i.multi, i.ready]).sort()).toEqual([
        ['by_city', 'address.city', false, true],
        ['by_tag', 'tags', true, true],
      ]);
      const oslo = (await (
        await fetch(`${base}/indexes/by_city/docs?value=${encodeURIComponent('"Oslo"')}&limit=10000&fresh=false`)
      ).json()) as { documents: { id: number }[] };
      expect(sorted(oslo.documents.map((d) => d.id))).toEqual(expectedOslo);
      const even = (await (
        await fetch(`${base}/indexes/by_tag/docs?value=${encodeURIComponent('"even"')}&limit=10000&fresh=false`)
      ).json()) as { documents: { id: number }[] };
      expect(sorted(even.documents.map((d) => d.id))).toEqual(expectedEven);
    });
  });
});
