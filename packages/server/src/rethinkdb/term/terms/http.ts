/**
 * HTTP (RethinkDB's terms/http.cc, extproc/http_job.cc): `r.http(url, {…})` makes one request
 * with Node's fetch, bounded in time (`timeout`, default 30 s as RethinkDB) and in size (the
 * body at most HTTP_BODY_LIMIT bytes), and answers the body: parsed JSON, text or binary, by
 * `result_format` (`auto` decides by Content-Type). Failures are NON_EXISTENCE errors worded as
 * RethinkDB's (`Error in HTTP GET of \`url\`: Couldn't resolve host name.`), so `default()`
 * catches them. What RethinkDB does through libcurl and fetch cannot (`page`/`page_limit`,
 * `verify: false`, digest `auth`) is refused with an error naming the option.
 */
import { nonExistence, queryLogic } from '../../errors.js';
import type { Node } from '../compiler.js';
import { type Datum, type DatumObject, datumTypeName, isPlainObject, newObject, pretty, typeError } from '../datum.js';
import type { Evaluator } from '../evaluator.js';
import { T } from '../names.js';
import type { TermFamily } from '../registry.js';
import type { Env } from '../values.js';

/** RethinkDB's default time limit of an r.http request. */
const DEFAULT_HTTP_TIMEOUT_MS = 30_000;
/** The largest response body r.http reads; a larger one fails the query. */
export const HTTP_BODY_LIMIT = 64 * 1024 * 1024;

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
type Method = (typeof METHODS)[number];

class HttpFailure extends Error {}

function seconds(ms: number): string {
  return `${Math.floor(ms / 1000)}.${String(ms % 1000).padStart(3, '0')}`;
}

async function opt(ev: Evaluator, node: Node & { kind: 'term' }, name: string, env: Env | null) {
  return ev.optDatum(node, name, env);
}

/** `params` as URL query parameters (numbers, strings, null). */
function paramsOf(v: Datum): [string, string][] {
  if (!isPlainObject(v))
    throw queryLogic(`Expected \`params\` to be an OBJECT, but found ${datumTypeName(v)}:\n${pretty(v)}`);
  const out: [string, string][] = [];
  for (const [k, x] of Object.entries(v)) {
    if (typeof x === 'number' || typeof x === 'string') out.push([k, String(x)]);
    else if (x === null) out.push([k, '']);
    else
      throw queryLogic(
        `Expected \`params.${k}\` to be a NUMBER, STRING or NULL, but found ${datumTypeName(x)}:\n${pretty(x)}`,
      );
  }
  return out;
}

/** `header` as lines `key: value` (an object) or whole lines (an array of strings). */
function headersOf(v: Datum): Headers {
  const h = new Headers();
  const line = (text: string): void => {
    if (/[\r\n]/.test(text)) throw queryLogic('A `header` item contains newline characters.');
    const i = text.indexOf(':');
    if (i <= 0) throw queryLogic(`A \`header\` item is not of the form \`name: value\`: \`${text}\`.`);
    h.append(text.slice(0, i).trim(), text.slice(i + 1).trim());
  };
  if (Array.isArray(v)) {
    v.forEach((x, i) => {
      if (typeof x !== 'string')
        throw queryLogic(`Expected \`header[${i}]\` to be a STRING, but found ${datumTypeName(x)}.`);
      line(x);
    });
  } else if (isPlainObject(v)) {
    for (const [k, x] of Object.entries(v)) {
      if (typeof x !== 'string' && x !== null)
        throw queryLogic(`Expected \`header.${k}\` to be a STRING or NULL, but found ${datumTypeName(x)}.`);
      line(`${k}: ${x ?? ''}`);
    }
  } else throw queryLogic(`Expected \`header\` to be an ARRAY or OBJECT, but found ${datumTypeName(v)}.`);
  return h;
}

function authOf(v: Datum, headers: Headers): void {
  if (!isPlainObject(v)) throw queryLogic(`Expected \`auth\` to be an OBJECT, but found ${datumTypeName(v)}.`);
  const item = (name: string): string => {
    const x = v[name];
    if (x === undefined) throw queryLogic(`\`auth.${name}\` not found in the auth object.`);
    if (typeof x !== 'string')
      throw queryLogic(`Expected \`auth.${name}\` to be a STRING, but found ${datumTypeName(x)}.`);
    return x;
  };
  const type = v.type ?? 'basic';
  if (typeof type !== 'string')
    throw queryLogic(`Expected \`auth.type\` to be a STRING, but found ${datumTypeName(type)}.`);
  const user = item('user');
  const pass = item('pass');
  if (type === 'digest') throw queryLogic('Wharf does not support `auth.type` `digest` in r.http (only `basic`).');
  if (type !== 'basic') throw queryLogic("`auth.type` is not recognized ('basic', and 'digest' are allowed).");
  headers.set('Authorization', `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`);
}

