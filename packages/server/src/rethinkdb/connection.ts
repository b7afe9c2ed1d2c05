/**
 * One driver connection: the handshake, then query frames. Queries run concurrently and are
 * matched by token only; responses go out in completion order. Every non-noreply START, every
 * CONTINUE, STOP and NOREPLY_WAIT is answered exactly once (drivers hang otherwise), and a
 * CONTINUE or STOP for an unknown token gets an empty SUCCESS_SEQUENCE.
 *
 * Flow control: frames are taken from the socket while fewer than `driverQueriesInFlight`
 * queries run and the socket's write side is drained; otherwise reading pauses, so a client that
 * never reads its responses stops being served (and is dropped past `outboundBufferBytes`)
 * while every other connection goes on. It knows query types, not terms: a QueryRunner does.
 */
import type { Socket } from 'node:net';
import { type BatchLimits, batchBody, Cursor, resultJson } from './cursor.js';
import { asReqlError, errorBody, ReqlClientError, ReqlError, resourceLimit } from './errors.js';
import { FeedCursor, type FeedHandle } from './feed-cursor.js';
import { encodeResponse, type FrameEvent, FrameReader } from './framing.js';
import { Handshake, type HandshakeOptions, type HandshakeResult } from './handshake.js';
import { QueryType, ResponseType } from './protocol.js';

export type QueryResult =
  | { kind: 'atom'; value: unknown }
  /** `feed`: the stream is a changefeed's (served by a FeedCursor). */
  | { kind: 'stream'; source: AsyncIterator<unknown>; feed?: FeedHandle };

/** Evaluates START terms. Implemented by the term layer (term/evaluator.ts). */
export interface QueryRunner {
  /** `user`: who logged in on this connection (the handshake's user). */
  start(term: unknown, globalOptargs: Record<string, unknown>, user: string): Promise<QueryResult>;
  /**
   * A START frame the term layer can run from its bytes without parsing it whole (a loader's
   * bulk insert, term/single-insert.ts): how to run it, or undefined. The run resolves undefined
   * when the general path must run the query after all (it then words the error).
   */
  startFrame?(body: Buffer, user: string): (() => Promise<QueryResult | undefined>) | undefined;
}

export interface ConnectionLimits {
  driverQueryBytes: number;
  handshakeMessageBytes: number;
  handshakeTimeoutMs: number;
  driverQueriesInFlight: number;
  outboundBufferBytes: number;
  cursorBatchRows: number;
  cursorBatchBytes: number;
  driverFeedsPerConnection: number;
}

export interface ConnectionLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

export interface ConnectionEvents {
  /** `badCredentials`: the handshake failed on a wrong password or an unknown user. */
  onHandshake?(ok: boolean, badCredentials?: boolean): void;
  onQuery?(): void;
  onQueryError?(): void;
  onBatch?(): void;
}

export interface ConnectionDeps {
  runner: QueryRunner;
  handshake: HandshakeOptions;
  limits: ConnectionLimits;
  serverInfo: { id: string; name: string };
  log: ConnectionLog;
  events?: ConnectionEvents;
}

const EMPTY_SEQUENCE = `{"t":${ResponseType.SUCCESS_SEQUENCE},"r":[],"n":[]}`;

function literalBool(v: unknown): boolean {
  return v === true || (Array.isArray(v) && v[0] === 1 && v[1] === true);
}

function jsonType(v: unknown): string {
  if (v === null) return 'NULL';
  if (Array.isArray(v)) return 'ARRAY';
  return (
    ({ boolean: 'BOOL', number: 'NUMBER', string: 'STRING', object: 'OBJECT' } as Record<string, string>)[typeof v] ??
    'UNKNOWN'
  );
}

export class DriverConnection {
  readonly #socket: Socket;
  readonly #deps: ConnectionDeps;
  readonly #handshake: Handshake;
  readonly #reader: FrameReader;
  #ready = false;
  /** The user the handshake logged in (set once ready). */
  #user = '';
  #closed = false;
  #draining = false;
  #handshakeTimer: NodeJS.Timeout | undefined;
  /** Open tokens: a START being evaluated, or a stream with batches left. */
  readonly #tokens = new Map<string, { cursor: Cursor | FeedCursor | null }>();
  /** Every query being handled (START, CONTINUE, STOP, NOREPLY_WAIT): drained on shutdown. */
  readonly #inflight = new Set<Promise<void>>();
  /** STARTs being evaluated (what NOREPLY_WAIT waits for). */
  readonly #starts = new Set<Promise<void>>();

