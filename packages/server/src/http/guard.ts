/**
 * The doors of the HTTP and ws listener, one onRequest hook for every route (ws upgrades
 * included, before the upgrade), in this order:
 *
 * 1. Host: the Host header must be a name of this server (loopback names, an IP literal, this
 *    machine's host name, or one of `allowedHosts`), so a DNS-rebinding page, whose requests
 *    carry its own domain as Host, cannot reach the API from the user's browser.
 * 2. Origin: a ws upgrade, or a request that changes state (not GET/HEAD/OPTIONS), with an
 *    Origin header must come from this server's own origin (the admin UI); clients that send no
 *    Origin (drivers, curl, the loader) pass.
 * 3. Credentials, when a password is set: `/api/*`, `/ws/*` and `/metrics` need the admin
 *    password, as `Authorization: Bearer <password>`, Basic `admin:<password>`, or (browsers
 *    cannot set headers on a WebSocket) the subprotocol `wharf-token.<base64url(password)>`
 *    next to `wharf`. Failures count against the client address (LoginThrottle); an address
 *    past loginFailuresPerMinute gets 429 without its password being checked.
 *
 * The admin UI's files, /health and /openapi.json stay open: the UI asks for the password.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { WharfServerError } from '../errors.js';
import type { ServerState } from '../state.js';
import { sendError } from './error-handler.js';

/** The ws subprotocol that carries the password from a browser (value: base64url of it). */
export const TOKEN_PROTOCOL_PREFIX = 'wharf-token.';
/** The subprotocol the server selects when a client offers it (next to a token). */
export const WS_PROTOCOL = 'wharf';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** The ws routes: a plain HTTP request to one gets a catalogued 400 (not the plugin's empty answer). */
const WS_ENDPOINTS = new Set(['/ws/ingest', '/ws/stats']);

function digest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

/** The host name of a Host header value, lowercased, without port or IPv6 brackets. */
export function hostOf(header: string): string {
  const h = header.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(1, h.indexOf(']') === -1 ? undefined : h.indexOf(']'));
  const colon = h.lastIndexOf(':');
  return colon === -1 ? h : h.slice(0, colon);
}

/** Whether requests naming `host` may be answered. */
export function hostAllowed(host: string, allowed: readonly string[], machineName: string): boolean {
  if (allowed.includes('*')) return true;
  // An IP literal cannot be rebound: a page reaching it that way is a direct client of that address.
  if (isIP(host) !== 0) return true;
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  return host === machineName || allowed.includes(host);
}

/** The password a request offers, or undefined. */
export function offeredPassword(request: FastifyRequest): string | undefined {
  const auth = request.headers.authorization;
  if (typeof auth === 'string') {
    const space = auth.indexOf(' ');
    const scheme = auth.slice(0, space).toLowerCase();
    const value = auth.slice(space + 1).trim();
    if (scheme === 'bearer') return value;
    if (scheme === 'basic') {
      const decoded = Buffer.from(value, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      const user = decoded.slice(0, colon);
      if (colon !== -1 && (user === 'admin' || user === '')) return decoded.slice(colon + 1);
      return undefined;
    }
  }
  const protocols = request.headers['sec-websocket-protocol'];
  if (typeof protocols === 'string') {
    for (const p of protocols.split(',')) {
      const t = p.trim();
      if (t.startsWith(TOKEN_PROTOCOL_PREFIX))
        return Buffer.from(t.slice(TOKEN_PROTOCOL_PREFIX.length), 'base64url').toString('utf8');
    }
  }
  return undefined;
}

function needsCredentials(path: string): boolean {
  return path.startsWith('/api/') || path === '/api' || path.startsWith('/ws/') || path === '/metrics';
}

export function installGuard(app: FastifyInstance, state: ServerState): void {
  const { options } = state;
  const machineName = hostname().toLowerCase();
  const expected = options.password === '' ? null : digest(options.password);
  const allowedText = ['localhost', 'IP literals', machineName, ...options.allowedHosts].join(', ');

  const refuse = (request: FastifyRequest, reply: FastifyReply, e: WharfServerError): FastifyReply => {
    request.log.info({ code: e.code, remote: request.ip }, e.message);
    return sendError(reply, e);
  };

  app.addHook('onRequest', async (request, reply) => {
    const path = request.url.split('?')[0] ?? '/';
    const hostHeader = request.headers.host;
    if (hostHeader !== undefined && !hostAllowed(hostOf(hostHeader), options.allowedHosts, machineName)) {
      return refuse(
        request,
        reply,
        new WharfServerError('WHARF_ERR_BAD_HOST', [JSON.stringify(hostHeader), allowedText]),
      );
    }
    const isUpgrade = path.startsWith('/ws/');
    const origin = request.headers.origin;
    if (origin !== undefined && (isUpgrade || !SAFE_METHODS.has(request.method))) {
      let originHost: string | null = null;
      try {
        originHost = origin === 'null' ? null : new URL(origin).host.toLowerCase();
      } catch {
        originHost = null;
      }
      if (originHost === null || originHost !== (hostHeader ?? '').toLowerCase()) {
        const what = isUpgrade ? `open ${path}` : `${request.method} ${path}`;
        return refuse(
          request,
          reply,
          new WharfServerError('WHARF_ERR_FORBIDDEN_ORIGIN', [JSON.stringify(origin), what]),
        );
      }
    }
    if (expected !== null && needsCredentials(path)) {
      const refused = checkCredentials(request, reply, path);
      if (refused !== null) return refused;
    }
    if (WS_ENDPOINTS.has(path) && (request.headers.upgrade ?? '').toLowerCase() !== 'websocket') {
      return refuse(
        request,
        reply,
        new WharfServerError('WHARF_ERR_BAD_REQUEST', [
          `${path} is a WebSocket endpoint: open it with an Upgrade: websocket request`,
        ]),
      );
    }
  });

  /** null when the request carries the password; else the refusal sent. */
  function checkCredentials(request: FastifyRequest, reply: FastifyReply, path: string): FastifyReply | null {
    const address = request.ip;
    const wait = state.logins.retryAfterSeconds(address);
    if (wait > 0) {
      reply.header('retry-after', String(wait));
      return refuse(
        request,
        reply,
        new WharfServerError('WHARF_ERR_TOO_MANY_LOGINS', [state.logins.perMinute, address, wait]),
      );
    }
    const offered = offeredPassword(request);
    if (offered !== undefined && timingSafeEqual(digest(offered), expected as Buffer)) return null;
    if (offered !== undefined) state.logins.fail(address);
    reply.header('www-authenticate', 'Bearer realm="wharf"');
    return refuse(
      request,
      reply,
      new WharfServerError('WHARF_ERR_UNAUTHORIZED', [
        offered === undefined
          ? `${request.method} ${path} needs the admin password: send Authorization: Bearer <password>`
          : 'Wrong password',
      ]),
    );
  }
}
