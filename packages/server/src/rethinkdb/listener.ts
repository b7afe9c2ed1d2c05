/**
 * The RethinkDB driver port as a plugin: a net.Server whose connections speak protocol V1_0
 * (SCRAM-SHA-256; `admin` and the users of `rethinkdb.users`, users.ts). It decorates the instance with `rethinkdb` (listen, address,
 * close); startServer() calls listen(). On shutdown it stops accepting and lets every
 * connection answer the queries it already took before closing it.
 */
import { randomUUID } from 'node:crypto';
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { admitConnection } from '../bounds.js';
import { DriverConnection } from './connection.js';
import type { FeedHandle } from './feed-cursor.js';
import { Catalog } from './term/catalog.js';
import { type EvaluatorDeps, runQuery } from './term/evaluator.js';
import { JsPool } from './term/js-pool.js';
import { bulkInsertFrameOf, runBulkInsert } from './term/single-insert.js';
import { type RunningQuery, SystemFeeds, type SystemInfo } from './term/system-tables.js';
import type { FeedDeps } from './term/terms/changefeeds.js';
import { Access, ADMIN, UserStore } from './users.js';
import { warmQueryPath } from './warm-up.js';

declare module 'fastify' {
  interface FastifyInstance {
    rethinkdb: DriverListener;
  }
}

export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  return address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.');
}

export class DriverListener {
  readonly #server: Server;
  readonly #connections = new Set<DriverConnection>();
  #listening = false;
  /** Runs the per-query code once per round before any client (`warm-up.ts`). */
  readonly warmUp: () => Promise<{ inserts: number; exprs: number }>;
  /** The driver port's users (for the HTTP API's table drop, which forgets a table's grants). */
  readonly users: UserStore | undefined;

