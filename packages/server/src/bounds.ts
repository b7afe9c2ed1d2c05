/**
 * Server-wide bounds on what clients hold: the connection limit (HTTP, ws and driver port
 * together) and the budget of request-body bytes held in memory across all requests. Timeouts
 * are Node's http server options, set in app.ts.
 */
import { Transform } from 'node:stream';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { WharfServerError } from './errors.js';
import type { ServerState } from './state.js';

/**
 * Count a new connection; false (the caller closes it) when the server already has
 * maxConnections open. The count drops when the socket closes.
 */
export function admitConnection(state: ServerState, socket: Socket): boolean {
  if (state.openConnections >= state.options.limits.maxConnections) return false;
  state.openConnections++;
  socket.once('close', () => state.openConnections--);
  return true;
}

/** The raw HTTP answer for a connection over the limit (the request is never read). */
function tooManyConnectionsResponse(state: ServerState): string {
  const e = new WharfServerError('WHARF_ERR_TOO_MANY_CONNECTIONS', [state.openConnections]);
  const body = JSON.stringify({ statusCode: 503, code: e.code, error: 'Service Unavailable', message: e.message });
  return `HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`;
}

export function installBounds(app: FastifyInstance, state: ServerState): void {
  // First listener: decide before Node's http parser reads anything from the socket.
  app.server.prependListener('connection', (socket: Socket) => {
    if (admitConnection(state, socket)) return;
    socket.end(tooManyConnectionsResponse(state));
    socket.destroySoon();
  });

  // Every request body passes through a counter: past bufferedBodyBytes across all requests,
  // the request fails with 503 WHARF_ERR_OVERLOADED and its connection is closed, so memory stays
  // bounded however many clients hold unfinished bodies. The bytes are released once the response
  // is done (the handler holds the body until then).
  app.addHook('preParsing', async (request, reply, payload) => {
    if (request.headers['content-length'] === undefined && request.headers['transfer-encoding'] === undefined) return payload;
    const budget = state.bodyBytes;
    let held = 0;
    reply.raw.once('close', () => {
      budget.release(held);
      held = 0;
    });
    const counted = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        if (!budget.take(chunk.length)) {
          reply.header('connection', 'close');
          callback(new WharfServerError('WHARF_ERR_OVERLOADED', [budget.used]));
          return;
        }
        held += chunk.length;
        callback(null, chunk);
      },
    });
    payload.on('error', (err) => counted.destroy(err));
    return payload.pipe(counted);
  });
}
