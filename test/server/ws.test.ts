/**
 * The ws ingest channel (docs/CONTRACTS.md §2) and the stats feed, against a real server
 * process, with @wharf/wire's codec on the client side.
 */

import { type ClientMessage, decodeServerMessage, encodeFrame, type ServerMessage } from '@wharf/wire';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { removeDir, type SpawnedServer, spawnServer } from '../helpers/spawn-server.js';

const MESSAGE_LIMIT = 1024 * 1024;

class IngestClient {
  readonly ws: WebSocket;
  readonly messages: ServerMessage[] = [];
  closeCode: number | null = null;
  #waiters: (() => void)[] = [];
  readonly opened: Promise<void>;
  readonly closed: Promise<void>;

  constructor(url: string) {
    this.ws = new WebSocket(url);
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('error', reject);
    });
    this.closed = new Promise((resolve) =>
      this.ws.once('close', (code) => {
        this.closeCode = code;
        this.#wake();
        resolve();
      }),
    );
    this.ws.on('message', (data, isBinary) => {
      expect(isBinary).toBe(false);
      this.messages.push(decodeServerMessage(data as Buffer));
      this.#wake();
    });
    this.ws.on('error', () => {});
  }

  #wake(): void {
    const w = this.#waiters;
    this.#waiters = [];
    for (const f of w) f();
  }

  send(header: ClientMessage, payload?: string | Buffer): void {
    this.ws.send(encodeFrame(header, payload));
  }

  /** Wait for the answer to message `id` (or for `id: null`). */
  async answer(id: number | null, timeoutMs = 20_000): Promise<ServerMessage> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const m = this.messages.find((x) => x.id === id);
      if (m) return m;
      if (this.closeCode !== null) throw new Error(`closed (${this.closeCode}) before an answer to ${id}`);
      if (Date.now() > deadline) throw new Error(`no answer to ${id}`);
      await new Promise<void>((resolve) => {
        this.#waiters.push(resolve);
        setTimeout(resolve, 200);
      });
    }
  }
}

