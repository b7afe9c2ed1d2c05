/**
 * `r.js` and `r.http` through the official `rethinkdb` driver against a real server process on
 * 127.0.0.1: r.js values and functions converted as RethinkDB does, its errors and their types,
 * what the code can reach (no Node globals), the time limit stopping a runaway loop while the
 * server keeps answering another connection, the memory and queue limits; r.http against a local
 * HTTP server (JSON, text, status and connection errors, its own time limit, what is refused).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import rethinkdb from 'rethinkdb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverForSuite } from '../helpers/server-suite.js';

type Any = any;
const r = rethinkdb as Any;

/** The error a query fails with (its class name and message), or a failure if it succeeds. */
async function failure(q: Any, conn: Any): Promise<{ name: string; msg: string }> {
  try {
    const v = await q.run(conn);
    throw new Error(`expected the query to fail; it returned ${JSON.stringify(v)}`);
  } catch (err) {
    const e = err as { name: string; msg?: string; message: string };
    if (e.msg === undefined) throw err;
    return { name: e.name, msg: e.msg };
  }
}

describe('r.js', () => {
  const server = serverForSuite({ args: ['--limit', 'jsWorkerMemoryMb=32'] });
  let conn: Any;
  let other: Any;

  beforeAll(async () => {
    conn = await r.connect({ host: '127.0.0.1', port: server().driver.port });
    other = await r.connect({ host: '127.0.0.1', port: server().driver.port });
  });
  afterAll(async () => {
    await conn?.close();
    await other?.close();
  });

  it('evaluates to datums: numbers, strings, arrays, objects, null, booleans and Dates (times)', async () => {
    expect(await r.js('1 + 1; 2 + 2').run(conn)).toBe(4);
    expect(await r.js('"a" + "b"').run(conn)).toBe('ab');
    expect(await r.js('[1, "x", [null, true]]').run(conn)).toEqual([1, 'x', [null, true]]);
    expect(await r.js('({a: {b: [1, 2]}, c: false})').run(conn)).toEqual({ a: { b: [1, 2] }, c: false });
    expect(await r.js("new Date('2012-08-01')").toISO8601().run(conn)).toBe('2012-08-01T00:00:00+00:00');
    expect(await r.js('1 + 2', { timeout: 1.2 }).run(conn)).toBe(3);
  });

  it('a function it returns is a ReQL function: do, map, filter, several sequences, times as Dates', async () => {
    expect(await r.do(1, 2, r.js('(function(a, b) { return a + b; })')).run(conn)).toBe(3);
    expect(await r.do(1, 2, r.js('(function(a, b, c) { return a; })')).run(conn)).toBe(1);
    expect(await r.expr([1, 2, 3]).map(r.js('(function(a) { return a + 1; })')).run(conn)).toEqual([2, 3, 4]);
    expect(await r.expr([1, 2, 3]).filter(r.js('(function(a) { return a >= 2; })')).run(conn)).toEqual([2, 3]);
    const pairs = await r.range(3).map(r.range(5), r.js('(function(x, y){ return [x, y]; })')).run(conn);
    expect(await pairs.toArray()).toEqual([
      [0, 0],
      [1, 1],
      [2, 2],
    ]);
    expect(await r.epochTime(1375147296.681).do(r.js('(function(d) { return d; })')).toEpochTime().run(conn)).toBe(
      1375147296.681,
    );
  });

  it("fails as RethinkDB does: undefined, NaN, RegExp, binary arguments, a thrown exception, a function as the query's result", async () => {
    expect(await failure(r.do(1, 2, r.js('(function(a, b, c) { return c; })')), conn)).toEqual({
      name: 'ReqlQueryLogicError',
      msg: 'Cannot convert javascript `undefined` to ql::datum_t.',
    });
    expect((await failure(r.js('0 / 0'), conn)).msg).toBe('Number return value is not finite.');
    expect((await failure(r.js('/a/'), conn)).msg).toBe('Cannot convert RegExp to ql::datum_t.');
    expect((await failure(r.binary(Buffer.from('ab')).do(r.js('(function(b) { return 1; })')), conn)).msg).toBe(
      '`r.binary` data cannot be used in `r.js`.',
    );
    expect(await failure(r.js('throw new TypeError("nope")'), conn)).toEqual({
      name: 'ReqlQueryLogicError',
      msg: 'TypeError: nope',
    });
    expect((await failure(r.js('var o = {}; o.o = o; o'), conn)).msg).toBe(
      'Recursion limit exceeded in js_to_json (circular reference?).',
    );
    expect((await failure(r.js('(function() { return 1; })'), conn)).msg).toBe(
      'Query result must be of type DATUM, GROUPED_DATA, or STREAM (got FUNCTION).',
    );
    expect((await failure(r.expr([1, 2, 3]).map(r.js('1')), conn)).msg).toMatch(
      /^Expected type FUNCTION but found DATUM:/,
    );
  });

  it('the code reaches no Node globals: no process, require, timers, Buffer or import()', async () => {
    for (const name of ['process', 'require', 'setTimeout', 'setImmediate', 'Buffer', 'module', 'fetch'])
      expect(await r.js(`typeof ${name}`).run(conn)).toBe('undefined');
    // The classic escape reaches the context's own Function, whose global has no process either.
    expect(await r.js("this.constructor.constructor('return typeof process')()").run(conn)).toBe('undefined');
    // import() fails inside the code (and leaves the worker serving).
    expect(await r.js('var p = import("node:fs"); typeof p.then').run(conn)).toBe('function');
    expect(await r.js('1').run(conn)).toBe(1);
  });

  it('each evaluation has a fresh context: globals set by one query are gone in the next', async () => {
    expect(await r.js('leaked = 42; leaked').run(conn)).toBe(42);
    expect(await r.js('typeof leaked').run(conn)).toBe('undefined');
  });

  it('a runaway loop is stopped by its time limit while the server answers another connection meanwhile', async () => {
    let settled = false;
    const loop = failure(r.js('while(true) {}', { timeout: 3 }), conn).finally(() => {
      settled = true;
    });
    // The other connection is answered, r.js included, while the loop still runs.
    expect(await r.expr(1).add(1).run(other)).toBe(2);
    expect(await r.js('6 * 7').run(other)).toBe(42);
    expect(settled).toBe(false);
    expect(await loop).toEqual({
      name: 'ReqlQueryLogicError',
      msg: 'JavaScript query `while(true) {}` timed out after 3.000 seconds.',
    });
    // A function's call has the limit of the r.js that made it.
    expect(await failure(r.expr('foo').do(r.js('(function(x) { while(true) {} })', { timeout: 1.5 })), conn)).toEqual({
      name: 'ReqlQueryLogicError',
      msg: 'JavaScript query `(function(x) { while(true) {} })` timed out after 1.500 seconds.',
    });
    // The stopped threads were replaced.
    expect(await r.js('1 + 1').run(conn)).toBe(2);
  });

  it('code past the memory limit fails with RESOURCE_LIMIT naming it; the next evaluation runs', async () => {
    const e = await failure(r.js('var a = []; while (true) a.push(new Array(100000).fill(1));', { timeout: 30 }), conn);
    expect(e.name).toBe('ReqlResourceLimitError');
    expect(e.msg).toContain('ran out of memory (the limit is 32 MiB per r.js worker, jsWorkerMemoryMb)');
    expect(await r.js('[1, 2].length').run(conn)).toBe(2);
  });

  it('writes: r.js in update/replace needs non_atomic, as in RethinkDB', async () => {
    await r.tableCreate('js_writes').run(conn);
    await r.table('js_writes').insert({ id: 1 }).run(conn);
    expect(
      (
        await failure(
          r
            .table('js_writes')
            .get(1)
            .update({ d: r.js('5') }),
          conn,
        )
      ).msg,
    ).toBe('Could not prove argument deterministic.  Maybe you want to use the non_atomic flag?');
    expect(
      await r
        .table('js_writes')
        .get(1)
        .update({ d: r.js('5') }, { nonAtomic: true })
        .run(conn),
    ).toMatchObject({
      replaced: 1,
    });
    expect(await r.table('js_writes').get(1).run(conn)).toEqual({ id: 1, d: 5 });
  });
});

