/**
 * Composition root: buildServer(opts) returns a fastify instance with every listener registered
 * as a plugin. Order matters for shutdown (onClose runs in reverse): the engine is registered
 * first, so it syncs and closes after the listeners have stopped and drained.
 *
 * Callers listen: `app.listen()` serves HTTP + ws; `app.rethinkdb.listen()` opens the driver
 * port. startServer() (start.ts) does both.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { clientErrorHandler, installBounds } from './bounds.js';
import { WharfServerError } from './errors.js';
import adminStatic from './http/admin-static.js';
import { sendError } from './http/error-handler.js';
import { installGuard } from './http/guard.js';
import httpApi from './http/plugin.js';
import importsRoutes from './http/routes/imports.js';
import { resolveOptions, type ServerOptions } from './options.js';
import enginePlugin from './plugins/engine.js';
import rethinkdbListener from './rethinkdb/listener.js';
import { ServerState } from './state.js';
import wsListener from './ws/plugin.js';

export function buildServer(opts: ServerOptions): FastifyInstance {
  const options = resolveOptions(opts);
  const state = new ServerState(options);
  const { limits } = options;
  const app = Fastify({
    logger: options.logger,
    bodyLimit: limits.httpBodyBytes,
    forceCloseConnections: 'idle',
    // Path parameters (table names, keys) up to 4 KiB; longer, and malformed URLs, get a catalogued 400.
    routerOptions: { maxParamLength: 4096 },
    clientErrorHandler: clientErrorHandler(state),
    frameworkErrors: (error, request, reply) => {
      sendError(
        reply,
        new WharfServerError('WHARF_ERR_BAD_REQUEST', [
          `${error.message} (${request.method} ${request.url.slice(0, 200)})`,
        ]),
      );
    },
    // A whole request (a body trickled at 1 byte/s included) must arrive within httpRequestTimeoutMs;
    // Node answers 408 and closes. An idle keep-alive connection closes after httpIdleTimeoutMs.
    requestTimeout: limits.httpRequestTimeoutMs,
    keepAliveTimeout: limits.httpIdleTimeoutMs,
    http: {
      headersTimeout: Math.min(limits.httpHeadersTimeoutMs, limits.httpRequestTimeoutMs),
      // How often Node checks those timeouts (its default, 30 s, would let a trickle run that much longer).
      connectionsCheckingInterval: Math.max(
        50,
        Math.min(1000, limits.httpHeadersTimeoutMs / 4, limits.httpRequestTimeoutMs / 4),
      ),
    },
  });
  // Fastify's default text/plain parser would take bodies a cross-site form can send: JSON only.
  app.removeContentTypeParser('text/plain');
  installBounds(app, state);
  installGuard(app, state);
  app.register(enginePlugin, { state });
  app.register(httpApi);
  app.register(wsListener);
  app.register(rethinkdbListener);
  app.register(importsRoutes); // import-run history (admin UI)
  app.register(adminStatic); // the admin UI at / (apps/admin/dist)
  return app;
}
