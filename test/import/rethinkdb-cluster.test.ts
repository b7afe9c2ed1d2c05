/**
 * The rethinkdb:// target against a real 3-node RethinkDB cluster on 127.0.0.1 (env
 * RETHINKDB_BIN names a RethinkDB 2.4 binary; skipped with a message otherwise): a table created
 * sharded and replicated by the loader holds exactly the input; and a node killed with SIGKILL
 * while a batch is in flight to it neither loses nor duplicates a document nor reports a reject:
 * its connections move to the other nodes and the batch whose outcome was unknown is resolved by
 * reading back its keys (packages/client/src/targets/rethinkdb/index.ts).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { createLoader, createTarget, type DocumentError } from '@wharf/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../helpers/until.js';
import { tempDir } from './helpers.js';

const RETHINKDB_BIN = process.env.RETHINKDB_BIN;
if (!RETHINKDB_BIN)
  console.warn(
    'rethinkdb-cluster.test: RETHINKDB_BIN is not set (a RethinkDB 2.4 binary), the cluster tests are skipped',
  );

interface Node {
  name: string;
  proc: ChildProcess;
  driverPort: number;
  exited: Promise<unknown>;
}

const tmp = tempDir('wharf-rethinkdb-cluster-');
const nodes: Node[] = [];

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/** Starts one node (joining `join`, a cluster port, when given); resolves once it says it is ready. */
async function startNode(name: string, join_?: number): Promise<{ node: Node; clusterPort: number }> {
  const [driverPort, clusterPort] = [await freePort(), await freePort()];
  const dir = join(tmp.dir, name);
  mkdirSync(tmp.dir, { recursive: true });
  const args = ['--bind', '127.0.0.1', '--driver-port', String(driverPort), '--cluster-port', String(clusterPort)];
  args.push('--no-http-admin', '--server-name', name, '--directory', dir);
  if (join_ !== undefined) args.push('--join', `127.0.0.1:${join_}`);
  const proc = spawn(RETHINKDB_BIN!, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const node: Node = { name, proc, driverPort, exited: once(proc, 'exit') };
  nodes.push(node);
  let out = '';
  const onData = (d: Buffer) => (out += d.toString());
  proc.stdout!.on('data', onData);
  proc.stderr!.on('data', onData);
  let exited = false;
  void node.exited.then(() => (exited = true));
  await until(`RethinkDB node ${name} ready`, () => {
    if (exited) throw new Error(`RethinkDB node ${name} exited:\n${out.slice(-2000)}`);
    return out.includes('Server ready');
  });
  return { node, clusterPort };
}

async function driver(port: number) {
  const { default: r } = await import('rethinkdb');
  return { r, conn: await r.connect({ host: '127.0.0.1', port }) };
}

beforeAll(async () => {
  if (!RETHINKDB_BIN) return;
  const first = await startNode('n0');
  await Promise.all([startNode('n1', first.clusterPort), startNode('n2', first.clusterPort)]);
  const { r, conn } = await driver(first.node.driverPort);
  try {
    await until(
      'the 3 nodes see each other',
      async () => {
        return ((await r.db('rethinkdb').table('server_status').count().run(conn)) as number) === 3;
      },
      100,
    );
  } finally {
    await conn.close();
  }
}, 120_000);

afterAll(async () => {
  for (const n of nodes) {
    if (n.proc.exitCode === null && n.proc.signalCode === null) n.proc.kill('SIGKILL');
    await n.exited;
  }
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

const url = (order: Node[]) => `rethinkdb://${order.map((n) => `127.0.0.1:${n.driverPort}`).join(',')}/test`;

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
    const victim = nodes.find((n) => !primaries.has(n.name))!;
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