/** What curl would say of a failed connection, from Node's error codes. */
function networkText(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  switch (cause?.code) {
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
      return "Couldn't resolve host name";
    case 'ECONNREFUSED':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'could not connect to server';
    case 'ECONNRESET':
    case 'EPIPE':
      return 'error when receiving data';
    default:
      return cause?.message ?? (err instanceof Error ? err.message : String(err));
  }
}

async function readBody(res: Response): Promise<Buffer> {
  const declared = Number(res.headers.get('content-length') ?? Number.NaN);
  if (declared > HTTP_BODY_LIMIT)
    throw new HttpFailure(`the body is larger than the limit of ${HTTP_BODY_LIMIT} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  if (res.body === null) return Buffer.alloc(0);
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > HTTP_BODY_LIMIT) throw new HttpFailure(`the body is larger than the limit of ${HTTP_BODY_LIMIT} bytes`);
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}

function jsonDatum(text: string, what: string): Datum {
  try {
    return rebuild(JSON.parse(text));
  } catch {
    throw new HttpFailure(`failed to parse ${what} as JSON`);
  }
}

function rebuild(v: unknown): Datum {
  if (v === null || typeof v !== 'object') return v as Datum;
  if (Array.isArray(v)) return v.map(rebuild);
  const out = newObject();
  for (const k of Object.keys(v)) out[k] = rebuild((v as Record<string, unknown>)[k]);
  return out;
}

function resultOf(body: Buffer, contentType: string, format: string): Datum {
  const type = contentType.toLowerCase();
  const text = (): string => body.toString('utf8');
  switch (format) {
    case 'json':
      return jsonDatum(text(), 'the body');
    case 'jsonp':
      return jsonDatum(unwrapJsonp(text()), 'the body as JSONP');
    case 'text':
      return text();
    case 'binary':
      return { $reql_type$: 'BINARY', data: body.toString('base64') } as DatumObject;
    default:
      if (type.startsWith('application/json')) return jsonDatum(text(), 'the body');
      if (type.startsWith('text/javascript') || type.startsWith('application/javascript'))
        return jsonDatum(unwrapJsonp(text()), 'the body as JSONP');
      if (type.startsWith('text/') || type === '' || type.includes('charset')) return text();
      return { $reql_type$: 'BINARY', data: body.toString('base64') } as DatumObject;
  }
}

/** `callback({…});` → `{…}` */
function unwrapJsonp(text: string): string {
  const m = /^[\s]*[A-Za-z_$][\w$.]*\s*\(([\s\S]*)\)\s*;?\s*$/.exec(text);
  return m ? (m[1] as string) : text;
}

export const httpTerms: TermFamily = {
  [T.HTTP]: {
    min: 1,
    max: 1,
    optargs: [
      'data',
      'timeout',
      'method',
      'params',
      'header',
      'attempts',
      'redirects',
      'verify',
      'page',
      'page_limit',
      'auth',
      'result_format',
    ],
    eval: async (ev, node, env) => {
      // RethinkDB's `connect` permission (global) is what lets a user make the server fetch a URL.
      ev.deps.access?.require('connect');
      const url = await ev.string(node.args[0] as Node, env);
      const methodDatum = (await opt(ev, node, 'method', env)) ?? 'GET';
      if (typeof methodDatum !== 'string') throw typeError('STRING', methodDatum);
      if (!(METHODS as readonly string[]).includes(methodDatum))
        throw queryLogic(
          `\`method\` (${methodDatum}) is not recognized (GET, HEAD, POST, PUT, PATCH and DELETE are allowed).`,
        );
      const method = methodDatum as Method;
      let timeoutMs = DEFAULT_HTTP_TIMEOUT_MS;
      const timeout = await opt(ev, node, 'timeout', env);
      if (timeout !== undefined) {
        if (typeof timeout !== 'number') throw typeError('NUMBER', timeout);
        if (timeout < 0) throw queryLogic('`timeout` may not be negative.');
        timeoutMs = Math.floor(timeout * 1000);
      }
      if (node.optargs.page !== undefined || node.optargs.page_limit !== undefined)
        throw queryLogic('Wharf does not support `page` and `page_limit` in r.http (depagination).');
      const verify = await opt(ev, node, 'verify', env);
      if (verify !== undefined && typeof verify !== 'boolean') throw typeError('BOOL', verify);
      if (verify === false)
        throw queryLogic('Wharf does not support `verify: false` in r.http (certificates are always checked).');
      const redirects = (await opt(ev, node, 'redirects', env)) ?? 1;
      if (typeof redirects !== 'number') throw typeError('NUMBER', redirects);
      const attempts = await opt(ev, node, 'attempts', env);
      if (attempts !== undefined && typeof attempts !== 'number') throw typeError('NUMBER', attempts);
      const format = (await opt(ev, node, 'result_format', env)) ?? 'auto';
      if (typeof format !== 'string' || !['auto', 'json', 'jsonp', 'text', 'binary'].includes(format))
        throw queryLogic(
          `\`result_format\` (${typeof format === 'string' ? format : JSON.stringify(format)}) is not recognized, ('auto', 'json', 'jsonp', 'text', and 'binary' are allowed).`,
        );
      const header = await opt(ev, node, 'header', env);
      const headers = header === undefined ? new Headers() : headersOf(header);
      const auth = await opt(ev, node, 'auth', env);
      if (auth !== undefined) authOf(auth, headers);
      const params = await opt(ev, node, 'params', env);
      const data = await opt(ev, node, 'data', env);

      // curl's rule: a URL without a scheme is http.
      const full = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(url) ? url : `http://${url}`;
      const fail = (why: string) => nonExistence(`Error in HTTP ${method} of \`${url}\`: ${why}.`);
      // What RethinkDB's request worker reports also shows the answer's header and body (null
      // when there was none); its own time limit does not.
      const failWith = (why: string, header: Datum = null, answer: Datum = null) =>
        nonExistence(
          `Error in HTTP ${method} of \`${url}\`: ${why}.\nheader:\n${pretty(header)}\nbody:\n${pretty(answer)}`,
        );
      let target: URL;
      try {
        target = new URL(full);
      } catch {
        throw fail('URL using bad/illegal format or missing URL');
      }
      if (target.protocol !== 'http:' && target.protocol !== 'https:') throw fail('Unsupported protocol');
      if (params !== undefined) for (const [k, v] of paramsOf(params)) target.searchParams.append(k, v);
      let body: string | undefined;
      if (data !== undefined && data !== null) {
        if (method === 'GET' || method === 'HEAD') {
          // RethinkDB sends GET's `data` as form parameters in the URL.
          for (const [k, v] of paramsOf(data)) target.searchParams.append(k, v);
        } else if (typeof data === 'string') body = data;
        else {
          body = JSON.stringify(data);
          if (!headers.has('content-type')) headers.set('Content-Type', 'application/json');
        }
      }

      const abort = new AbortController();
      const timer = setTimeout(() => abort.abort(), timeoutMs);
      try {
        let res: Response;
        try {
          res = await fetch(target, {
            method,
            headers,
            ...(body === undefined ? {} : { body }),
            redirect: redirects > 0 ? 'follow' : 'manual',
            signal: abort.signal,
          });
        } catch (err) {
          if (abort.signal.aborted) throw fail(`timed out after ${seconds(timeoutMs)} seconds`);
          throw failWith(networkText(err));
        }
        let bytes: Buffer;
        try {
          bytes = await readBody(res);
        } catch (err) {
          if (abort.signal.aborted) throw fail(`timed out after ${seconds(timeoutMs)} seconds`);
          throw failWith(err instanceof HttpFailure ? err.message : networkText(err));
        }
        if (res.status < 200 || res.status >= 300) {
          const header = newObject();
          for (const [k, v] of res.headers) header[k] = v;
          throw failWith(`status code ${res.status}`, header, bytes.length > 0 ? bytes.toString('utf8') : null);
        }
        if (method === 'HEAD') return null;
        try {
          return resultOf(bytes, res.headers.get('content-type') ?? '', format);
        } catch (err) {
          if (err instanceof HttpFailure) throw failWith(err.message);
          throw err;
        }
      } finally {
        clearTimeout(timer);
      }
    },
  },
};
