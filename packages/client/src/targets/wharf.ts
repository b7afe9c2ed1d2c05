/**
 * `wharf://host:port`: a Wharf server's ws ingest path (docs/CONTRACTS.md §2), with the frame
 * codec of @wharf/wire. Requests are multiplexed over one connection by id; acks may come back
 * out of order. A lost connection fails every request in flight with a transient error (the
 * loader retries those batches, as re-sends) and the next request reconnects.
 */

import {
  type ClientMessage,
  closeCodes,
  decodeServerMessage,
  encodeFrameParts,
  errorCatalogue,
  isErrorCode,
  limits,
  paths,
  type ServerMessage,
} from '@wharf/wire';
import type WebSocket from 'ws';
import { LoaderError } from '../errors.js';
import type { IndexSpec, WriteResult } from '../types.js';
import type { InsertOptions, Payload, Target } from './target.js';

type Pending = { resolve: (m: ServerMessage) => void; reject: (e: Error) => void };

export class WharfTarget implements Target {
  readonly kind = 'wharf' as const;
  readonly payloadFormat = 'ndjson' as const;
  /** One message holds a header too; keep a margin under the protocol's limit. */
  readonly maxPayloadBytes = limits.maxMessageBytes - limits.maxHeaderBytes;
  readonly url: string;
  #endpoint: string;
  #ws: WebSocket | null = null;
  #connecting: Promise<WebSocket> | null = null;
  /** Base URL of the server's HTTP API (same host and port as the ws ingest path). */
  #http: string;
  #pending = new Map<number, Pending>();
  #nextId = 1;
  #closed = false;
  /** `Authorization` for the server's admin password, when one is given. */
  #auth: Record<string, string>;

  constructor(host: string, port: number, secure = false, password?: string) {
    this.#auth = password === undefined ? {} : { authorization: `Bearer ${password}` };
    const h = host.includes(':') ? `[${host}]` : host;
    this.url = `${secure ? 'wharfs' : 'wharf'}://${h}:${port}`;
    this.#endpoint = `${secure ? 'wss' : 'ws'}://${h}:${port}${paths.ingest}`;
    this.#http = `${secure ? 'https' : 'http'}://${h}:${port}`;
  }

  /** One HTTP API request; an error answer becomes a LoaderError with the server's code. */
  async #api(method: string, path: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
    let res: Response;
    try {
      res = await fetch(`${this.#http}${path}`, {
        method,
        headers: body === undefined ? { ...this.#auth } : { ...this.#auth, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      throw new LoaderError('WHARF_ERR_TRANSPORT', `${method} ${this.#http}${path} failed: ${(err as Error).message}`, {
        cause: err,
      });
    }
    const text = await res.text();
    let json: Record<string, unknown> = {};
    try {
      json = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    } catch {
      // not JSON: reported below if the status is an error
    }
    if (res.status >= 400) {
      const code = typeof json.code === 'string' ? json.code : 'WHARF_ERR_TARGET';
      const message = typeof json.message === 'string' ? json.message : text.slice(0, 300);
      throw new LoaderError(code, `${this.url}: ${method} ${path}: ${res.status} ${message}`);
    }
    return { status: res.status, json };
  }

