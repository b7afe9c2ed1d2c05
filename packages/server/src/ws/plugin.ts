/**
 * The WebSocket listener: @fastify/websocket on the HTTP port, with the ingest channel and the
 * stats feed. On shutdown it answers every command already received before closing (1001).
 */

import websocket from '@fastify/websocket';
import { closeCodes } from '@wharf/wire';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { WS_PROTOCOL } from '../http/guard.js';
import ingestRoute, { type IngestRegistry } from './ingest.js';
import statsFeedRoute from './stats-feed.js';

async function wsListener(app: FastifyInstance): Promise<void> {
  const registry: IngestRegistry = { connections: new Set() };
  await app.register(websocket, {
    options: {
      maxPayload: app.wharf.options.limits.wsMessageBytes,
      perMessageDeflate: false,
      // A browser offers ['wharf', 'wharf-token.…'] (the password, see http/guard.ts): select
      // 'wharf', never echo the token; a client that offers no `wharf` gets no subprotocol.
      handleProtocols: (protocols: Set<string>) => (protocols.has(WS_PROTOCOL) ? WS_PROTOCOL : false),
    },
    preClose(this: FastifyInstance, done: () => void) {
      const server = this.websocketServer;
      Promise.allSettled([...registry.connections].map((c) => c.drain())).then(() => {
        for (const client of server.clients) client.close(closeCodes.goingAway, 'server shutting down');
        server.close(() => done());
      });
    },
  });
  await app.register(ingestRoute, { registry });
  await app.register(statsFeedRoute);
}

export default fp(wsListener, { name: 'wharf-ws', dependencies: ['wharf-engine'] });
