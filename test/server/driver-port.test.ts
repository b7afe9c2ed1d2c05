/**
 * Bad input on the RethinkDB driver port, against a real server process: garbage bytes, bad
 * handshakes, malformed and oversized query frames, a client that never reads. Each gets a clear
 * error and is closed or answered; the server keeps serving everyone else and loses nothing it
 * acknowledged.
 */

import rethinkdb from 'rethinkdb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeDir, type SpawnedServer, spawnServer } from '../helpers/spawn-server.js';
import { openSocket, rawConnect, V1_0 } from './raw-driver.js';

const r: any = rethinkdb;
const QUERY_LIMIT = 1024 * 1024;

describe('driver port: bad input', () => {
  let server: SpawnedServer;

  beforeAll(async () => {
    server = await spawnServer({
      args: ['--limit', `driverQueryBytes=${QUERY_LIMIT}`, '--limit', 'outboundBufferBytes=8388608'],
    });
    const conn = await rawConnect(server.driver.port);
    const res = await conn.query(1n, [1, [60, ['big']]]);
    expect(res.body.t).toBe(1);
    // ~1 KB documents: a first batch is a quarter of 1 MiB.
    for (let base = 0; base < 3000; base += 500) {
      const docs = Array.from({ length: 500 }, (_, i) => ({ id: base + i, pad: 'p'.repeat(1000) }));
      const ins = await conn.query(BigInt(2 + base), [
        1,
        [
          56,
          [
            [15, ['big']],
            [98, [JSON.stringify(docs)]],
          ],
        ],
      ]);
      expect(ins.body.r[0]).toMatchObject({ inserted: 500 });
    }
    conn.close();
  });

  afterAll(async () => {
    await server?.stop('SIGKILL');
    if (server) removeDir(server.dataDir);
  });

  async function stillServing(): Promise<void> {
    const c = await r.connect({ host: '127.0.0.1', port: server.driver.port });
    expect(await r.table('big').count().run(c)).toBe(3000);
    await c.close();
  }

  it('answers garbage bytes with the plain-text version error and closes', async () => {
    const { socket, reader } = await openSocket(server.driver.port);
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    const text = await reader.untilNul();
    expect(text).toMatch(/^ERROR: Received an unsupported protocol version/);
    await reader.closed();
    await stillServing();
  });

  it('answers a handshake message that is not JSON with error_code 8 and closes', async () => {
    const { socket, reader } = await openSocket(server.driver.port);
    socket.write(Buffer.concat([V1_0, Buffer.from('{not json'), Buffer.from([0])]));
    expect(JSON.parse((await reader.untilNul()) as string)).toMatchObject({ success: true, max_protocol_version: 0 });
    expect(JSON.parse((await reader.untilNul()) as string)).toEqual({
      success: false,
      error: 'Invalid JSON object.',
      error_code: 8,
    });
    await reader.closed();
    await stillServing();
  });

  it('answers a wrong protocol_version, a bad SCRAM message and an oversized handshake message with their codes', async () => {
    const cases: [Buffer, number][] = [
      [
        Buffer.from(
          JSON.stringify({
            protocol_version: 1,
            authentication_method: 'SCRAM-SHA-256',
            authentication: 'n,,n=admin,r=x',
          }),
        ),
        2,
      ],
      [Buffer.from(JSON.stringify({ protocol_version: 0, authentication_method: 'PLAIN', authentication: 'x' })), 4],
      [
        Buffer.from(
          JSON.stringify({
            protocol_version: 0,
            authentication_method: 'SCRAM-SHA-256',
            authentication: 'n,,n=admin,m=ext,r=x',
          }),
        ),
        11,
      ],
      [
        Buffer.from(
          JSON.stringify({
            protocol_version: 0,
            authentication_method: 'SCRAM-SHA-256',
            authentication: 'p=tls,,n=admin,r=x',
          }),
        ),
        15,
      ],
      [Buffer.alloc(5000, 0x61), 7],
    ];
    for (const [message, code] of cases) {
      const { socket, reader } = await openSocket(server.driver.port);
      socket.write(Buffer.concat([V1_0, message, code === 7 ? Buffer.alloc(0) : Buffer.from([0])]));
      await reader.untilNul();
      const reply = JSON.parse((await reader.untilNul()) as string) as { success: boolean; error_code: number };
      expect(reply.success).toBe(false);
      expect(reply.error_code).toBe(code);
      await reader.closed();
    }
    await stillServing();
  });

  it('answers malformed query frames with CLIENT_ERROR and keeps the connection usable', async () => {
    const conn = await rawConnect(server.driver.port);
    conn.send(5n, '[1, [15, ["big"]');
    expect((await conn.response())?.body).toEqual({
      t: 16,
      r: ['Client is buggy (failed to deserialize query).'],
      b: [],
    });
    expect((await conn.query(6n, { q: 1 })).body).toMatchObject({
      t: 16,
      r: ['Server could not parse query: Expected a query to be an array, but found OBJECT.'],
    });
    expect((await conn.query(7n, [9])).body).toMatchObject({
      t: 16,
      r: ['Server could not parse query: Unrecognized QueryType: 9.'],
    });
    expect((await conn.query(8n, [1, [15, ['big'], {}, 3]])).body).toMatchObject({ t: 17, b: [] });
    expect((await conn.query(9n, [1, [9999, []]])).body).toMatchObject({ t: 17, r: ['Unrecognized TermType: 9999.'] });
    // CONTINUE and STOP on tokens that are not open get an empty SUCCESS_SEQUENCE.
    expect((await conn.query(10n, [2])).body).toEqual({ t: 2, r: [], n: [] });
    expect((await conn.query(11n, [3])).body).toEqual({ t: 2, r: [], n: [] });
    const ok = await conn.query(12n, [1, [43, [[15, ['big']]]]]);
    expect(ok).toEqual({ token: 12n, body: { t: 1, r: [3000] } });
    conn.close();
  });

  it('closes a connection that announces an oversized query frame, after a CLIENT_ERROR', async () => {
    const conn = await rawConnect(server.driver.port);
    const header = Buffer.alloc(12);
    header.writeBigInt64LE(3n, 0);
    header.writeUInt32LE(QUERY_LIMIT + 1, 8);
    conn.socket.write(header);
    const res = await conn.response();
    expect(res?.token).toBe(3n);
    expect(res?.body).toEqual({
      t: 16,
      r: [`Query size (${QUERY_LIMIT + 1}) greater than maximum (${QUERY_LIMIT}).`],
      b: [],
    });
    await conn.reader.closed();
    await stillServing();
  });

  it('keeps serving others while a client never reads its responses, and loses no acknowledged write', async () => {
    const slow = await rawConnect(server.driver.port);
    slow.socket.pause(); // never read
    const start = JSON.stringify([1, [15, ['big']]]);
    for (let i = 0; i < 200; i++) slow.send(BigInt(100 + i), start);

    const good = await r.connect({ host: '127.0.0.1', port: server.driver.port });
    await r.tableCreate('acked').run(good);
    for (let i = 0; i < 100; i++) {
      expect((await r.table('acked').insert({ id: i }, { durability: 'hard' }).run(good)).inserted).toBe(1);
    }
    expect(await r.table('acked').count().run(good)).toBe(100);
    expect((await (await r.table('big').run(good)).toArray()).length).toBe(3000);
    await good.close();

    slow.close();
    await stillServing();
    const res = await fetch(`${server.url}/api/tables/acked/count`);
    expect(await res.json()).toEqual({ count: 100 });
  });
});
