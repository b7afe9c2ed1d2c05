/**
 * GET /ws/ingest: the wharf:// fast path (docs/CONTRACTS.md §2). Each binary message is one
 * command; insert payloads go to the engine's bulk path unparsed (insertNdjson/insertJsonArray),
 * one ack per batch, in completion order. A sync is answered once every command received before
 * it on this connection has settled and the engine has synced, so it covers everything acked.
 *
 * Flow control: past `wsInflightBatches` batches or `wsInflightBytes` payload bytes in flight,
 * the server stops reading from the socket until half of them are acknowledged.
 */

import type { Table } from '@wharf/engine';
import {
  type ClientMessage,
  closeCodes,
  decodeFrame,
  encodeServerMessage,
  type ServerMessage,
  type WireError,
  type WriteResult,
} from '@wharf/wire';
import type { FastifyInstance } from 'fastify';
import type { WebSocket } from 'ws';
import { describeTooDeep, findTooDeep } from '../depth.js';
import { type ErrorCode, engineCodeOf, fromEngineError, WharfServerError } from '../errors.js';
import { MAX_DOCUMENT_DEPTH } from '../limits.js';
import { checkTableName, isHiddenTable } from '../names.js';

/** WebSocket close code 1013: try again later (the server is overloaded). */
const TRY_AGAIN_LATER = 1013;

const EMPTY_RESULT: WriteResult = { inserted: 0, replaced: 0, unchanged: 0, deleted: 0, skipped: 0, errors: 0 };

export class IngestConnection {
  readonly #app: FastifyInstance;
  readonly #socket: WebSocket;
  readonly #pending = new Set<Promise<unknown>>();
  #inflightBatches = 0;
  #inflightBytes = 0;
  #paused = false;
  #closed = false;

  constructor(app: FastifyInstance, socket: WebSocket) {
    this.#app = app;
    this.#socket = socket;
  }

  get inflight(): number {
    return this.#pending.size;
  }

