/**
 * The RethinkDB driver port as a plugin: a net.Server whose connections speak protocol V1_0
 * (SCRAM-SHA-256, user `admin`). It decorates the instance with `rethinkdb` (listen, address,
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
import { adminCredentials } from './handshake.js';
import { Catalog } from './term/catalog.js';
import { type EvaluatorDeps, runQuery } from './term/evaluator.js';
import { JsPool } from './term/js-pool.js';
import { bulkInsertFrameOf, runBulkInsert } from './term/single-insert.js';
import type { FeedDeps } from './term/terms/changefeeds.js';
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

  constructor(
    onConnection: (socket: Socket) => DriverConnection | null,
    warmUp: () => Promise<{ inserts: number; exprs: number }>,
  ) {
    this.warmUp = warmUp;
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
  const credentials = adminCredentials(options.password);
  const deps: EvaluatorDeps = {
    db: app.db,
    catalog: new Catalog(app.db),
    serverName: options.serverName,
    serverId: randomUUID(),
    arrayLimit: options.limits.arrayLimit,
    trackWrite: (p) => state.writes.track(p),
    defaultDurability: options.engine.durability ?? 'hard',
    js: new JsPool({
      workers: options.limits.jsWorkers,
      memoryMb: options.limits.jsWorkerMemoryMb,
      queue: options.limits.jsQueue,
    }),
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
          start: async (term, optargs) => {
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
            const result = await runQuery({ ...connDeps, feeds }, term, optargs);
            return feed !== undefined && result.kind === 'stream' ? { ...result, feed } : result;
          },
          startFrame: (body) => {
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
          credentials,
          refuse: () => {
            if (options.password === '' && !loopback) {
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
  );
  app.decorate('rethinkdb', listener);
  app.addHook('preClose', async () => {
    state.closing = true;
    await listener.close();
    await deps.js?.close();
  });
}

export default fp(rethinkdbListener, { name: 'wharf-rethinkdb', dependencies: ['wharf-engine'] });
