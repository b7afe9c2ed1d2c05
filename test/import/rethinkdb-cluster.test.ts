/**
 * The rethinkdb:// target against a real 3-node RethinkDB cluster on 127.0.0.1 (env
 * RETHINKDB_BIN names a RethinkDB 2.4 binary; skipped with a message otherwise): a table created
 * sharded and replicated by the loader holds exactly the input; and a node killed with SIGKILL
 * while a batch is in flight to it neither loses nor duplicates a document nor reports a reject:
 * its connections move to the other nodes and the batch whose outcome was unknown is resolved by
 * reading back its keys (packages/client/src/targets/rethinkdb/index.ts).
 */
import { join } from 'node:path';
import { type RethinkdbProc, startRethinkdbCluster } from '@wharf/bench/rethinkdb';
import { createLoader, createTarget, type DocumentError } from '@wharf/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from './helpers.js';

const RETHINKDB_BIN = process.env.RETHINKDB_BIN;
if (!RETHINKDB_BIN)
  console.warn(
    'rethinkdb-cluster.test: RETHINKDB_BIN is not set (a RethinkDB 2.4 binary), the cluster tests are skipped',
  );

const tmp = tempDir('wharf-rethinkdb-cluster-');
let nodes: RethinkdbProc[] = [];

async function driver(port: number) {
  const { default: r } = await import('rethinkdb');
  return { r, conn: await r.connect({ host: '127.0.0.1', port }) };
}

beforeAll(async () => {
  if (RETHINKDB_BIN) nodes = await startRethinkdbCluster(RETHINKDB_BIN, join(tmp.dir, 'rethinkdb'), 3);
}, 120_000);

afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop()));
  tmp.cleanup();
});

/** `count` documents with ids 0…count-1, as NDJSON lines. */
function docs(count: number): string[] {
  return Array.from({ length: count }, (_, i) =>
    JSON.stringify({ id: i, name: `doc ${i}`, tags: [`t${i % 7}`, i % 3 === 0], nested: { v: i * 1.5 } }),
  );
}

/** Every document of test.`table`, ordered by id, read through the node on `port`. */
async function contents(port: number, table: string): Promise<unknown[]> {
  const { r, conn } = await driver(port);
  try {
    const cursor = await r.db('test').table(table).orderBy({ index: 'id' }).run(conn);
    return await cursor.toArray();
  } finally {
    await conn.close();
  }
}

async function tableConfig(port: number, table: string) {
  const { r, conn } = await driver(port);
  try {
    // The table's config() is missing from the driver's published types.
    const t = r.db('test').table(table) as unknown as { config(): { run(c: typeof conn): Promise<unknown> } };
    return (await t.config().run(conn)) as {
      shards: { primary_replica: string; replicas: string[] }[];
      write_acks: string;
    };
  } finally {
    await conn.close();
  }
}

const url = (order: RethinkdbProc[]) => `rethinkdb://${order.map((n) => `127.0.0.1:${n.driverPort}`).join(',')}/test`;

describe.skipIf(!RETHINKDB_BIN)('rethinkdb:// to a 3-node RethinkDB cluster', () => {
  it('creates the table sharded and replicated, and loads exactly the input', async () => {
    const input = docs(20_000);
    const rejects: DocumentError[] = [];
    const loader = createLoader({
      target: url(nodes),
      table: 'sharded',
      tableOptions: { shards: 3, replicas: 2, writeAcks: 'majority' },
      batchSize: 1000,
      onDocumentError: (e) => rejects.push(e),
    });
    for (const line of input) await loader.write(line);
    const summary = await loader.end();
    expect(summary.documents).toEqual({ read: 20_000, written: 20_000, rejected: 0, present: 0, missing: 0 });
    expect(rejects).toEqual([]);
    expect(summary.failover).toMatchObject({ nodesFailed: [], batchesResolved: 0 });
    const config = await tableConfig(nodes[0]!.driverPort, 'sharded');
    expect(config.shards).toHaveLength(3);
    for (const shard of config.shards) expect(shard.replicas).toHaveLength(2);
    expect(config.write_acks).toBe('majority');
    expect(await contents(nodes[1]!.driverPort, 'sharded')).toEqual(input.map((l) => JSON.parse(l)));
  });

  it('a node killed with SIGKILL mid-import: no loss, no duplicate, no reject, and the report says so', async () => {
    // Shards 2, replicas 3, write acks majority: with one of three nodes gone every shard still
    // has a majority of its replicas, and a node that is primary for no shard can die without
    // an election; the table stays writable.
    const setup = await createTarget(url(nodes));
    await setup.open({ concurrency: 1 });
    try {
      await setup.ensureTable('survivor', 'id', { shards: 2, replicas: 3, writeAcks: 'majority' });
    } finally {
      await setup.close();
    }
    const primaries = new Set(
      (await tableConfig(nodes[0]!.driverPort, 'survivor')).shards.map((s) => s.primary_replica),
    );
    const victim = nodes.find((n) => !primaries.has(n.name as string))!;
    expect(victim).toBeDefined();
    // The victim first: with one connection per host, batches 1, 4, 7, … go to it.
    const order = [victim, ...nodes.filter((n) => n !== victim)];

    const input = docs(30_000);
    const rejects: DocumentError[] = [];
    let dispatched = 0;
    const loader = createLoader({
      target: url(order),
      table: 'survivor',
      batchSize: 500,
      concurrency: 3,
      adaptiveConcurrency: false,
      onDocumentError: (e) => rejects.push(e),
      onDispatch: () => {
        // The 10th batch goes to the victim's connection: kill the victim once its frame is
        // written (the insert writes it in this turn of the event loop), so it dies with a batch
        // in flight whose outcome the loader cannot know.
        if (++dispatched === 10) setImmediate(() => victim.proc.kill('SIGKILL'));
      },
    });
    for (const line of input) await loader.write(line);
    const summary = await loader.end();
    await victim.exited;

    expect(summary.documents).toEqual({ read: 30_000, written: 30_000, rejected: 0, present: 0, missing: 0 });
    expect(rejects).toEqual([]);
    const failover = summary.failover!;
    expect(failover.nodesFailed.map((n) => n.host)).toEqual([`127.0.0.1:${victim.driverPort}`]);
    expect(failover.connectionsMoved).toBeGreaterThanOrEqual(1);
    expect(failover.batchesResolved).toBeGreaterThanOrEqual(1);
    expect(failover.unkeyedResent).toBe(0);
    const survivor = order[1]!;
    expect(await contents(survivor.driverPort, 'survivor')).toEqual(input.map((l) => JSON.parse(l)));
  });
});