  /** Called for each ws message. */
  onMessage(data: Buffer, isBinary: boolean): void {
    if (this.#closed) return;
    if (!isBinary) {
      this.fatal(
        'WHARF_ERR_WS_TEXT_FRAME',
        'Text frames are not accepted on the ingest channel',
        closeCodes.unsupportedData,
      );
      return;
    }
    let header: ClientMessage;
    let payload: Buffer;
    try {
      ({ header, payload } = decodeFrame(data));
    } catch (err) {
      const e = err as WireError;
      this.#app.wharf.counters.wsErrors++;
      if (e.id === null)
        this.fatal(
          e.code,
          e.message,
          e.code === 'WHARF_ERR_WS_FRAME_TOO_LARGE' ? closeCodes.messageTooBig : closeCodes.protocolError,
        );
      else this.send({ type: 'error', id: e.id, code: e.code, message: e.message });
      return;
    }
    if (this.#app.wharf.closing) {
      this.send({
        type: 'error',
        id: header.id,
        code: 'WHARF_ERR_SHUTTING_DOWN',
        message: 'The server is shutting down',
      });
      return;
    }
    this.#run(header, payload);
  }

  #run(header: ClientMessage, payload: Buffer): void {
    const app = this.#app;
    let work: Promise<ServerMessage>;
    switch (header.type) {
      case 'ensureTable':
        try {
          checkTableName(header.table);
        } catch (err) {
          work = Promise.reject(err);
          break;
        }
        work = app.db.createTable(header.table, header.primaryKey ? { primaryKey: header.primaryKey } : {}).then(
          () => ({ type: 'ack', id: header.id, result: { ...EMPTY_RESULT } }),
          (err: unknown) => {
            if (engineCodeOf(err) === 'WHARF_ERR_TABLE_EXISTS')
              return { type: 'ack', id: header.id, result: { ...EMPTY_RESULT } };
            throw err;
          },
        );
        break;
      case 'insert': {
        const opts = {
          ...(header.durability ? { durability: header.durability } : {}),
          ...(header.conflict ? { conflict: header.conflict } : {}),
        };
        let table: Table;
        try {
          if (isHiddenTable(header.table)) throw new WharfServerError('WHARF_ERR_TABLE_NOT_FOUND', [header.table]);
          table = app.db.table(header.table); // checks the name synchronously
        } catch (err) {
          work = Promise.reject(err);
          break;
        }
        const tooDeep = findTooDeep(payload, MAX_DOCUMENT_DEPTH, header.format === 'ndjson');
        if (tooDeep !== null) {
          work = Promise.reject(
            new WharfServerError('WHARF_ERR_DOCUMENT_TOO_DEEP', [describeTooDeep(tooDeep), MAX_DOCUMENT_DEPTH]),
          );
          break;
        }
        const size = payload.length;
        this.#inflightBatches++;
        this.#inflightBytes += size;
        this.#flowControl();
        const op =
          header.format === 'ndjson' ? table.insertNdjson(payload, opts) : table.insertJsonArray(payload, opts);
        work = app.wharf.writes.track(op).then((result) => {
          app.wharf.counters.wsBatches++;
          app.wharf.counters.wsDocuments += result.inserted + result.replaced;
          app.wharf.counters.documentsInserted += result.inserted;
          return { type: 'ack', id: header.id, result } as ServerMessage;
        });
        work
          .finally(() => {
            this.#inflightBatches--;
            this.#inflightBytes -= size;
            this.#flowControl();
          })
          .catch(() => {});
        break;
      }
      case 'sync': {
        const before = [...this.#pending];
        work = Promise.allSettled(before)
          .then(() => app.db.sync())
          .then(() => ({ type: 'synced', id: header.id }) as ServerMessage);
        break;
      }
    }
    const tableName = header.type === 'sync' ? undefined : header.table;
    const answered = work.then(
      (msg) => this.send(msg),
      (err: unknown) => {
        app.wharf.counters.wsErrors++;
        const e = fromEngineError(err, { table: tableName });
        this.send({ type: 'error', id: header.id, code: e.code, message: e.message });
      },
    );
    this.#pending.add(answered);
    answered.finally(() => this.#pending.delete(answered)).catch(() => {});
  }

  #flowControl(): void {
    const { wsInflightBatches, wsInflightBytes } = this.#app.wharf.options.limits;
    if (!this.#paused && (this.#inflightBatches >= wsInflightBatches || this.#inflightBytes >= wsInflightBytes)) {
      this.#paused = true;
      this.#socket.pause();
    } else if (
      this.#paused &&
      this.#inflightBatches <= wsInflightBatches / 2 &&
      this.#inflightBytes <= wsInflightBytes / 2
    ) {
      this.#paused = false;
      this.#socket.resume();
    }
  }

  send(msg: ServerMessage): void {
    if (this.#closed || this.#socket.readyState !== this.#socket.OPEN) return;
    if (this.#socket.bufferedAmount > this.#app.wharf.options.limits.outboundBufferBytes) {
      const e = new WharfServerError('WHARF_ERR_SLOW_CLIENT', [this.#socket.bufferedAmount]);
      this.#app.log.warn({ code: e.code }, e.message);
      this.#closed = true;
      this.#socket.terminate();
      return;
    }
    this.#socket.send(encodeServerMessage(msg));
  }

  /** Send an error with id null, then close: the connection is bad. */
  fatal(code: ErrorCode | string, message: string, closeCode: number): void {
    if (this.#closed) return;
    this.send({ type: 'error', id: null, code, message });
    this.#closed = true;
    this.#socket.close(closeCode, code);
  }

  /** Wait for every command received so far to be answered. */
  async drain(): Promise<void> {
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
  }

  onClose(): void {
    this.#closed = true;
  }
}

export interface IngestRegistry {
  connections: Set<IngestConnection>;
}

export default async function ingestRoute(
  app: FastifyInstance,
  { registry }: { registry: IngestRegistry },
): Promise<void> {
  app.get(
    '/ws/ingest',
    {
      websocket: true,
      schema: {
        tags: ['ws'],
        summary: 'WebSocket ingest channel (wharf://): binary command frames, JSON text answers (docs/CONTRACTS.md §2)',
        response: { 101: { type: 'null', description: 'Switching Protocols' } },
      },
    },
    (socket, request) => {
      const state = app.wharf;
      if (state.closing) {
        socket.close(closeCodes.goingAway, 'WHARF_ERR_SHUTTING_DOWN');
        return;
      }
      const conn = new IngestConnection(app, socket);
      registry.connections.add(conn);
      state.counters.wsConnections++;
      state.counters.wsConnectionsTotal++;

      // ws closes an over-limit message with 1009 by itself, before our code sees it. Send the
      // protocol's error message first: ws calls close(1009) while the socket is still open.
      const close = socket.close.bind(socket);
      socket.close = ((code?: number, reason?: string | Buffer) => {
        if (code === closeCodes.messageTooBig && reason === undefined && socket.readyState === socket.OPEN) {
          const limit = state.options.limits.wsMessageBytes;
          socket.send(
            encodeServerMessage({
              type: 'error',
              id: null,
              code: 'WHARF_ERR_WS_FRAME_TOO_LARGE',
              message: `message exceeds the limit of ${limit} bytes`,
            }),
          );
          state.counters.wsErrors++;
          return close(code, 'WHARF_ERR_WS_FRAME_TOO_LARGE');
        }
        return close(code, reason);
      }) as typeof socket.close;

      // Bytes of a message still arriving count against bufferedBodyBytes, with HTTP bodies: ws
      // holds a message's fragments until it is complete, so unfinished messages on many
      // connections would otherwise grow the process without bound. Past the budget the
      // connection gets WHARF_ERR_OVERLOADED and is closed (1013, try again later).
      const raw = request.socket;
      let held = 0;
      const releaseHeld = (): void => {
        state.bodyBytes.release(held);
        held = 0;
      };
      const onRawData = (chunk: Buffer): void => {
        if (state.bodyBytes.take(chunk.length)) {
          held += chunk.length;
          return;
        }
        raw.off('data', onRawData);
        const e = new WharfServerError('WHARF_ERR_OVERLOADED', [state.bodyBytes.used]);
        request.log.warn({ code: e.code, remote: request.ip }, e.message);
        conn.fatal(e.code, e.message, TRY_AGAIN_LATER);
        releaseHeld();
        raw.destroySoon();
      };
      raw.on('data', onRawData);
      socket.on('message', (data, isBinary) => {
        releaseHeld();
        conn.onMessage(data as Buffer, isBinary);
      });
      socket.on('error', (err) => request.log.info({ err: err.message }, 'ws ingest socket error'));
      socket.on('close', () => {
        raw.off('data', onRawData);
        releaseHeld();
        conn.onClose();
        registry.connections.delete(conn);
        state.counters.wsConnections--;
      });
    },
  );
}

export { EMPTY_RESULT };
