import { describe, expect, it } from 'vitest';
import { createLoader, type DocumentError, LoaderError, type Mark, parseTarget, redact } from '../src/index.js';
import { EngineTarget } from './engine-target.js';

describe('per-document errors', () => {
  it('reports conflicts and invalid documents with their source line and raw text', async () => {
    const target = await EngineTarget.create();
    const errors: DocumentError[] = [];
    const loader = createLoader({ target, table: 't', onDocumentError: (e) => errors.push(e) });
    await loader.write('{"id":1}', { line: 1 });
    await loader.write('{"id":1,"again":true}', { line: 2 });
    await loader.write('not json', { line: 3 });
    await loader.write({ id: 2 }, { line: 4 });
    const err = (await loader.end().catch((e) => e)) as LoaderError | undefined;
    // rejections alone do not fail the load: written = read − rejected
    expect(err).not.toBeInstanceOf(LoaderError);
    expect(errors).toMatchObject([
      { line: 2, kind: 'conflict', raw: '{"id":1,"again":true}', seq: 1 },
      { line: 3, kind: 'invalid', raw: 'not json', seq: 2 },
    ]);
  });

  it('stops after maxErrors and never claims success', async () => {
    const target = await EngineTarget.create();
    const loader = createLoader({ target, table: 't', maxErrors: 2, batchSize: 2, flushMs: 0 });
    let writeError: unknown;
    try {
      for (let i = 0; i < 100; i++) await loader.write(i % 2 ? 'bad' : { id: i });
    } catch (e) {
      writeError = e;
    }
    expect((writeError as LoaderError).code).toBe('WHARF_ERR_MAX_ERRORS');
    const e = (await loader.end().catch((x) => x)) as LoaderError;
    expect(e.code).toBe('WHARF_ERR_MAX_ERRORS');
    expect(e.summary!.ok).toBe(false);
    expect(e.summary!.documents.rejected).toBeGreaterThan(2);
  });

  it('a fatal target error fails the load with a summary that shows the missing documents', async () => {
    // The table is not there and the loader may not create it: every batch fails for good.
    const target = await EngineTarget.create();
    const loader = createLoader({ target, table: 't', createTable: false, batchSize: 5, flushMs: 0 });
    await loader.write({ id: 1 }).catch(() => {});
    const e = (await loader.end().catch((x) => x)) as LoaderError;
    expect(e).toBeInstanceOf(LoaderError);
    expect(e.code).toBe('WHARF_ERR_TABLE_NOT_FOUND');
    expect(e.summary!.ok).toBe(false);
    expect(e.summary!.documents.missing).toBe(1);
  });

  it('ends (does not hang) when several batches in flight fail', async () => {
    const target = await EngineTarget.create();
    const loader = createLoader({ target, table: 't', createTable: false, batchSize: 5, concurrency: 4, flushMs: 0 });
    for (let i = 0; i < 20; i++) await loader.write({ id: i }).catch(() => {});
    const e = (await loader.end().catch((x) => x)) as LoaderError;
    const d = e.summary!.documents;
    expect(d.written).toBe(0);
    expect(d.read).toBeGreaterThanOrEqual(5);
    expect(d.missing).toBe(d.read);
  });

  it('retries a transient failure; a re-sent batch conflicting with itself counts as present', async () => {
    const target = await EngineTarget.create();
    target.loseAnswers = 1; // written, then the connection drops before the acknowledgement
    const retries: number[] = [];
    const loader = createLoader({
      target,
      table: 't',
      retry: { minDelayMs: 1, maxDelayMs: 2 },
      onRetry: (_e, attempt) => retries.push(attempt),
    });
    for (let i = 0; i < 10; i++) await loader.write({ id: i });
    const s = await loader.end();
    expect(retries).toEqual([1]);
    expect(s.retries).toBe(1);
    expect(s.documents).toMatchObject({ read: 10, written: 10, rejected: 0, present: 10, missing: 0 });
    expect(await target.count()).toBe(10);
  });

  it('replayed documents (resume) that are already stored count as present, not rejected', async () => {
    const target = await EngineTarget.create();
    await target.db.createTable('t');
    await target.db.table('t').insert({ id: 1 });
    const marks: Mark[] = [];
    const loader = createLoader({ target, table: 't', onCheckpoint: (m) => void marks.push(m) });
    await loader.write({ id: 1 }, { replay: true, line: 1 });
    await loader.write({ id: 2 }, { replay: true, line: 2 });
    await loader.write({ id: 1 }, { line: 3 }); // a real duplicate in the input
    const s = await loader.end();
    expect(s.documents).toMatchObject({ read: 3, written: 2, present: 1, rejected: 1 });
    expect(marks.at(-1)).toMatchObject({ seq: 3, line: 3, written: 2, rejected: 1 });
  });

  it('write after end is refused', async () => {
    const loader = createLoader({ target: await EngineTarget.create(), table: 't' });
    await loader.end();
    await expect(loader.write({ id: 1 })).rejects.toMatchObject({ code: 'WHARF_ERR_LOADER_CLOSED' });
  });

  it('checks options', async () => {
    const target = await EngineTarget.create();
    expect(() => createLoader({ target, table: '' })).toThrow(/table/);
    expect(() => createLoader({ target, table: 't', durability: 'firm' as never })).toThrow(/durability/);
    expect(() => createLoader({ target: 'mongodb://x', table: 't' })).toThrow(/unknown scheme/);
  });
});

describe('targets', () => {
  it('parses target strings', () => {
    expect(parseTarget('embedded:/tmp/x')).toEqual({ kind: 'embedded', dir: '/tmp/x' });
    expect(parseTarget('wharf://localhost:9000')).toEqual({
      kind: 'wharf',
      host: 'localhost',
      port: 9000,
      secure: false,
    });
    expect(parseTarget('wharf://localhost')).toMatchObject({ port: 8080 });
    expect(parseTarget('rethinkdb://admin:s3cr%40t@a:1,b,[::1]:3/mydb')).toEqual({
      kind: 'rethinkdb',
      hosts: [
        { host: 'a', port: 1 },
        { host: 'b', port: 28015 },
        { host: '::1', port: 3 },
      ],
      db: 'mydb',
      user: 'admin',
      password: 's3cr@t',
    });
    expect(() => parseTarget('rethinkdb://a')).toThrow(/database/);
    expect(() => parseTarget('wharf://a:99999')).toThrow(/port/);
    expect(redact('rethinkdb://admin:pw@h/db')).toBe('rethinkdb://admin:***@h/db');
  });

  it('the embedded target loads the engine only when it opens', async () => {
    // In this workspace @wharf/engine is installed, so it loads; the one-line error when it is
    // missing is checked from an install without it (test/consumer).
    const { loadEngine, EmbeddedTarget } = await import('../src/targets/embedded.js');
    const { Database } = await loadEngine();
    expect(typeof Database.open).toBe('function');
    const target = new EmbeddedTarget('/nonexistent/never-opened');
    expect(target.url).toBe('embedded:/nonexistent/never-opened'); // constructing opens nothing
  });
});
