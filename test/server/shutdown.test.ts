/**
 * SIGTERM while clients write on every port: the server stops accepting, answers what it took,
 * syncs and exits 0; a restart on the same data directory sees every write that was
 * acknowledged (soft ones too: shutdown syncs).
 */

import { decodeServerMessage, encodeFrame } from '@wharf/wire';
import rethinkdb from 'rethinkdb';
import { afterAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { makeTempDir, removeDir, spawnServer } from '../helpers/spawn-server.js';
import { until } from '../helpers/until.js';

const r: any = rethinkdb;

describe('graceful shutdown', () => {
  const dataDir = makeTempDir();
  afterAll(() => removeDir(dataDir));

  it('exits 0 on SIGTERM under load, and a restart sees every acknowledged write', async () => {
    const first = await spawnServer({ dataDir });
    const setup = await r.connect({ host: '127.0.0.1', port: first.driver.port });
    await r.tableCreate('drv').run(setup);
    await r.tableCreate('wsin').run(setup);
    await r.tableCreate('http').run(setup);
    await setup.close();

    const acked = { drv: [] as string[], ws: [] as string[], http: [] as string[] };
    let stopLoad = false;

    // Driver writers: hard and soft inserts on four connections.
    const driverLoop = async (n: number): Promise<void> => {
      const c = await r.connect({ host: '127.0.0.1', port: first.driver.port });
      c.on('error', () => {});
      for (let i = 0; !stopLoad; i++) {
        const id = `c${n}-${i}`;
        try {
          const res = await r
            .table('drv')
            .insert({ id }, { durability: i % 2 ? 'soft' : 'hard' })
            .run(c);
          if (res.inserted === 1) acked.drv.push(id);
        } catch {
          break;
        }
      }
    };

    // ws writer: soft batches of 50.
    const wsLoop = async (): Promise<void> => {
      const ws = new WebSocket(`ws://127.0.0.1:${first.http.port}/ws/ingest`);
      await new Promise((resolve, reject) => {
        ws.once('open', resolve);
        ws.once('error', reject);
      });
      ws.on('error', () => {});
      const pending = new Map<number, string[]>();
      ws.on('message', (data) => {
        const m = decodeServerMessage(data as Buffer);
        if (m.type === 'ack' && m.result.inserted === 50) acked.ws.push(...(pending.get(m.id) ?? []));
      });
      const closed = new Promise((resolve) => ws.once('close', resolve));
      for (let b = 0; !stopLoad && ws.readyState === WebSocket.OPEN; b++) {
        const ids = Array.from({ length: 50 }, (_, i) => `w${b}-${i}`);
        pending.set(b, ids);
        ws.send(
          encodeFrame(
            { type: 'insert', id: b, table: 'wsin', format: 'ndjson', durability: 'soft' },
            ids.map((id) => JSON.stringify({ id })).join('\n'),
          ),
        );
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      if (ws.readyState === WebSocket.OPEN) ws.close();
      await closed;
    };

    // HTTP writer: soft single-document batches.
    const httpLoop = async (): Promise<void> => {
      for (let i = 0; !stopLoad; i++) {
        try {
          const res = await fetch(`${first.url}/api/tables/http/documents?durability=soft`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify([{ id: `h${i}` }]),
          });
          if (res.status === 200 && ((await res.json()) as { inserted: number }).inserted === 1)
            acked.http.push(`h${i}`);
          else if (res.status >= 500) break;
        } catch {
          break;
        }
      }
    };

    const load = Promise.all([driverLoop(0), driverLoop(1), driverLoop(2), driverLoop(3), wsLoop(), httpLoop()]);
    // The SIGTERM lands under load: once every door has had writes acknowledged.
    await until(
      '400 driver, 500 ws and 50 HTTP writes acknowledged',
      () => acked.drv.length >= 400 && acked.ws.length >= 500 && acked.http.length >= 50,
      20,
    );
    const exitCode = await first.stop('SIGTERM');
    stopLoad = true;
    await load;
    expect(exitCode).toBe(0);
    expect(first.output.join('\n')).toMatch(/database synced and closed/);

    const second = await spawnServer({ dataDir });
    try {
      const c = await r.connect({ host: '127.0.0.1', port: second.driver.port });
      for (const [table, ids] of [
        ['drv', acked.drv],
        ['wsin', acked.ws],
        ['http', acked.http],
      ] as const) {
        const present = new Set<string>(
          (await (await r.table(table).run(c)).toArray()).map((d: { id: string }) => d.id),
        );
        const missing = ids.filter((id) => !present.has(id));
        expect(missing, `${table}: acknowledged but missing after restart`).toEqual([]);
      }
      await c.close();
    } finally {
      expect(await second.stop('SIGTERM')).toBe(0);
    }
  });
});