describe('ws ingest and stats feed', () => {
  let server: SpawnedServer;
  let ingestUrl: string;
  const open = async (): Promise<IngestClient> => {
    const c = new IngestClient(ingestUrl);
    await c.opened;
    return c;
  };

  beforeAll(async () => {
    server = await spawnServer({ args: ['--limit', `wsMessageBytes=${MESSAGE_LIMIT}`] });
    ingestUrl = `ws://${server.http.host}:${server.http.port}/ws/ingest`;
  });

  afterAll(async () => {
    await server?.stop('SIGKILL');
    if (server) removeDir(server.dataDir);
  });

  it('ensures tables, inserts NDJSON and JSON batches with one ack each, and answers sync', async () => {
    const c = await open();
    c.send({ type: 'ensureTable', id: 1, table: 'events', primaryKey: 'id' });
    expect(await c.answer(1)).toEqual({
      type: 'ack',
      id: 1,
      result: { inserted: 0, replaced: 0, unchanged: 0, deleted: 0, skipped: 0, errors: 0 },
    });
    c.send({ type: 'ensureTable', id: 2, table: 'events' });
    expect(await c.answer(2)).toMatchObject({ type: 'ack' });

    const batches = 40;
    for (let b = 0; b < batches; b++) {
      const docs = Array.from({ length: 250 }, (_, i) => ({ id: b * 250 + i, batch: b }));
      if (b % 2 === 0)
        c.send(
          { type: 'insert', id: 100 + b, table: 'events', format: 'ndjson', durability: 'soft' },
          docs.map((d) => JSON.stringify(d)).join('\n'),
        );
      else
        c.send(
          { type: 'insert', id: 100 + b, table: 'events', format: 'json', durability: b % 3 === 0 ? 'hard' : 'soft' },
          JSON.stringify(docs),
        );
    }
    c.send({ type: 'sync', id: 999 });
    expect(await c.answer(999)).toEqual({ type: 'synced', id: 999 });
    for (let b = 0; b < batches; b++) {
      expect(c.messages.find((m) => m.id === 100 + b)).toMatchObject({
        type: 'ack',
        result: { inserted: 250, errors: 0 },
      });
    }
    expect(c.messages.filter((m) => m.type === 'ack' && m.id >= 100)).toHaveLength(batches);
    const count = (await (await fetch(`${server.url}/api/tables/events/count`)).json()) as { count: number };
    expect(count.count).toBe(batches * 250);

    c.send(
      { type: 'insert', id: 5, table: 'events', format: 'ndjson', conflict: 'replace' },
      '{"id":0,"batch":"again"}\n\n{nope}\n{"x":1}',
    );
    expect(await c.answer(5)).toMatchObject({
      type: 'ack',
      result: { replaced: 1, inserted: 1, errors: 1, document_errors: [{ index: 2 }] },
    });
    c.ws.close();
    await c.closed;
  });

  it('answers a bad message with an error naming its id and keeps the connection', async () => {
    const c = await open();
    c.send({ type: 'insert', id: 7, table: 'no_such_table', format: 'ndjson' }, '{"id":1}');
    expect(await c.answer(7)).toMatchObject({ type: 'error', id: 7, code: 'WHARF_ERR_TABLE_NOT_FOUND' });
    c.send({ type: 'insert', id: 11, table: 'bad name!', format: 'ndjson' }, '{"id":1}');
    expect(await c.answer(11)).toMatchObject({ type: 'error', id: 11, code: 'WHARF_ERR_INVALID_ARGUMENT' });
    c.send({ type: 'ensureTable', id: 12, table: 'bad name!' });
    expect(await c.answer(12)).toMatchObject({ type: 'error', id: 12, code: 'WHARF_ERR_INVALID_ARGUMENT' });
    c.send({ type: 'insert', id: 8, table: 'events', format: 'json' }, '[{"id":"x"},');
    expect(await c.answer(8)).toMatchObject({ type: 'error', id: 8, code: 'WHARF_ERR_MALFORMED_JSON' });
    const badHeader = Buffer.from('{"type":"insert","id":9,"table":"events","format":"csv"}');
    const frame = Buffer.concat([Buffer.alloc(4), badHeader]);
    frame.writeUInt32LE(badHeader.length, 0);
    c.ws.send(frame);
    expect(await c.answer(9)).toMatchObject({ type: 'error', id: 9, code: 'WHARF_ERR_WS_BAD_MESSAGE' });
    c.send({ type: 'sync', id: 10 });
    expect(await c.answer(10)).toEqual({ type: 'synced', id: 10 });
    c.ws.close();
  });

  it('closes the connection on garbage frames, text frames and oversized messages, after an error with id null', async () => {
    const garbage = await open();
    garbage.ws.send(Buffer.from([1, 2, 3]));
    expect(await garbage.answer(null)).toMatchObject({ type: 'error', code: 'WHARF_ERR_WS_BAD_FRAME' });
    await garbage.closed;
    expect(garbage.closeCode).toBe(1002);

    const text = await open();
    text.ws.send('{"type":"sync","id":1}');
    expect(await text.answer(null)).toMatchObject({ type: 'error', code: 'WHARF_ERR_WS_TEXT_FRAME' });
    await text.closed;
    expect(text.closeCode).toBe(1003);

    const big = await open();
    big.send({ type: 'insert', id: 1, table: 'events', format: 'ndjson' }, Buffer.alloc(MESSAGE_LIMIT + 10, 0x20));
    expect(await big.answer(null)).toMatchObject({ type: 'error', code: 'WHARF_ERR_WS_FRAME_TOO_LARGE' });
    await big.closed;
    expect(big.closeCode).toBe(1009);

    const ok = await open();
    ok.send({ type: 'sync', id: 1 });
    expect(await ok.answer(1)).toMatchObject({ type: 'synced' });
    ok.ws.close();
  });

  it('answers a bad WebSocket handshake with 400 and keeps serving', async () => {
    const { connect } = await import('node:net');
    const answer = await new Promise<string>((resolve, reject) => {
      const s = connect(server.http.port, server.http.host);
      let out = '';
      s.on('data', (c) => {
        out += c.toString();
        if (out.includes('\r\n\r\n')) s.destroy();
      });
      s.on('close', () => resolve(out));
      s.on('error', reject);
      s.write(
        'GET /ws/ingest HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: nope\r\n\r\n',
      );
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400/);
    const ok = await open();
    ok.send({ type: 'sync', id: 1 });
    expect(await ok.answer(1)).toMatchObject({ type: 'synced' });
    ok.ws.close();
  });

  it('keeps serving others while a client never reads its acks, and loses nothing acknowledged', async () => {
    const slow = await open();
    (slow.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    const payload = Array.from({ length: 100 }, (_, i) => JSON.stringify({ id: `s-${i}`, pad: 'q'.repeat(100) })).join(
      '\n',
    );
    slow.send({ type: 'ensureTable', id: 0, table: 'slow' });
    for (let i = 1; i <= 300; i++)
      slow.send(
        { type: 'insert', id: i, table: 'slow', format: 'ndjson', conflict: 'replace', durability: 'soft' },
        payload,
      );

    const good = await open();
    good.send({ type: 'ensureTable', id: 1, table: 'good' });
    await good.answer(1);
    for (let i = 0; i < 20; i++) {
      good.send(
        { type: 'insert', id: 100 + i, table: 'good', format: 'ndjson', durability: 'hard' },
        JSON.stringify({ id: i }),
      );
      expect(await good.answer(100 + i)).toMatchObject({ type: 'ack', result: { inserted: 1 } });
    }
    slow.ws.terminate();
    good.send({ type: 'sync', id: 2 });
    await good.answer(2);
    good.ws.close();
    const count = (await (await fetch(`${server.url}/api/tables/good/count`)).json()) as { count: number };
    expect(count.count).toBe(20);
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
  });

  it('streams stats about once a second on /ws/stats', async () => {
    const ws = new WebSocket(`ws://${server.http.host}:${server.http.port}/ws/stats`);
    const snapshots: { time: number; engine: Record<string, unknown>; server: Record<string, unknown> }[] = [];
    await new Promise<void>((resolve, reject) => {
      ws.on('message', (data) => {
        snapshots.push(JSON.parse(String(data)));
        if (snapshots.length === 3) resolve();
      });
      ws.on('error', reject);
    });
    ws.close();
    expect(snapshots[0]?.engine).toHaveProperty('fdatasyncs');
    expect(snapshots[2]?.server).toHaveProperty('wsBatches');
    expect((snapshots[2]?.time as number) - (snapshots[1]?.time as number)).toBeGreaterThan(0);
  });
});
