/**
 * The rethinkdb:// target's NDJSON payloads (packages/client/src/targets/rethinkdb/): a batch's
 * lines go out as one `r.json` array text with no document parsed in the client; a batch with bad
 * lines fails whole on the server, and only then are its lines checked, the bad ones reported by
 * line and the rest written once. Against Wharf's driver port (a server in this process) and, when
 * env RETHINKDB_BIN names a RethinkDB 2.4 binary, against a real RethinkDB started on free ports.
 */
import { join } from 'node:path';
import { type RethinkdbProc, startRethinkdb } from '@wharf/bench/rethinkdb';
import { createLoader, createTarget, type DocumentError } from '@wharf/client';
import { type ServerHandle, startServer } from '@wharf/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, tempDir, wharfImport } from './helpers.js';

const tmp = tempDir('wharf-rethinkdb-target-');
let server: ServerHandle;
let rethinkdb: RethinkdbProc | null = null;
const RETHINKDB_BIN = process.env.RETHINKDB_BIN;

beforeAll(async () => {
  server = await startTestServer(join(tmp.dir, 'server-data'));
  if (RETHINKDB_BIN) rethinkdb = await startRethinkdb(RETHINKDB_BIN, join(tmp.dir, 'rethinkdb'));
}, 120_000);

afterAll(async () => {
  await server?.close();
  await rethinkdb?.stop();
  tmp.cleanup();
});

const servers: [name: string, port: () => number, present: boolean][] = [
  ['Wharf driver port', () => server.driver!.port, true],
  ['RethinkDB (RETHINKDB_BIN)', () => rethinkdb!.driverPort, !!RETHINKDB_BIN],
];
if (!RETHINKDB_BIN)
  console.warn('rethinkdb-target.test: RETHINKDB_BIN is not set, the real RethinkDB cases are skipped');

/** Documents in test.`table`, counted through the official driver. */
async function count(port: number, table: string): Promise<number> {
  const { default: r } = await import('rethinkdb');
  const conn = await r.connect({ host: '127.0.0.1', port, db: 'test' });
  try {
    return (await r.table(table).count().run(conn)) as number;
  } finally {
    await conn.close();
  }
}

describe.each(servers)('rethinkdb:// target, NDJSON payloads, %s', (_name, port, present) => {
  const url = () => `rethinkdb://admin@127.0.0.1:${port()}/test`;
  it.skipIf(!present)('sends a batch as one array text and reports each bad line by its index', async () => {
    const target = await createTarget(url());
    expect(target.payloadFormat).toBe('ndjson');
    await target.open({ concurrency: 1 });
    try {
      await target.ensureTable('lines', 'id');
      const opts = { durability: 'soft', conflict: 'error' } as const;
      const clean = Buffer.from('{"id":1,"tags":["a","b"]}\r\n{"id":2,"s":"x\\ny"}\n{"id":3}\n');
      expect(await target.insert('lines', { format: 'ndjson', bytes: clean, count: 3 }, opts)).toMatchObject({
        inserted: 3,
        errors: 0,
      });
      // Line 1 is not JSON, line 3 is blank, line 4 not an object, line 6 a duplicate of id 1.
      const mixed = Buffer.from('{"id":4}\n{"id": \n{"id":5}\n\n[1,2]\n{"id":6}\n{"id":1}\n');
      const res = await target.insert('lines', { format: 'ndjson', bytes: mixed, count: 6 }, opts);
      expect(res).toMatchObject({ inserted: 3, errors: 3 });
      expect(res.document_errors).toEqual([
        { index: 1, message: expect.stringMatching(/^invalid JSON/) },
        { index: 4, message: 'a document must be a JSON object' },
      ]);
      expect(res.first_error).toMatch(/Duplicate primary key/);
      expect(await count(port(), 'lines')).toBe(6);
      // Valid JSON that is not an object, alone in a batch of good lines.
      const scalar = Buffer.from('{"id":7}\n5\n{"id":8}\n');
      const scalarRes = await target.insert('lines', { format: 'ndjson', bytes: scalar, count: 3 }, opts);
      expect(scalarRes).toMatchObject({ inserted: 2, errors: 1 });
      expect(await count(port(), 'lines')).toBe(8);
      // An error that is not about the documents is the caller's, not a document error.
      await expect(
        target.insert('no_such_table', { format: 'ndjson', bytes: Buffer.from('{"id":1}\n'), count: 1 }, opts),
      ).rejects.toThrow(/no_such_table/);
    } finally {
      await target.close();
    }
  });

  it.skipIf(!present)(
    'a large batch (the driver port’s bulk frame): written whole, or failed whole on a bad line',
    async () => {
      const target = await createTarget(url());
      await target.open({ concurrency: 1 });
      try {
        await target.ensureTable('large', 'id');
        const opts = { durability: 'soft', conflict: 'error' } as const;
        const lines = Array.from({ length: 3000 }, (_, i) =>
          JSON.stringify({ id: i, text: `document ${i} `.repeat(4) }),
        );
        const batch = Buffer.from(`${lines.join('\n')}\n`);
        expect(batch.length).toBeGreaterThan(128 * 1024);
        const res = await target.insert('large', { format: 'ndjson', bytes: batch, count: 3000 }, opts);
        expect(res).toMatchObject({ inserted: 3000, errors: 0 });
        // A bad line fails the whole query (nothing written), then the rest is sent alone.
        const more = lines.map((_, i) => JSON.stringify({ id: 3000 + i, text: 'x'.repeat(40) }));
        more[1234] = '{"id": oops}';
        const mixed = Buffer.from(`${more.join('\n')}\n`);
        const res2 = await target.insert('large', { format: 'ndjson', bytes: mixed, count: 3000 }, opts);
        expect(res2).toMatchObject({ inserted: 2999, errors: 1 });
        expect(res2.document_errors).toEqual([{ index: 1234, message: expect.stringMatching(/^invalid JSON/) }]);
        expect(await count(port(), 'large')).toBe(5999);
        // A missing table: the server's own error, as the official driver names it.
        const missing = target.insert('no_such_table', { format: 'ndjson', bytes: batch, count: 3000 }, opts);
        await expect(missing).rejects.toMatchObject({
          name: 'ReqlOpFailedError',
          message: expect.stringMatching(/Table `test.no_such_table` does not exist/),
        });
      } finally {
        await target.close();
      }
    },
  );

  it.skipIf(!present)('through the loader: rejects carry their input lines, everything else is written', async () => {
    const target = await createTarget(url());
    const rejects: DocumentError[] = [];
    const loader = createLoader({
      target,
      table: 'loaded',
      batchSize: 100,
      concurrency: 2,
      onDocumentError: (e) => rejects.push(e),
    });
    for (let i = 0; i < 1000; i++) {
      const line = i === 250 ? '{"id": oops}' : JSON.stringify({ id: i, v: `value ${i}`, tags: [i, `t${i}`] });
      await loader.write(Buffer.from(line), { line: i + 1 });
    }
    const summary = await loader.end();
    expect(summary.documents).toMatchObject({ read: 1000, written: 999, rejected: 1, missing: 0 });
    expect(rejects).toEqual([expect.objectContaining({ line: 251, kind: 'invalid', raw: '{"id": oops}' })]);
    expect(await count(port(), 'loaded')).toBe(999);
  });
});