  constructor(socket: Socket, deps: ConnectionDeps) {
    this.#socket = socket;
    this.#deps = deps;
    this.#handshake = new Handshake(deps.handshake);
    this.#reader = new FrameReader(deps.limits.driverQueryBytes);
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    socket.on('drain', () => this.#pump());
    socket.on('error', (err) => deps.log.debug({ err: err.message }, 'driver socket error'));
    socket.on('close', () => this.#onClose());
    this.#handshakeTimer = setTimeout(() => {
      if (!this.#ready) {
        deps.log.info({ remote: socket.remoteAddress }, 'driver handshake timed out');
        this.#destroy();
      }
    }, deps.limits.handshakeTimeoutMs);
    this.#handshakeTimer.unref();
  }

  get closed(): boolean {
    return this.#closed;
  }

  #onData(chunk: Buffer): void {
    if (this.#closed) return;
    if (!this.#ready) {
      let step: HandshakeResult;
      try {
        step = this.#handshake.push(chunk);
      } catch (err) {
        this.#deps.log.warn({ err: (err as Error).message }, 'driver handshake failed');
        this.#destroy();
        return;
      }
      // One write per reply: the official driver mishandles a reply split across segments.
      for (const reply of step.replies) this.#socket.write(reply);
      if (step.status === 'failed') {
        this.#deps.log.info({ remote: this.#socket.remoteAddress, reason: step.reason }, 'driver handshake refused');
        this.#deps.events?.onHandshake?.(false, step.badCredentials);
        this.#endAfterWrite();
        return;
      }
      if (step.status === 'pending') return;
      this.#ready = true;
      this.#user = step.user;
      clearTimeout(this.#handshakeTimer);
      this.#deps.events?.onHandshake?.(true);
      chunk = step.rest;
    }
    this.#reader.push(chunk);
    this.#pump();
  }

  /** Take frames while the limits allow, then pause or resume the socket. */
  #pump(): void {
    if (this.#closed || !this.#ready) return;
    const { driverQueriesInFlight } = this.#deps.limits;
    while (!this.#draining && this.#inflight.size < driverQueriesInFlight && !this.#socket.writableNeedDrain) {
      const ev = this.#reader.next();
      if (ev === null) break;
      this.#dispatch(ev);
      if (this.#closed) return;
    }
    const blocked = this.#draining || this.#inflight.size >= driverQueriesInFlight || this.#socket.writableNeedDrain;
    if (blocked) this.#socket.pause();
    else this.#socket.resume();
  }

  #dispatch(ev: FrameEvent): void {
    if (ev.kind === 'too-large') {
      this.#sendError(
        ev.token,
        new ReqlClientError(`Query size (${ev.length}) greater than maximum (${this.#deps.limits.driverQueryBytes}).`),
      );
      this.#endAfterWrite();
      return;
    }
    const { token, body } = ev;
    const key = token.toString('hex');
    // A loader's bulk insert: run from the frame's bytes, not from the whole frame parsed.
    const fast = this.#deps.runner.startFrame?.(body, this.#user);
    if (fast !== undefined) {
      this.#startQuery(token, key, async () => (await fast()) ?? this.#startParsed(body), false, false);
      return;
    }
    let query: unknown;
    try {
      query = JSON.parse(body.toString('utf8'));
    } catch {
      this.#sendError(token, new ReqlClientError('Client is buggy (failed to deserialize query).'));
      return;
    }
    const bad = (detail: string): void =>
      this.#sendError(token, new ReqlClientError(`Server could not parse query: ${detail}`));
    if (!Array.isArray(query)) {
      bad(`Expected a query to be an array, but found ${jsonType(query)}.`);
      return;
    }
    if (query.length < 1 || query.length > 3) {
      bad(`Expected 1 to 3 elements in the top-level query, but found ${query.length}.`);
      return;
    }
    const type = query[0];
    if (typeof type !== 'number') {
      bad(`Expected a query type as a number, but found ${jsonType(type)}.`);
      return;
    }
    switch (type) {
      case QueryType.START: {
        const optargs = query[2] ?? {};
        if (optargs === null || typeof optargs !== 'object' || Array.isArray(optargs)) {
          bad(`Expected global optargs as an object, but found ${jsonType(optargs)}.`);
          return;
        }
        const opts = optargs as Record<string, unknown>;
        const term = query[1];
        this.#startQuery(
          token,
          key,
          () => this.#deps.runner.start(term, opts, this.#user),
          literalBool(opts.noreply),
          literalBool(opts.profile),
        );
        return;
      }
      case QueryType.CONTINUE:
        this.#track(this.#continue(token, key));
        return;
      case QueryType.STOP:
        this.#track(this.#stop(token, key));
        return;
      case QueryType.NOREPLY_WAIT: {
        const earlier = [...this.#starts];
        this.#track(
          Promise.allSettled(earlier).then(() => this.#send(token, `{"t":${ResponseType.WAIT_COMPLETE},"r":[]}`)),
        );
        return;
      }
      case QueryType.SERVER_INFO: {
        const { id, name } = this.#deps.serverInfo;
        this.#send(token, JSON.stringify({ t: ResponseType.SERVER_INFO, r: [{ id, name, proxy: false }] }));
        return;
      }
      default:
        bad(`Unrecognized QueryType: ${type}.`);
        return;
    }
  }

