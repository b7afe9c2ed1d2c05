/**
 * Serves the built admin UI (the dist/ of the @wharf/admin package) at `/`, with an
 * SPA fallback: any other page navigation (GET with Accept: text/html) that is not an API path
 * answers index.html; other unknown paths keep the JSON 404. API paths (/api, /ws,
 * /openapi.json, /metrics, /health) are never shadowed: an unknown one still gets the catalog's
 * WHARF_ERR_NOT_FOUND. When the UI is missing (a clone that has not built it), `/` answers a
 * short page saying how to get it. WHARF_ADMIN_DIST points at another build.
 */
import { readFile, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, extname, join, resolve, sep } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

export interface AdminStaticOptions {
  /** Directory holding index.html and assets/. Default: WHARF_ADMIN_DIST, else @wharf/admin's dist/. */
  dir?: string;
}

/** @wharf/admin's dist/, or undefined when that package is not installed. */
function installedAdminDir(): string | undefined {
  try {
    return join(dirname(createRequire(import.meta.url).resolve('@wharf/admin/package.json')), 'dist');
  } catch {
    return undefined;
  }
}

const RESERVED = ['/api/', '/ws/'];
const RESERVED_EXACT = new Set(['/api', '/ws', '/openapi.json', '/metrics', '/health']);

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.map': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
};

const MISSING_BUILD = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Wharf admin not built</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 3rem auto; padding: 0 1rem">
<h1>Wharf</h1>
<p>The admin UI is not installed: reinstall <code>@wharf/server</code>, which depends on <code>@wharf/admin</code>
(in a clone of the repository: <code>npm run build:admin</code>), then reload.</p>
<p>The HTTP API is up: <a href="/api/tables">/api/tables</a>, <a href="/openapi.json">/openapi.json</a>, <a href="/health">/health</a>.</p>
</body></html>
`;

export function isApiPath(path: string): boolean {
  return RESERVED_EXACT.has(path) || RESERVED.some((p) => path.startsWith(p));
}

export default async function adminStatic(app: FastifyInstance, opts: AdminStaticOptions = {}): Promise<void> {
  const dir = opts.dir ?? process.env.WHARF_ADMIN_DIST ?? installedAdminDir();
  const root = dir === undefined ? undefined : resolve(dir);

  const sendIndex = async (reply: FastifyReply): Promise<FastifyReply> => {
    const html = root === undefined ? null : await readFile(join(root, 'index.html')).catch(() => null);
    if (html === null) {
      return reply.code(200).type('text/html; charset=utf-8').header('cache-control', 'no-store').send(MISSING_BUILD);
    }
    return reply.code(200).type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(html);
  };

  /** A file under root, or null (missing, a directory, or outside root). */
  const fileFor = async (urlPath: string): Promise<string | null> => {
    let decoded: string;
    try {
      decoded = decodeURIComponent(urlPath);
    } catch {
      return null;
    }
    if (decoded.includes('\0') || root === undefined) return null;
    const file = resolve(root, `.${decoded}`);
    if (file !== root && !file.startsWith(root + sep)) return null;
    try {
      return (await stat(file)).isFile() ? file : null;
    } catch {
      return null;
    }
  };

  app.get('/', { schema: { hide: true } }, async (_request, reply) => sendIndex(reply));

  app.get('/*', { schema: { hide: true } }, async (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0] ?? '/';
    if (isApiPath(path)) return reply.callNotFound();
    const file = await fileFor(path);
    if (file) {
      const body = await readFile(file);
      const type = TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream';
      const immutable = path.startsWith('/assets/');
      return reply
        .code(200)
        .type(type)
        .header('cache-control', immutable ? 'public, max-age=31536000, immutable' : 'no-cache')
        .send(body);
    }
    // A missing asset is a 404. The SPA fallback answers only page navigations (Accept: text/html),
    // so API clients asking for an unknown path still get the catalog's JSON 404.
    const wantsHtml = (request.headers.accept ?? '').includes('text/html');
    if (!wantsHtml || path.startsWith('/assets/') || extname(path) !== '') return reply.callNotFound();
    return sendIndex(reply);
  });
}