  constructor(
    onConnection: (socket: Socket) => DriverConnection | null,
    warmUp: () => Promise<{ inserts: number; exprs: number }>,
    users?: UserStore,
  ) {
    this.warmUp = warmUp;
    this.users = users;
    this.#server = createServer({ noDelay: true, keepAlive: true }, (socket) => {
      const conn = onConnection(socket);
      if (conn === null) return;
      this.#connections.add(conn);
      socket.on('close', () => this.#connections.delete(conn));
    });
  }

  get connections(): number {
    return this.#connections.size;
  }

  listen(port: number, host: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error): void => reject(err);
      this.#server.once('error', onError);
      this.#server.listen(port, host, () => {
        this.#server.off('error', onError);
        this.#listening = true;
        resolve();
      });
    });
  }

  address(): AddressInfo | null {
    return this.#listening ? (this.#server.address() as AddressInfo) : null;
  }

  /** Stop accepting, drain every connection, close them. */
  async close(): Promise<void> {
    if (!this.#listening) return;
    this.#listening = false;
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    await Promise.allSettled([...this.#connections].map((c) => c.drain()));
    await closed;
  }
}

async function rethinkdbListener(app: FastifyInstance): Promise<void> {
  const state = app.wharf;
  const { options } = state;
  const users = new UserStore(app.db, options.password);
  await users.load();
  const listenerRef: { current?: DriverListener } = {};
  const running = new Set<RunningQuery>();
  // `rethinkdb.stats`'s per-second rates: the counters sampled once a second (off when closing).
  const totals = (): { at: number; queries: number; written: number } => ({
    at: Date.now(),
    queries: state.counters.driverQueries,
    written: app.db.closed ? 0 : app.db.stats().documentsWritten,
  });
  let samples = [totals(), totals()];
  const sampler = setInterval(() => {
    samples = [samples[1] as ReturnType<typeof totals>, totals()];
  }, 1000);
  sampler.unref();
  const perSec = (pick: (t: ReturnType<typeof totals>) => number): number => {
    const [a, b] = samples as [ReturnType<typeof totals>, ReturnType<typeof totals>];
    return b.at > a.at ? ((pick(b) - pick(a)) * 1000) / (b.at - a.at) : 0;
  };
  const system: SystemInfo = {
    users,
    scratch: new Map(),
    feeds: new SystemFeeds(),
    startedAt: Date.now(),
    ports: () => {
      const http = app.server.address();
      return {
        http: http !== null && typeof http === 'object' ? http.port : null,
        driver: listenerRef.current?.address()?.port ?? null,
      };
    },
    counters: () => ({
      connections: state.counters.driverConnections,
      queries: state.counters.driverQueries,
      queriesPerSec: perSec((t) => t.queries),
      written: app.db.stats().documentsWritten,
      writtenPerSec: perSec((t) => t.written),
    }),
    queries: () => [...running],
  };
  const deps: EvaluatorDeps = {
    db: app.db,
    catalog: new Catalog(app.db),
    serverName: options.serverName,
    serverId: randomUUID(),
    arrayLimit: options.limits.arrayLimit,
    trackWrite: (p) => state.writes.track(p),
    defaultDurability: options.engine.durability ?? 'hard',
    system,
    js: new JsPool({
      workers: options.limits.jsWorkers,
      memoryMb: options.limits.jsWorkerMemoryMb,
      queue: options.limits.jsQueue,
    }),
    pushDown: options.reqlPushDown,
  };
  const log = app.log.child({ listener: 'rethinkdb' });

  const listener = new DriverListener(
    (socket) => {
      // Past maxConnections (HTTP and driver port together) a new driver connection is closed at once.
      if (!admitConnection(state, socket)) {
        log.warn(
          { remote: socket.remoteAddress, limit: options.limits.maxConnections },
          'WHARF_ERR_TOO_MANY_CONNECTIONS: closing a new driver connection',
        );
        socket.destroy();
        return null;
      }
      state.counters.driverConnections++;
      state.counters.driverConnectionsTotal++;
      socket.on('close', () => state.counters.driverConnections--);
      const loopback = isLoopback(socket.remoteAddress);
      const address = socket.remoteAddress ?? 'unknown';
      const connDeps: EvaluatorDeps = deps;
      if (state.closing) {
        socket.destroy();
      }
      return new DriverConnection(socket, {
        runner: {
          start: async (term, optargs, user) => {
            // A changefeed's handle goes to the connection with the stream it is served from.
            let feed: FeedHandle | undefined;
            const feeds: FeedDeps = {
              queueSizeLimit: options.limits.changefeedQueueSize,
              globalQueueSize: Object.hasOwn(optargs, 'changefeed_queue_size')
                ? optargs.changefeed_queue_size
                : undefined,
              opened: (f) => {
                feed = f;
              },
              subscribed: (delta) => {
                state.counters.driverFeeds += delta;
              },
            };
            // Admin runs unchecked; anyone else has every table access checked (users.ts).
            const access = user === ADMIN ? undefined : new Access(users, user);
            // What `rethinkdb.jobs` shows while the query is evaluated.
            const job: RunningQuery = {
              id: randomUUID(),
              startedAt: Date.now(),
              address,
              port: socket.remotePort ?? 0,
              user,
              term,
            };
            running.add(job);
            let result: Awaited<ReturnType<typeof runQuery>>;
            try {
              result = await runQuery({ ...connDeps, feeds, ...(access ? { access } : {}) }, term, optargs);
            } catch (err) {
              running.delete(job);
              throw err;
            }
            if (result.kind !== 'stream') {
              running.delete(job);
              return result;
            }
            // A stream (a cursor, a feed) is the query's until it ends or is closed.
            const source = untilDone(result.source, () => running.delete(job));
            return feed !== undefined ? { ...result, source, feed } : { ...result, source };
          },
          startFrame: (body, user) => {
            // The bulk path writes without the table lookup: admin connections only.
            if (user !== ADMIN) return undefined;
            const bulk = bulkInsertFrameOf(body);
            // A table with a write hook (or hooks not read yet): the general path applies it.
            if (bulk === undefined || connDeps.catalog.writeHooks.peek(bulk.table) !== false) return undefined;
            return async () => {
              const value = await runBulkInsert(connDeps.db, bulk, connDeps.defaultDurability, connDeps.trackWrite);
              return value === undefined ? undefined : { kind: 'atom' as const, value };
            };
          },
        },
        handshake: {
          // A user without a password logs in from loopback only; from elsewhere it is refused
          // as an unknown user is (after the proof), so its existence is not revealed.
          credentials: (user) =>
            user !== ADMIN && !loopback && !users.hasPassword(user) ? undefined : users.credentials(user),
          refuse: (user) => {
            if (user === ADMIN && options.password === '' && !loopback) {
              return 'The admin password is empty, so Wharf accepts driver connections from loopback only; set one with WHARF_PASSWORD or --password.';
            }
            // Login throttling, shared with HTTP: refused before the proof is checked.
            const wait = state.logins.retryAfterSeconds(address);
            return wait > 0 ? `Too many failed logins from ${address} within a minute; retry in ${wait} s.` : null;
          },
          maxMessageBytes: options.limits.handshakeMessageBytes,
        },
        limits: options.limits,
        serverInfo: { id: deps.serverId, name: options.serverName },
        log,
        events: {
          onHandshake: (ok, badCredentials) => {
            if (!ok) state.counters.driverHandshakeFailures++;
            if (badCredentials === true) state.logins.fail(address);
          },
          onQuery: () => state.counters.driverQueries++,
          onQueryError: () => state.counters.driverErrors++,
          onBatch: () => state.counters.driverBatches++,
        },
      });
    },
    () => warmQueryPath(deps),
    users,
  );
  listenerRef.current = listener;
  app.decorate('rethinkdb', listener);
  app.addHook('preClose', async () => {
    clearInterval(sampler);
    state.closing = true;
    await listener.close();
    await deps.js?.close();
  });
}

/** The iterator, calling `done` once when it ends, fails or is closed. */
function untilDone<T>(it: AsyncIterator<T>, done: () => void): AsyncIterator<T> {
  return {
    next: async () => {
      try {
        const r = await it.next();
        if (r.done) done();
        return r;
      } catch (err) {
        done();
        throw err;
      }
    },
    return: async (value?: unknown) => {
      done();
      return (await it.return?.(value)) ?? { done: true, value: undefined };
    },
  };
}

export default fp(rethinkdbListener, { name: 'wharf-rethinkdb', dependencies: ['wharf-engine'] });
