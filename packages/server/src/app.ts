/**
 * Composition root: buildServer(opts) returns a fastify instance with every listener registered
 * as a plugin. Order matters for shutdown (onClose runs in reverse): the engine is registered
 * first, so it syncs and closes after the listeners have stopped and drained.
 *
 * Callers listen: `app.listen()` serves HTTP + ws; `app.rethinkdb.listen()` opens the driver
 * port. startServer() (start.ts) does both.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { resolveOptions, type ServerOptions } from './options.js';
import { ServerState } from './state.js';
import enginePlugin from './plugins/engine.js';
import httpApi from './http/plugin.js';
import wsListener from './ws/plugin.js';
import rethinkdbListener from './rethinkdb/listener.js';
import importsRoutes from './http/routes/imports.js';
import adminStatic from './http/admin-static.js';

export function buildServer(opts: ServerOptions): FastifyInstance {
  const options = resolveOptions(opts);
  const state = new ServerState(options);
  const app = Fastify({
    logger: options.logger,
    bodyLimit: options.limits.httpBodyBytes,
    forceCloseConnections: 'idle',
  });
  app.register(enginePlugin, { state });
  app.register(httpApi);
  app.register(wsListener);
  app.register(rethinkdbListener);
  app.register(importsRoutes); // import-run history (admin UI)
  app.register(adminStatic); // the admin UI at / (apps/admin/dist)
  return app;
}