  async createIndex(table: string, spec: IndexSpec): Promise<{ existed: boolean }> {
    try {
      await this.#api('POST', `/api/tables/${encodeURIComponent(table)}/indexes`, {
        name: spec.name,
        field: spec.field,
        multi: spec.multi === true,
      });
      return { existed: false };
    } catch (err) {
      if ((err as LoaderError).code === 'WHARF_ERR_INDEX_EXISTS') return { existed: true };
      throw err;
    }
  }

  async waitIndex(table: string, name: string): Promise<void> {
    await this.#api('POST', `/api/tables/${encodeURIComponent(table)}/indexes/wait`, { names: [name] });
  }

  async open(): Promise<void> {
    await this.#connect();
  }

  #connect(): Promise<WebSocket> {
    if (this.#closed) return Promise.reject(new LoaderError('WHARF_ERR_LOADER_CLOSED', 'target closed'));
    if (this.#ws) return Promise.resolve(this.#ws);
    if (this.#connecting) return this.#connecting;
    this.#connecting = (async () => {
      const { default: WS } = await import('ws');
      // A zero masking key: ws then neither masks our frames nor the server unmasks them, which
      // otherwise costs both ends a byte-by-byte XOR of every document (a third of the server's
      // CPU in a bulk load). Masking protects browsers' traffic against caching proxies that
      // misread WebSocket frames; this is a Node client on a direct connection.
      const ws = new WS(this.#endpoint, {
        maxPayload: limits.maxMessageBytes,
        perMessageDeflate: false,
        generateMask: zeroMask,
        headers: this.#auth,
      });
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        // The server refused the upgrade (401 without the password, 403, 429…): its catalog error, not
        // a transport failure to retry.
        ws.once('unexpected-response', (_req, res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => {
            if (text.length < 4096) text += c;
          });
          res.on('end', () => {
            let code = `HTTP_${res.statusCode}`;
            let message = text.slice(0, 300);
            try {
              const j = JSON.parse(text) as { code?: string; message?: string };
              if (typeof j.code === 'string') code = j.code;
              if (typeof j.message === 'string') message = j.message;
            } catch {
              // not JSON: the raw text
            }
            ws.terminate();
            reject(new LoaderError(code, `cannot connect to ${this.url}: ${res.statusCode} ${message}`));
          });
        });
        ws.once('error', (err) =>
          reject(
            new LoaderError('WHARF_ERR_TRANSPORT', `cannot connect to ${this.url}: ${err.message}`, { cause: err }),
          ),
        );
      });
      ws.on('message', (data, isBinary) => this.#onMessage(data as Buffer, isBinary));
      ws.on('error', () => {}); // 'close' follows and fails what is pending
      ws.on('close', (code, reason) => {
        if (this.#ws === ws) this.#ws = null;
        this.#failAll(
          new LoaderError(
            'WHARF_ERR_TRANSPORT',
            `connection to ${this.url} closed (${code}${reason.length ? ` ${reason}` : ''})`,
          ),
        );
      });
      this.#ws = ws;
      return ws;
    })().finally(() => {
      this.#connecting = null;
    });
    return this.#connecting;
  }

  #onMessage(data: Buffer, isBinary: boolean): void {
    let msg: ServerMessage;
    try {
      if (isBinary) throw new Error('binary message from server');
      msg = decodeServerMessage(data);
    } catch (err) {
      this.#ws?.close(closeCodes.protocolError, 'bad server message');
      this.#failAll(new LoaderError('WHARF_ERR_TRANSPORT', `bad message from ${this.url}: ${(err as Error).message}`));
      return;
    }
    if (msg.type === 'error' && msg.id === null) {
      this.#failAll(new LoaderError(msg.code, `${this.url}: ${msg.message}`));
      return;
    }
    const p = this.#pending.get(msg.id as number);
    if (!p) return;
    this.#pending.delete(msg.id as number);
    if (msg.type === 'error') p.reject(new LoaderError(msg.code, `${this.url}: ${msg.message}`));
    else p.resolve(msg);
  }

  #failAll(err: Error): void {
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const p of pending) p.reject(err);
  }

  async #request(header: ClientMessage, payload?: Buffer): Promise<ServerMessage> {
    const ws = await this.#connect();
    return new Promise<ServerMessage>((resolve, reject) => {
      this.#pending.set(header.id, { resolve, reject });
      const [head, body] = encodeFrameParts(header, payload);
      const onSent = (err?: Error) => {
        if (!err || !this.#pending.has(header.id)) return;
        this.#pending.delete(header.id);
        reject(new LoaderError('WHARF_ERR_TRANSPORT', `send to ${this.url} failed: ${err.message}`, { cause: err }));
      };
      if (body.length === 0) ws.send(head, { binary: true }, onSent);
      else {
        // Two fragments of one message: the payload is never copied.
        ws.send(head, { binary: true, fin: false });
        ws.send(body, { binary: true, fin: true }, onSent);
      }
    });
  }

  async ensureTable(table: string, primaryKey: string): Promise<void> {
    await this.#request({ type: 'ensureTable', id: this.#nextId++, table, primaryKey });
  }

  async insert(table: string, payload: Payload, opts: InsertOptions): Promise<WriteResult> {
    const msg = await this.#request(
      {
        type: 'insert',
        id: this.#nextId++,
        table,
        format: payload.format,
        durability: opts.durability,
        conflict: opts.conflict,
      },
      payload.bytes,
    );
    if (msg.type !== 'ack') throw new LoaderError('WHARF_ERR_TARGET', `unexpected ${msg.type} for an insert`);
    return msg.result;
  }

  async sync(): Promise<void> {
    await this.#request({ type: 'sync', id: this.#nextId++ });
  }

  isTransient(err: unknown): boolean {
    // The conditions that may clear up on a retry are the catalogue's `retryable` codes.
    const code = (err as { code?: unknown }).code;
    return isErrorCode(code) && errorCatalogue[code].retryable;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const ws = this.#ws;
    this.#ws = null;
    if (!ws) return;
    await new Promise<void>((resolve) => {
      ws.once('close', () => resolve());
      ws.close(closeCodes.normal);
      setTimeout(() => {
        ws.terminate();
        resolve();
      }, 2000).unref();
    });
  }
}

function zeroMask(mask: Buffer): void {
  mask.fill(0);
}
