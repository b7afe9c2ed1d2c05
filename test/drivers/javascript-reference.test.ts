/**
 * r.js, r.http and write hooks answer as RethinkDB 2.4 does: the same queries through the official
 * driver, on Wharf and, when env RETHINKDB_BIN names a RethinkDB binary, on that server too, each
 * compared with the same expected answer or error (class and exact text).
 */
import { createServer } from 'node:net';
import rethinkdb from 'rethinkdb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { referenceTargets } from '../helpers/reference-targets.js';

type Any = any;
const r = rethinkdb as Any;

interface Case {
  name: string;
  q: (ctx: { closedPort: number }) => Any;
  want?: unknown;
  /** The driver's error class and the exact message. */
  error?: [string, string];
}

const hook3 = (_c: Any, _o: Any, n: Any) => n;

const CASES: Case[] = [
  { name: 'statements: the last value', q: () => r.js('1 + 1; 2 + 2'), want: 4 },
  {
    name: 'a function with more parameters than arguments',
    q: () => r.do(1, 2, r.js('(function(a, b, c) { return a; })')),
    want: 1,
  },
  {
    name: 'objects and arrays',
    q: () => r.js('({a: [1, "x", null], b: {c: true}})'),
    want: { a: [1, 'x', null], b: { c: true } },
  },
  {
    name: 'a time through a function',
    q: () => r.epochTime(5.5).do(r.js('(function(d) { return d; })')).toEpochTime(),
    want: 5.5,
  },
  {
    name: 'undefined',
    q: () => r.do(1, 2, r.js('(function(a, b, c) { return c; })')),
    error: ['ReqlQueryLogicError', 'Cannot convert javascript `undefined` to ql::datum_t.'],
  },
  { name: 'NaN', q: () => r.js('0 / 0'), error: ['ReqlQueryLogicError', 'Number return value is not finite.'] },
  { name: 'a RegExp', q: () => r.js('/a/'), error: ['ReqlQueryLogicError', 'Cannot convert RegExp to ql::datum_t.'] },
  {
    name: 'a function in a value',
    q: () => r.js('({f: function() {}})'),
    error: ['ReqlQueryLogicError', 'Cannot convert function to ql::datum_t.'],
  },
  {
    name: 'a symbol',
    q: () => r.js('Symbol("s")'),
    error: ['ReqlQueryLogicError', 'Unhandled value type when converting to ql::datum_t.'],
  },
  { name: 'an invalid Date', q: () => r.js('new Date(NaN)'), error: ['ReqlQueryLogicError', 'Non-finite number: nan'] },
  {
    name: 'a circular value',
    q: () => r.js('var o = {}; o.o = o; o'),
    error: ['ReqlQueryLogicError', 'Recursion limit exceeded in js_to_json (circular reference?).'],
  },
  {
    name: 'binary passed in',
    q: () => r.binary(Buffer.from('ab')).do(r.js('(function(b) { return 1; })')),
    error: ['ReqlQueryLogicError', '`r.binary` data cannot be used in `r.js`.'],
  },
  {
    name: 'minval passed in',
    q: () => r.minval.do(r.js('(function(b) { return 1; })')),
    error: ['ReqlQueryLogicError', '`r.minval` cannot be passed to `r.js`.'],
  },
  { name: 'a thrown number', q: () => r.js('throw 1'), error: ['ReqlQueryLogicError', '1'] },
  {
    name: 'a thrown TypeError',
    q: () => r.js('throw new TypeError("nope")'),
    error: ['ReqlQueryLogicError', 'TypeError: nope'],
  },
  {
    name: 'a function returned by a call',
    q: () => r.do(1, r.js('(function(a) { return function() {}; })')),
    error: ['ReqlQueryLogicError', 'Returning functions from within `r.js` is unsupported.'],
  },
  {
    name: 'a time limit of 0',
    q: () => r.js('1', { timeout: 0 }),
    error: ['ReqlQueryLogicError', 'JavaScript query `1` timed out after 0.000 seconds.'],
  },
  {
    name: 'a runaway loop',
    q: () => r.js('while(true) {}', { timeout: 0.5 }),
    error: ['ReqlQueryLogicError', 'JavaScript query `while(true) {}` timed out after 0.500 seconds.'],
  },
  {
    name: 'r.js in an atomic update',
    q: () =>
      r
        .table('js_ref')
        .get(1)
        .update({ d: r.js('5') }),
    error: [
      'ReqlQueryLogicError',
      'Could not prove argument deterministic.  Maybe you want to use the non_atomic flag?',
    ],
  },
  {
    name: 'r.js in a non-atomic update',
    q: () =>
      r
        .table('js_ref')
        .get(1)
        .update(
          { d: r.js('5') },
          { nonAtomic: true },
        )('replaced'),
    want: 1,
  },
  {
    name: 'a geo term (other than r.point) in an atomic update',
    q: () =>
      r
        .table('js_ref')
        .get(1)
        .update({ l: r.line([0, 0], [1, 1]) }),
    error: [
      'ReqlQueryLogicError',
      'Could not prove argument deterministic.  Maybe you want to use the non_atomic flag?',
    ],
  },
  {
    name: 'r.point in an atomic update',
    q: () =>
      r
        .table('js_ref')
        .get(1)
        .update({ p: r.point(1, 2) })('replaced'),
    want: 1,
  },
  {
    name: 'r.http to a closed port',
    q: ({ closedPort }) => r.http(`127.0.0.1:${closedPort}/x`),
    error: [
      'ReqlNonExistenceError',
      `Error in HTTP GET of \`127.0.0.1:CLOSED/x\`: could not connect to server.\nheader:\nnull\nbody:\nnull`,
    ],
  },
  {
    name: 'a write hook of one parameter',
    q: () => r.table('js_ref').setWriteHook((c: Any) => c),
    error: ['ReqlQueryLogicError', 'Write hook functions must expect 3 arguments.'],
  },
  {
    name: 'a write hook calling r.now()',
    q: () => r.table('js_ref').setWriteHook((_c: Any, _o: Any, n: Any) => n.merge({ t: r.now() })),
    error: [
      'ReqlQueryLogicError',
      'Could not prove function deterministic.  Write hook functions must be deterministic.',
    ],
  },
  { name: 'a write hook set', q: () => r.table('js_ref').setWriteHook(hook3), want: { created: 1 } },
  {
    name: 'the write hook given back as its binary',
    q: () =>
      r
        .table('js_ref')
        .getWriteHook()('function')
        .do((f: Any) => r.table('js_ref').setWriteHook(f)),
    want: { replaced: 1 },
  },
  {
    name: 'a hook returning null',
    q: () => r.table('js_ref').setWriteHook((_c: Any, _o: Any, _n: Any) => null),
    want: { replaced: 1 },
  },
  {
    name: 'an insert the hook turns into a deletion',
    q: () => r.table('js_ref').insert({ id: 2 })('first_error'),
    want: 'A write hook function must not turn a replace/insert into a deletion.',
  },
  {
    name: 'a hook returning an object',
    q: () => r.table('js_ref').setWriteHook((_c: Any, _o: Any, _n: Any) => ({})),
    want: { replaced: 1 },
  },
  {
    name: 'a delete the hook turns into a write',
    q: () => r.table('js_ref').get(1).delete()('first_error'),
    want: 'A write hook function must not turn a deletion into a replace/insert.',
  },
  {
    name: 'a failing hook',
    q: () => r.table('js_ref').setWriteHook((_c: Any, _o: Any, _n: Any) => r.error('OH NOES!')),
    want: { replaced: 1 },
  },
  {
    name: 'its error on update',
    q: () => r.table('js_ref').get(1).update({ x: 1 })('first_error'),
    want: 'Error in write hook: OH NOES!',
  },
  { name: 'the hook removed', q: () => r.table('js_ref').setWriteHook(null), want: { deleted: 1 } },
];

