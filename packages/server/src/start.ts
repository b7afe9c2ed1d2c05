import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { buildServer } from './app.js';
import type { ServerOptions } from './options.js';

export interface ListenAddress {
  host: string;
  port: number;
}

export interface ServerHandle {
  app: FastifyInstance;
  /** HTTP API + WebSocket (/ws/ingest, /ws/stats). */
  http: ListenAddress;
  /** RethinkDB driver port, or null when disabled. */
  driver: ListenAddress | null;
  /**
   * Graceful shutdown: stop accepting, answer the work already received, wait for in-flight
   * writes, sync, close the database. Safe to call more than once.
   */
  close(): Promise<void>;
}

/** Build the server and listen on every enabled listener. */
export async function startServer(opts: ServerOptions): Promise<ServerHandle> {
  const app = buildServer(opts);
  try {
    await app.ready();
    // Before any listener opens, so the first client meets compiled code and no request waits
    // behind the warm-up (rethinkdb/warm-up.ts).
    if (app.wharf.options.driverPort !== false && app.wharf.options.driverWarmUp) {
      const t0 = performance.now();
      const rounds = await app.rethinkdb.warmUp();
      app.log.info({ ...rounds, ms: Math.round(performance.now() - t0) }, 'driver port query path warmed up');
    }
    await app.listen({ host: app.wharf.options.host, port: app.wharf.options.httpPort });
    if (app.wharf.options.driverPort !== false)
      await app.rethinkdb.listen(app.wharf.options.driverPort, app.wharf.options.host);
  } catch (err) {
    await app.close().catch(() => {});
    throw err;
  }
  const httpAddr = app.server.address() as AddressInfo;
  const driverAddr = app.rethinkdb.address();
  let closing: Promise<void> | undefined;
  const handle: ServerHandle = {
    app,
    http: { host: httpAddr.address, port: httpAddr.port },
    driver: driverAddr ? { host: driverAddr.address, port: driverAddr.port } : null,
    close: () => (closing ??= app.close()),
  };
  app.log.info({ http: handle.http, driver: handle.driver }, 'wharf listening');
  return handle;
}
