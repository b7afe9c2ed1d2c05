/**
 * The ReQL term families through the official `rethinkdb` driver against a real Wharf server
 * on 127.0.0.1: strings, numbers, arrays, transforms, aggregation and GROUP, joins, datum and
 * type terms (coerce_to, literal, args, info), times. Each case asserts the result, or the
 * error's class and text. With RETHINKDB_BIN set (a RethinkDB 2.4 binary), the same cases run
 * against a real RethinkDB too, so the expectations are checked against the reference.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect as netConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import rethinkdb from 'rethinkdb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverForSuite } from '../helpers/server-suite.js';
import { until } from '../helpers/until.js';

type Any = any;
const r = rethinkdb as Any;

const RETHINKDB_BIN = process.env.RETHINKDB_BIN;
if (!RETHINKDB_BIN) console.warn('reql-terms.test: RETHINKDB_BIN is not set, the real RethinkDB cases are skipped');

interface Case {
  name: string;
  q: () => Any;
  /** The result; or the error: its driver class name and a text it must contain. */
  want?: unknown;
  error?: [string, string];
  /** Compare as a set (order not specified by ReQL). */
  unordered?: boolean;
}

const FAMILIES: Record<string, Case[]> = {
  strings: [
    { name: 'split on whitespace', q: () => r.expr('  a b\tc \n').split(), want: ['a', 'b', 'c'] },
    { name: 'split on a delimiter keeps empties', q: () => r.expr('a,,b').split(','), want: ['a', '', 'b'] },
    { name: 'split with a limit', q: () => r.expr('a b c d').split(null, 2), want: ['a', 'b', 'c d'] },
    { name: 'split into characters', q: () => r.expr('abc').split(''), want: ['a', 'b', 'c'] },
    {
      name: 'split limit out of range',
      q: () => r.expr('a').split(' ', -2),
      error: ['ReqlQueryLogicError', 'Error: `split` size argument must be in range [-1,'],
    },
    { name: 'upcase is ASCII only', q: () => r.expr('abcé').upcase(), want: 'ABCé' },
    {
      name: 'match with groups',
      q: () => r.expr('id: 42').match('(\\d+)'),
      want: { str: '42', start: 4, end: 6, groups: [{ str: '42', start: 4, end: 6 }] },
    },
    { name: 'match without a match', q: () => r.expr('abc').match('^x'), want: null },
  ],
  numbers: [
    {
      name: 'floor, ceil, round',
      q: () => r.expr([r.floor(-1.5), r.ceil(-1.5), r.round(-2.5), r.round(2.5)]),
      want: [-2, -1, -3, 3],
    },
    { name: 'random integer in range', q: () => r.random(3, 4), want: 3 },
    {
      name: 'random with bounds reversed',
      q: () => r.random(5, 2),
      error: ['ReqlQueryLogicError', 'Lower bound (5) is not less than upper bound (2).'],
    },
    {
      name: 'bit ops',
      q: () =>
        r.expr([
          r.expr(12).bitAnd(10),
          r.expr(12).bitOr(3),
          r.expr(1).bitSal(4),
          r.expr(-16).bitSar(2),
          r.expr(5).bitNot(),
        ]),
      want: [8, 15, 16, -4, -6],
    },
    { name: 'array times a number', q: () => r.expr([1, 2]).mul(2), want: [1, 2, 1, 2] },
    {
      name: 'mod of a non-integer',
      q: () => r.expr(1.5).mod(1),
      error: ['ReqlQueryLogicError', 'Number not an integer: 1.5'],
    },
    { name: 'time minus time', q: () => r.epochTime(10).sub(r.epochTime(4)), want: 6 },
  ],
  arrays: [
    { name: 'slice with negative indexes', q: () => r.expr([0, 1, 2, 3, 4]).slice(-3, -1), want: [2, 3] },
    {
      name: 'slice closed right bound',
      q: () => r.expr([0, 1, 2, 3]).slice(1, 2, { rightBound: 'closed' }),
      want: [1, 2],
    },
    { name: 'slice a string by characters', q: () => r.expr('héllo').slice(1, 3), want: 'él' },
    { name: 'slice a stream', q: () => r.range(10).slice(2, 4).coerceTo('array'), want: [2, 3] },
    {
      name: 'insert_at / delete_at / change_at / splice_at',
      q: () =>
        r.expr([
          r.expr([1, 3]).insertAt(1, 2),
          r.expr([1, 2, 3]).deleteAt(-1),
          r.expr([1, 2]).changeAt(0, 9),
          r.expr([1, 4]).spliceAt(1, [2, 3]),
        ]),
      want: [
        [1, 2, 3],
        [1, 2],
        [9, 2],
        [1, 2, 3, 4],
      ],
    },
    {
      name: 'insert_at out of bounds',
      q: () => r.expr([1]).insertAt(5, 2),
      error: ['ReqlNonExistenceError', 'Index `5` out of bounds for array of size: `1`.'],
    },
    {
      name: 'set operations',
      q: () =>
        r.expr([
          r.expr([1, 2, 2]).setInsert(3),
          r.expr([1, 2]).setUnion([2, 3]),
          r.expr([1, 2, 3]).setIntersection([2, 3, 4]),
          r.expr([1, 2, 3]).setDifference([2]),
        ]),
      want: [
        [1, 2, 3],
        [1, 2, 3],
        [2, 3],
        [1, 3],
      ],
    },
    {
      name: 'offsets_of and contains',
      q: () => r.expr([r.expr(['a', 'b', 'a']).offsetsOf('a'), r.expr([1, 2]).contains(2, (x: Any) => x.gt(1))]),
      want: [[0, 2], true],
    },
  ],
  transforms: [
    { name: 'range', q: () => r.range(2, 5).coerceTo('array'), want: [2, 3, 4] },
    {
      name: 'map over two sequences',
      q: () => r.map([1, 2, 3], [10, 20], (a: Any, b: Any) => a.add(b)),
      want: [11, 22],
    },
    { name: 'concat_map', q: () => r.expr([1, 2]).concatMap((x: Any) => [x, x]), want: [1, 1, 2, 2] },
    { name: 'distinct', q: () => r.expr([3, 1, 3, 2, 1]).distinct(), want: [1, 2, 3] },
    { name: 'union', q: () => r.expr([1, 2]).union([3], r.range(4, 6)).coerceTo('array'), want: [1, 2, 3, 4, 5] },
    {
      name: 'union interleaved by field',
      q: () => r.expr([{ a: 1 }, { a: 4 }]).union([{ a: 2 }, { a: 3 }], { interleave: 'a' }),
      want: [{ a: 1 }, { a: 2 }, { a: 3 }, { a: 4 }],
    },
    { name: 'with_fields', q: () => r.expr([{ a: 1, b: 2 }, { b: 3 }]).withFields('a'), want: [{ a: 1 }] },
    { name: 'sample size', q: () => r.range(10).sample(3).count(), want: 3 },
  ],
  aggregation: [
    {
      name: 'sum, avg, min, max',
      q: () =>
        r.expr([
          r.expr([1, 2, 3]).sum(),
          r.expr([1, 2, 3]).avg(),
          r.expr([3, 1, 2]).min(),
          r.expr([{ a: 1 }, { a: 5 }]).max('a'),
        ]),
      want: [6, 2, 1, { a: 5 }],
    },
    { name: 'reduce', q: () => r.expr([1, 2, 3, 4]).reduce((a: Any, b: Any) => a.mul(b)), want: 24 },
    {
      name: 'reduce of nothing',
      q: () => r.expr([]).reduce((a: Any, b: Any) => a.add(b)),
      error: ['ReqlNonExistenceError', 'Cannot reduce over an empty stream.'],
    },
    {
      name: 'avg of nothing',
      q: () => r.expr([]).avg(),
      error: ['ReqlNonExistenceError', 'Cannot take the average of an empty stream.'],
    },
    {
      name: 'fold with emit',
      q: () =>
        r
          .expr([1, 2, 3])
          .fold(0, (acc: Any, x: Any) => acc.add(x), { emit: (_o: Any, _x: Any, n: Any) => [n] })
          .coerceTo('array'),
      want: [1, 3, 6],
    },
    {
      name: 'group and count',
      q: () =>
        r
          .expr([{ k: 'a' }, { k: 'b' }, { k: 'a' }])
          .group('k')
          .count()
          .ungroup(),
      want: [
        { group: 'a', reduction: 2 },
        { group: 'b', reduction: 1 },
      ],
    },
    {
      name: 'group with a function, then sum',
      q: () =>
        r
          .range(6)
          .group((x: Any) => x.mod(2))
          .sum()
          .ungroup(),
      want: [
        { group: 0, reduction: 6 },
        { group: 1, reduction: 9 },
      ],
    },
    {
      name: 'group multi',
      q: () =>
        r
          .expr([{ t: ['x', 'y'] }, { t: ['x'] }])
          .group('t', { multi: true })
          .count()
          .ungroup(),
      want: [
        { group: 'x', reduction: 2 },
        { group: 'y', reduction: 1 },
      ],
    },
  ],
  joins: [
    {
      name: 'inner_join',
      q: () => r.expr([1, 2]).innerJoin([2, 3], (a: Any, b: Any) => a.eq(b)),
      want: [{ left: 2, right: 2 }],
    },
    {
      name: 'outer_join',
      q: () => r.expr([1, 2]).outerJoin([2], (a: Any, b: Any) => a.eq(b)),
      want: [{ left: 1 }, { left: 2, right: 2 }],
    },
    { name: 'zip', q: () => r.expr([{ left: { a: 1 }, right: { b: 2 } }]).zip(), want: [{ a: 1, b: 2 }] },
  ],
  datum: [
    { name: 'coerce_to number', q: () => r.expr('1.5').coerceTo('number'), want: 1.5 },
    {
      name: 'coerce_to a bad number',
      q: () => r.expr('1a').coerceTo('number'),
      error: ['ReqlQueryLogicError', 'Could not coerce `1a` to NUMBER.'],
    },
    {
      name: 'coerce_to string (JSON, keys in order)',
      q: () => r.expr({ b: 1, a: [true, null] }).coerceTo('string'),
      want: '{"a":[true,null],"b":1}',
    },
    {
      name: 'object to array and back',
      q: () => r.expr({ a: 1 }).coerceTo('array').coerceTo('object'),
      want: { a: 1 },
    },
    {
      name: 'coerce_to an unknown type',
      q: () => r.expr(1).coerceTo('foo'),
      error: ['ReqlQueryLogicError', 'Unknown Type: FOO'],
    },
    {
      name: 'coerce a number to an array',
      q: () => r.expr(1).coerceTo('array'),
      error: ['ReqlQueryLogicError', 'Cannot coerce NUMBER to ARRAY.'],
    },
    {
      name: 'literal in merge',
      q: () => r.expr({ a: { b: 1, c: 2 } }).merge({ a: r.literal({ b: 3 }) }),
      want: { a: { b: 3 } },
    },
    { name: 'args', q: () => r.add(r.args([1, 2, 3])), want: 6 },
    { name: 'values', q: () => r.expr({ b: 2, a: 1 }).values(), want: [1, 2] },
    { name: 'to_json_string', q: () => r.expr({ b: [1], a: 'x' }).toJsonString(), want: '{"a":"x","b":[1]}' },
    { name: 'info of a datum', q: () => r.expr(1).info(), want: { type: 'NUMBER', value: '1' } },
    { name: 'default catches a missing field', q: () => r.expr({}).getField('x').default(5), want: 5 },
  ],
  times: [
    {
      name: 'in_timezone and its portions',
      q: () =>
        r
          .epochTime(0)
          .inTimezone('-07:00')
          .do((t: Any) => [t.year(), t.month(), t.day(), t.hours(), t.dayOfWeek(), t.timezone()]),
      want: [1969, 12, 31, 17, 3, '-07:00'],
    },
    {
      name: 'to_iso8601',
      q: () => r.epochTime(1.5).inTimezone('+01:00').toISO8601(),
      want: '1970-01-01T01:00:01.500+01:00',
    },
    {
      name: 'date and time_of_day',
      q: () => r.epochTime(90061).do((t: Any) => [t.date().toEpochTime(), t.timeOfDay()]),
      want: [86400, 3661],
    },
    { name: 'during', q: () => r.epochTime(5).during(r.epochTime(5), r.epochTime(6)), want: true },
    {
      name: 'a bad timezone',
      q: () => r.now().inTimezone('+25:00'),
      error: ['ReqlQueryLogicError', 'Hours out of range in `+25:00`.'],
    },
  ],
};

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = netConnect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