const TARGETS = referenceTargets('javascript-reference.test');
let closedPort = 0;

beforeAll(async () => {
  const spare = createServer();
  await new Promise<void>((resolve) => spare.listen(0, '127.0.0.1', resolve));
  closedPort = (spare.address() as { port: number }).port;
  await new Promise((resolve) => spare.close(resolve));
});

describe.each(TARGETS)('r.js, r.http and write hooks on %s', (_target, port, enabled) => {
  let conn: Any;
  beforeAll(async () => {
    if (!enabled) return;
    conn = await r.connect({ host: '127.0.0.1', port: port() });
    await r.tableCreate('js_ref').run(conn);
    await r.table('js_ref').insert({ id: 1 }).run(conn);
  });
  afterAll(async () => {
    await conn?.close().catch(() => {});
  });

  // In order: the write hook cases build on each other.
  for (const c of CASES) {
    it.skipIf(!enabled)(c.name, async () => {
      let got: unknown;
      try {
        got = await c.q({ closedPort }).run(conn);
      } catch (err) {
        const e = err as { name: string; msg?: string };
        if (e.msg === undefined) throw err;
        expect(c.error, `unexpected error ${e.name}: ${e.msg}`).toBeDefined();
        expect([e.name, e.msg.replaceAll(String(closedPort), 'CLOSED')]).toEqual(c.error);
        return;
      }
      expect(c.error, `expected an error, got ${JSON.stringify(got)}`).toBeUndefined();
      expect(got).toEqual(c.want);
    });
  }
});