describe('shards, replicas and write acks: only where a real RethinkDB honours them', () => {
  it('wharf import refuses them for other targets with a usage error (exit 2) naming the flags', async () => {
    const r = await wharfImport(
      '-',
      't',
      `embedded:${join(tmp.dir, 'embedded-data')}`,
      ['--shards', '2', '--write-acks', 'majority'],
      {
        cwd: tmp.dir,
        input: '{"id":1}\n',
      },
    );
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/--shards, --write-acks: only for a rethinkdb:\/\/ target/);
  });

  it('the loader refuses them for a target that cannot honour them, before writing anything', async () => {
    const loader = createLoader({
      target: `embedded:${join(tmp.dir, 'embedded-data-2')}`,
      table: 't',
      tableOptions: { replicas: 2 },
    });
    await expect(loader.end()).rejects.toMatchObject({ code: 'WHARF_ERR_INVALID_ARGUMENT' });
    expect(() =>
      createLoader({ target: 'rethinkdb://127.0.0.1/test', table: 't', tableOptions: { shards: 0 } }),
    ).toThrow(/shards must be an integer from 1 to 64/);
  });

  it("Wharf's driver port says it has none", async () => {
    const target = await createTarget(`rethinkdb://admin@127.0.0.1:${server.driver!.port}/test`);
    await target.open({ concurrency: 1 });
    try {
      await expect(target.ensureTable('sharded', 'id', { shards: 2 })).rejects.toThrow(
        /Wharf's driver port, which has no shards, replicas or write acks/,
      );
    } finally {
      await target.close();
    }
  });
});

describe("the target's own connections log in with SCRAM-SHA-256", () => {
  it('with the admin password, and a wrong one fails as the official driver says it (ReqlAuthError)', async () => {
    const guarded = await startServer({
      data: join(tmp.dir, 'guarded-data'),
      httpPort: 0,
      driverPort: 0,
      logger: false,
      password: 'pa:ss wörd',
    });
    try {
      const at = `127.0.0.1:${guarded.driver!.port}`;
      const good = await createTarget(`rethinkdb://admin:${encodeURIComponent('pa:ss wörd')}@${at}/test`);
      await good.open({ concurrency: 2 });
      try {
        await good.ensureTable('guarded', 'id');
        const res = await good.insert(
          'guarded',
          { format: 'ndjson', bytes: Buffer.from('{"id":1}\n{"id":2}\n'), count: 2 },
          { durability: 'hard', conflict: 'error' },
        );
        expect(res).toMatchObject({ inserted: 2, errors: 0 });
      } finally {
        await good.close();
      }
      const bad = await createTarget(`rethinkdb://admin:wrong@${at}/test`);
      await expect(bad.open({ concurrency: 1 })).rejects.toMatchObject({
        name: 'ReqlAuthError',
        message: expect.stringMatching(/Wrong password/),
      });
      await bad.close();
    } finally {
      await guarded.close();
    }
  });
});
