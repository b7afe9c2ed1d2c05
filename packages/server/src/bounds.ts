/**
 * Server-wide bounds on what clients hold: the connection limit (HTTP, ws and driver port
 * together) and the budget of request-body bytes held in memory across all requests. Timeouts
 * are Node's http server options, set in app.ts.
 */

import type { Socket } from 'node:net';
import { Transform } from 'node:stream';
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

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  408: 'Request Timeout',
  431: 'Request Header Fields Too Large',
  503: 'Service Unavailable',
};

/** A catalogued error as a raw HTTP response that closes the connection (written before or without fastify). */
export function rawErrorResponse(e: WharfServerError): string {
  const reason = REASONS[e.statusCode] ?? 'Error';
  const body = JSON.stringify({ statusCode: e.statusCode, code: e.code, error: reason, message: e.message });
  return `HTTP/1.1 ${e.statusCode} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`;
}

function tooManyConnectionsResponse(state: ServerState): string {
  return rawErrorResponse(new WharfServerError('WHARF_ERR_TOO_MANY_CONNECTIONS', [state.openConnections]));
}

/**
 * Node's http parser failures (a request not complete within httpRequestTimeoutMs or its headers
 * within httpHeadersTimeoutMs, headers too large, malformed HTTP): a catalogued error, then close.
 */
export function clientErrorHandler(state: ServerState): (err: Error & { code?: string }, socket: Socket) => void {
  return (err, socket) => {
    // As Node's own handler: answer only if no response is under way on this socket (bytes after
    // a `connection: close` request, for one, arrive once its answer is out).
    const current = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    // Bytes after a `connection: close` request: let its answer finish (Node then closes).
    if (err.code === 'HPE_CLOSED_CONNECTION' && current !== undefined && current !== null) return;
    if (
      err.code === 'ECONNRESET' ||
      err.code === 'HPE_CLOSED_CONNECTION' ||
      !socket.writable ||
      current?.headersSent === true
    ) {
      socket.destroy();
      return;
    }
    const { limits } = state.options;
    let e: WharfServerError;
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      e = new WharfServerError('WHARF_ERR_REQUEST_TIMEOUT', [
        `${limits.httpHeadersTimeoutMs} ms for its headers, ${limits.httpRequestTimeoutMs} ms in all`,
      ]);
    } else if (err.code === 'HPE_HEADER_OVERFLOW') {
      e = new WharfServerError('WHARF_ERR_HEADERS_TOO_LARGE');
    } else {
      e = new WharfServerError('WHARF_ERR_BAD_REQUEST', [`malformed HTTP request (${err.code ?? err.message})`]);
    }
    socket.end(rawErrorResponse(e));
    socket.destroySoon();
  };
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
    if (request.headers['content-length'] === undefined && request.headers['transfer-encoding'] === undefined)
      return payload;
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