describe('r.js queue limit', () => {
  const server = serverForSuite({ args: ['--limit', 'jsWorkers=1', '--limit', 'jsQueue=1'] });

  it('past the queue an evaluation is refused with RESOURCE_LIMIT naming the limit', async () => {
    const conn = await r.connect({ host: '127.0.0.1', port: server().driver.port });
    try {
      const running = failure(r.js('while(true) {}', { timeout: 2 }), conn);
      const queued = failure(r.js('while(true) {}', { timeout: 2 }), conn);
      // The same shape as the two before it, so the three reach the pool in the order sent.
      const refused = await failure(r.js('1', { timeout: 2 }), conn);
      expect(refused).toEqual({
        name: 'ReqlResourceLimitError',
        msg: 'Too many r.js evaluations are waiting for a worker (the limit is 1, jsQueue).',
      });
      expect((await running).msg).toContain('timed out after 2.000 seconds');
      expect((await queued).msg).toContain('timed out after 2.000 seconds');
      expect(await r.js('1').run(conn)).toBe(1);
    } finally {
      await conn.close();
    }
  });
});

describe('r.http', () => {
  const server = serverForSuite();
  let conn: Any;
  let web: Server;
  let base: string;

  beforeAll(async () => {
    conn = await r.connect({ host: '127.0.0.1', port: server().driver.port });
    web = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname === '/json') {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ method: req.method, q: url.searchParams.get('q'), auth: req.headers.authorization }));
      } else if (url.pathname === '/echo') {
        let body = '';
        req.on('data', (c) => {
          body += c;
        });
        req.on('end', () => {
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify({ method: req.method, type: req.headers['content-type'], body }));
        });
      } else if (url.pathname === '/text') {
        res.setHeader('content-type', 'text/plain');
        res.end('hello');
      } else if (url.pathname === '/hang') {
        // Never answers: the request's own time limit ends it.
      } else {
        res.statusCode = 404;
        res.end('no');
      }
    });
    await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
    base = `127.0.0.1:${(web.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await conn?.close();
    web.closeAllConnections();
    await new Promise((resolve) => web.close(resolve));
  });

  it('GET answers parsed JSON or text; params, basic auth and a JSON body for POST', async () => {
    expect(await r.http(`${base}/json`, { params: { q: 'x' } }).run(conn)).toEqual({ method: 'GET', q: 'x' });
    expect(await r.http(`http://${base}/text`).run(conn)).toBe('hello');
    const authed = await r.http(`${base}/json`, { auth: { user: 'u', pass: 'p' } }).run(conn);
    expect(authed.auth).toBe(`Basic ${Buffer.from('u:p').toString('base64')}`);
    expect(await r.http(`${base}/echo`, { method: 'POST', data: { a: 1 } }).run(conn)).toEqual({
      method: 'POST',
      type: 'application/json',
      body: '{"a":1}',
    });
  });

  it('fails as RethinkDB does (NON_EXISTENCE, so default() catches it): status, unreachable host, time limit', async () => {
    // As RethinkDB: the answer's header and body follow the status.
    const status = await failure(r.http(`${base}/missing`), conn);
    expect(status.name).toBe('ReqlNonExistenceError');
    expect(status.msg).toMatch(
      new RegExp(`^Error in HTTP GET of \`${base}/missing\`: status code 404\\.\nheader:\n\\{\n`),
    );
    expect(status.msg).toMatch(/\nbody:\n"no"$/);
    // A port nothing listens on: a server's own, once it is closed.
    const spare = createServer();
    await new Promise<void>((resolve) => spare.listen(0, '127.0.0.1', resolve));
    const closedPort = (spare.address() as AddressInfo).port;
    await new Promise((resolve) => spare.close(resolve));
    expect(await failure(r.http(`127.0.0.1:${closedPort}/x`), conn)).toEqual({
      name: 'ReqlNonExistenceError',
      msg: `Error in HTTP GET of \`127.0.0.1:${closedPort}/x\`: could not connect to server.\nheader:\nnull\nbody:\nnull`,
    });
    expect(await failure(r.http(`${base}/hang`, { method: 'PUT', timeout: 0.5 }), conn)).toEqual({
      name: 'ReqlNonExistenceError',
      msg: `Error in HTTP PUT of \`${base}/hang\`: timed out after 0.500 seconds.`,
    });
    expect(await r.http(`${base}/missing`).default('fallback').run(conn)).toBe('fallback');
  });

  it('refuses what it does not do, naming the option', async () => {
    expect((await failure(r.http(`${base}/json`, { page: 'link-next', pageLimit: 2 }), conn)).msg).toBe(
      'Wharf does not support `page` and `page_limit` in r.http (depagination).',
    );
    expect((await failure(r.http(`${base}/json`, { verify: false }), conn)).msg).toBe(
      'Wharf does not support `verify: false` in r.http (certificates are always checked).',
    );
    expect((await failure(r.http(`${base}/json`, { method: 'BREW' }), conn)).msg).toBe(
      '`method` (BREW) is not recognized (GET, HEAD, POST, PUT, PATCH and DELETE are allowed).',
    );
  });
});