  /** A START: refused on a token already open, else run and tracked. */
  #startQuery(token: Buffer, key: string, run: () => Promise<QueryResult>, noreply: boolean, profile: boolean): void {
    if (this.#tokens.has(key)) {
      if (!noreply) this.#sendError(token, new ReqlClientError(`ERROR: duplicate token ${token.readBigInt64LE(0)}`));
      return;
    }
    this.#deps.events?.onQuery?.();
    const work = this.#start(token, key, run, noreply, profile);
    this.#starts.add(work);
    work.finally(() => this.#starts.delete(work)).catch(() => {});
    this.#track(work);
  }

  /** The general path for a frame the fast path gave back: a START without global optargs. */
  #startParsed(body: Buffer): Promise<QueryResult> {
    const query = JSON.parse(body.toString('utf8')) as unknown[];
    return this.#deps.runner.start(query[1], {}, this.#user);
  }

  #track(work: Promise<void>): void {
    this.#inflight.add(work);
    work
      .catch((err: unknown) => this.#deps.log.warn({ err: (err as Error).message }, 'driver query failed unexpectedly'))
      .finally(() => {
        this.#inflight.delete(work);
        this.#pump();
      });
  }

  async #start(
    token: Buffer,
    key: string,
    run: () => Promise<QueryResult>,
    noreply: boolean,
    profile: boolean,
  ): Promise<void> {
    const entry: { cursor: Cursor | FeedCursor | null } = { cursor: null };
    if (!noreply) this.#tokens.set(key, entry);
    try {
      const result = await run();
      if (noreply) {
        if (result.kind === 'stream') {
          result.feed?.close();
          await result.source.return?.();
        }
        return;
      }
      const p = profile ? ',"p":[]' : '';
      if (result.kind === 'atom') {
        const json = resultJson(result.value);
        this.#tokens.delete(key);
        this.#send(token, `{"t":${ResponseType.SUCCESS_ATOM},"r":[${json}]${p}}`);
        return;
      }
      const { cursorBatchRows: rows, cursorBatchBytes: bytes } = this.#deps.limits;
      const limits: BatchLimits = { rows, bytes };
      let cursor: Cursor | FeedCursor;
      if (result.feed) {
        const feeds = this.#openFeeds();
        if (feeds >= this.#deps.limits.driverFeedsPerConnection) {
          result.feed.close();
          await result.source.return?.();
          throw resourceLimit(
            `This connection has ${feeds} changefeeds open, the server's limit (driverFeedsPerConnection); close one first.`,
          );
        }
        cursor = new FeedCursor(result.source, result.feed, limits);
      } else cursor = new Cursor(result.source, limits);
      entry.cursor = cursor;
      const batch = await cursor.nextBatch();
      if (batch.done) this.#tokens.delete(key);
      this.#deps.events?.onBatch?.();
      this.#send(
        token,
        batchBody(
          batch.done ? ResponseType.SUCCESS_SEQUENCE : ResponseType.SUCCESS_PARTIAL,
          batch.rows,
          profile,
          cursor instanceof FeedCursor ? cursor.notes : undefined,
        ),
      );
    } catch (err) {
      this.#tokens.delete(key);
      const e = asReqlError(err);
      this.#deps.events?.onQueryError?.();
      if (!(err instanceof ReqlError)) this.#deps.log.warn({ err }, 'driver query failed');
      if (noreply) this.#deps.log.debug({ error: e.message }, 'noreply query failed');
      else this.#sendError(token, e);
    }
  }

  async #continue(token: Buffer, key: string): Promise<void> {
    const entry = this.#tokens.get(key);
    if (!entry?.cursor) {
      this.#send(token, EMPTY_SEQUENCE);
      return;
    }
    const cursor = entry.cursor;
    try {
      const batch = await cursor.nextBatch();
      if (batch.done && this.#tokens.get(key) === entry) this.#tokens.delete(key);
      this.#deps.events?.onBatch?.();
      this.#send(
        token,
        batchBody(
          batch.done ? ResponseType.SUCCESS_SEQUENCE : ResponseType.SUCCESS_PARTIAL,
          batch.rows,
          false,
          cursor instanceof FeedCursor ? cursor.notes : undefined,
        ),
      );
    } catch (err) {
      if (this.#tokens.get(key) === entry) this.#tokens.delete(key);
      this.#sendError(token, asReqlError(err));
    }
  }

  async #stop(token: Buffer, key: string): Promise<void> {
    const entry = this.#tokens.get(key);
    if (entry) {
      this.#tokens.delete(key);
      await entry.cursor?.close();
    }
    this.#send(token, EMPTY_SEQUENCE);
  }

  /** Changefeeds served on this connection now. */
  #openFeeds(): number {
    let n = 0;
    for (const { cursor } of this.#tokens.values()) if (cursor instanceof FeedCursor) n++;
    return n;
  }

  #sendError(token: Buffer, err: ReqlError): void {
    this.#send(token, errorBody(err));
  }

  #send(token: Buffer, json: string): void {
    if (this.#closed || this.#socket.destroyed || !this.#socket.writable) return;
    const limit = this.#deps.limits.outboundBufferBytes;
    if (this.#socket.writableLength > limit) {
      this.#deps.log.warn(
        { remote: this.#socket.remoteAddress, buffered: this.#socket.writableLength },
        'WHARF_ERR_SLOW_CLIENT: closing a driver connection that does not read',
      );
      this.#destroy();
      return;
    }
    this.#socket.write(encodeResponse(token, json));
  }

  #endAfterWrite(): void {
    this.#closed = true;
    this.#socket.end();
    const t = setTimeout(() => this.#socket.destroy(), 1000);
    t.unref();
  }

  #destroy(): void {
    this.#closed = true;
    this.#socket.destroy();
  }

  #onClose(): void {
    this.#closed = true;
    clearTimeout(this.#handshakeTimer);
    for (const { cursor } of this.#tokens.values()) void cursor?.close();
    this.#tokens.clear();
  }

  /** Shutdown: take no more frames, answer those already taken, then close. */
  async drain(): Promise<void> {
    this.#draining = true;
    if (!this.#ready) {
      this.#destroy();
      return;
    }
    this.#socket.pause();
    // A feed never ends by itself: end them, so a CONTINUE waiting on one is answered (an empty
    // SUCCESS_SEQUENCE) and the queries in flight can finish.
    for (const { cursor } of this.#tokens.values()) if (cursor instanceof FeedCursor) void cursor.close();
    while (this.#inflight.size > 0) await Promise.allSettled([...this.#inflight]);
    for (const { cursor } of this.#tokens.values()) await cursor?.close();
    this.#tokens.clear();
    if (!this.#closed) this.#endAfterWrite();
  }
}