const wharf = serverForSuite();
let reference: { proc: ChildProcess; port: number; dir: string } | undefined;

beforeAll(async () => {
  if (!RETHINKDB_BIN) return;
  const [port, cluster] = [await freePort(), await freePort()];
  const dir = mkdtempSync(join(tmpdir(), 'wharf-reql-ref-'));
  const proc = spawn(
    RETHINKDB_BIN,
    [
      '--bind',
      '127.0.0.1',
      '--driver-port',
      String(port),
      '--cluster-port',
      String(cluster),
      '--no-http-admin',
      '--directory',
      join(dir, 'data'),
    ],
    { stdio: 'ignore' },
  );
  reference = { proc, port, dir };
  await until('RethinkDB accepts connections', () => accepts(port), 100);
}, 120_000);

afterAll(async () => {
  if (!reference) return;
  const exited = once(reference.proc, 'exit');
  reference.proc.kill('SIGTERM');
  await exited;
  rmSync(reference.dir, { recursive: true, force: true });
});

const TARGETS: [string, () => number, boolean][] = [
  ['Wharf', () => wharf().driver.port, true],
  ['RethinkDB (RETHINKDB_BIN)', () => (reference as { port: number }).port, !!RETHINKDB_BIN],
];

const canonical = (v: unknown): string => JSON.stringify(v);

describe.each(TARGETS)('ReQL terms on %s', (_target, port, enabled) => {
  let conn: Any;
  beforeAll(async () => {
    if (enabled) conn = await r.connect({ host: '127.0.0.1', port: port() });
  });
  afterAll(async () => {
    await conn?.close().catch(() => {});
  });

  for (const [family, cases] of Object.entries(FAMILIES)) {
    describe(family, () => {
      for (const c of cases) {
        it.skipIf(!enabled)(c.name, async () => {
          let got: Any;
          let error: Any;
          try {
            got = await c.q().run(conn);
            if (got && typeof got.toArray === 'function') got = await got.toArray();
          } catch (err) {
            error = err;
          }
          if (c.error) {
            expect(error?.name, `result ${JSON.stringify(got)}`).toBe(c.error[0]);
            expect(error.msg ?? error.message).toContain(c.error[1]);
            return;
          }
          expect(error, String(error?.message)).toBeUndefined();
          if (c.unordered)
            expect([...got].map(canonical).sort()).toEqual([...(c.want as unknown[])].map(canonical).sort());
          else expect(got).toEqual(c.want);
        });
      }
    });
  }
});
