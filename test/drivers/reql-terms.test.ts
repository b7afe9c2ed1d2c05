import rethinkdb from 'rethinkdb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { referenceTargets } from '../helpers/reference-targets.js';

type Any = any;
const r = rethinkdb as Any;

interface Case {
  name: string;
  q: () => Any;
  /** The result; or the error: its driver class name and a text it must contain. */
  want?: unknown;
  error?: [string, string];
  /** Compare as a set (order not specified by ReQL). */
  unordered?: boolean;
  /** Run options (e.g. arrayLimit). */
  opts?: Record<string, unknown>;
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
  errors: [
    {
      name: 'a type error on null is NON_EXISTENCE',
      q: () => r.expr([1, 2]).insertAt(null, 1),
      error: ['ReqlNonExistenceError', 'Expected type NUMBER but found NULL.'],
    },
    { name: 'default catches it', q: () => r.expr([1, 2]).insertAt(null, 1).default('d'), want: 'd' },
    {
      name: 'a table where a datum is wanted',
      q: () => r.branch(r.db('test'), 1, 2),
      error: ['ReqlQueryLogicError', 'Expected type DATUM but found DATABASE:'],
    },
    {
      name: 'writes nested in map',
      q: () => r.expr([1]).map(() => r.db('test').tableCreate('never')),
      error: ['ReqlServerCompileError', 'Cannot nest writes or meta ops in stream operations.  Use FOR_EACH instead.'],
    },
    {
      name: 'an infinite stream in an aggregation',
      q: () => r.range().count(),
      error: [
        'ReqlQueryLogicError',
        'Cannot use an infinite stream with an aggregation function (`reduce`, `count`, etc.) or coerce it to an array.',
      ],
    },
    {
      name: 'an infinite stream stays lazy',
      q: () =>
        r
          .range()
          .map((x: Any) => x.mul(2))
          .limit(3),
      want: [0, 2, 4],
    },
    {
      name: 'r.error() outside default',
      q: () => r.error(),
      error: ['ReqlQueryLogicError', 'Empty ERROR term outside a default block.'],
    },
    {
      name: 'bracket on a non-object',
      q: () => r.expr(['a'])('x'),
      error: ['ReqlQueryLogicError', 'Cannot perform bracket on a non-object non-sequence `"a"`.'],
    },
  ],
  geo: [
    { name: 'point', q: () => r.point(-122, 37).toGeojson(), want: { type: 'Point', coordinates: [-122, 37] } },
    {
      name: 'a latitude out of range',
      q: () => r.point(0, 91),
      error: ['ReqlQueryLogicError', 'Latitude must be between -90 and 90.  Got 91.'],
    },
    {
      name: 'polygon closes its ring',
      q: () => r.polygon([0, 0], [0, 1], [1, 0]).toGeojson()('coordinates'),
      want: [
        [
          [0, 0],
          [0, 1],
          [1, 0],
          [0, 0],
        ],
      ],
    },
    {
      name: 'a self-intersecting polygon',
      q: () => r.polygon([0, 0], [0, 1], [1, 0], [-1, 0.5]),
      error: [
        'ReqlQueryLogicError',
        'Invalid LinearRing.  Are there antipodal or duplicate vertices? Is it self-intersecting?',
      ],
    },
    {
      name: 'geodesic distance (WGS84), in km',
      q: () => r.distance(r.point(-122, 37), r.point(-123, 37), { unit: 'km' }).mul(1000).round(),
      want: 89011,
    },
    { name: 'distance to a line', q: () => r.distance(r.point(0, 0), r.line([5, -1], [4, 2])).round(), want: 492471 },
    {
      name: 'intersects and includes',
      q: () =>
        r.expr([
          r.polygon([0, 0], [0, 2], [2, 2], [2, 0]).intersects(r.line([1, 1], [3, 3])),
          r.polygon([0, 0], [0, 2], [2, 2], [2, 0]).includes(r.point(1, 1)),
          r.polygon([0, 0], [0, 2], [2, 2], [2, 0]).includes(r.line([1, 1], [3, 3])),
        ]),
      want: [true, true, false],
    },
    {
      name: 'polygon_sub makes a hole',
      q: () =>
        r
          .polygon([0, 0], [0, 4], [4, 4], [4, 0])
          .polygonSub(r.polygon([1, 1], [1, 2], [2, 2], [2, 1]))
          .includes(r.point(1.5, 1.5)),
      want: false,
    },
    {
      name: 'circle with n vertices',
      q: () => r.circle([0, 0], 1000, { numVertices: 8 }).toGeojson()('coordinates')(0).count(),
      want: 9,
    },
  ],
  defaults: [
    {
      name: 'r.error() in a fallback rethrows the original error',
      q: () => r.expr({}).getField('b').default(r.error()),
      error: ['ReqlNonExistenceError', 'No attribute `b` in object:'],
    },
    { name: 'r.error() in a fallback on null gives null', q: () => r.expr(null).default(r.error()), want: null },
    { name: 'get_field on null is NON_EXISTENCE', q: () => r.expr({ a: null })('a')('b').default('d'), want: 'd' },
    {
      name: 'a filter function giving an object matches like an object',
      q: () =>
        r
          .expr([
            { a: 1, b: 1 },
            { a: 1, b: 2 },
          ])
          .filter((x: Any) => ({ a: x('b') })),
      want: [{ a: 1, b: 1 }],
    },
  ],
  tables: [
    {
      name: 'a duplicate key is worded with both documents',
      q: () => r.table('reql_terms').insert({ id: 1, b: 2 })('first_error'),
      want: 'Duplicate primary key `id`:\n{\n\t"a":\t1,\n\t"id":\t1\n}\n{\n\t"b":\t2,\n\t"id":\t1\n}',
    },
    {
      name: 'a changed primary key is worded with both documents',
      q: () => r.table('reql_terms').get(1).update({ id: 5 })('first_error'),
      want: 'Primary key `id` cannot be changed (`{\n\t"a":\t1,\n\t"id":\t1\n}` -> `{\n\t"a":\t1,\n\t"id":\t5\n}`).',
    },
    {
      name: 'min and max of a table go by its primary key',
      q: () => r.expr([r.table('reql_terms').min()('id'), r.table('reql_terms').max()('id')]),
      want: [1, 3],
    },
    {
      name: 'a group a reduction finds nothing in is dropped',
      q: () => r.table('reql_terms').group('a').sum('c').ungroup(),
      want: [{ group: 2, reduction: 7 }],
    },
    {
      name: 'reconfigure to what one server holds',
      q: () => r.table('reql_terms').reconfigure({ shards: 1, replicas: 1 })('reconfigured'),
      want: 1,
    },
    {
      name: 'reconfigure with no shards',
      q: () => r.table('reql_terms').reconfigure({ shards: 0, replicas: 1 }),
      error: ['ReqlQueryLogicError', 'Every table must have at least one shard.'],
    },
    {
      name: 'reconfigure past the servers there are',
      q: () => r.table('reql_terms').reconfigure({ shards: 1, replicas: 2 }),
      error: [
        'ReqlOpFailedError',
        "Can't put 2 replicas on servers with the tag `default` because there are only 1 servers with the tag `default`.",
      ],
    },
    { name: 'rebalance', q: () => r.table('reql_terms').rebalance()('rebalanced'), want: 1 },
    {
      name: 'a row of an ordered table is a selection that update takes',
      q: () =>
        r.expr([
          r.table('reql_terms').orderBy({ index: 'id' }).nth(0).typeOf(),
          r.table('reql_terms').orderBy({ index: 'id' }).nth(0).update({ z: 1 })('replaced'),
        ]),
      want: ['SELECTION<OBJECT>', 1],
    },
    {
      name: 'between on a between',
      q: () => r.table('reql_terms').between(r.minval, r.maxval).between(r.minval, r.maxval),
      error: ['ReqlQueryLogicError', 'Cannot perform multiple BETWEENs on the same table.'],
    },
    {
      name: 'between with null',
      q: () => r.table('reql_terms').between(null, 2),
      error: [
        'ReqlQueryLogicError',
        'Cannot use `null` in BETWEEN, use `r.minval` or `r.maxval` to denote unboundedness.',
      ],
    },
  ],
  'primary keys': [
    {
      name: 'arrays, booleans, numbers, times and strings are keys, in RethinkDB order',
      q: () =>
        r
          .table('reql_keys')
          .orderBy({ index: 'id' })('id')
          .map((k: Any) => r.branch(k.typeOf().eq('PTYPE<TIME>'), k.toEpochTime(), k)),
      want: [[0], [1, 'a'], [1, 'b'], true, 5, 100, 'x'],
    },
    {
      name: 'a time key is its instant, whatever the timezone',
      q: () => r.table('reql_keys').get(r.epochTime(100).inTimezone('-05:00'))('n'),
      want: 'time',
    },
    { name: 'get by an array key', q: () => r.table('reql_keys').get([1, 'b'])('n'), want: 'array b' },
    {
      name: 'between times',
      q: () => r.table('reql_keys').between(r.epochTime(50), r.epochTime(150))('n').coerceTo('array'),
      want: ['time'],
    },
    {
      name: 'between arrays, closed',
      q: () => r.table('reql_keys').between([1], [1, 'b'], { rightBound: 'closed' })('n').coerceTo('array'),
      want: ['array a', 'array b'],
    },
    {
      name: 'the same instant in another timezone is a duplicate key',
      q: () =>
        r
          .table('reql_keys')
          .insert({ id: r.epochTime(100).inTimezone('+03:00') })('first_error')
          .split('\n')(0),
      want: 'Duplicate primary key `id`:',
    },
    {
      name: 'a null key',
      q: () => r.table('reql_keys').insert({ id: null })('first_error'),
      want: 'Primary keys must be either a number, string, bool, pseudotype or array (got type NULL):\nnull',
    },
    {
      name: 'an object key',
      q: () => r.table('reql_keys').get({ a: 1 }),
      error: [
        'ReqlQueryLogicError',
        'Primary keys must be either a number, string, bool, pseudotype or array (got type OBJECT):',
      ],
    },
    {
      name: 'a null inside an array key',
      q: () => r.table('reql_keys').insert({ id: [1, null] })('first_error'),
      want: 'Array keys can only contain numbers, strings, bools,  pseudotypes, or arrays (got null of type NULL).',
    },
    {
      name: 'a key with a NUL byte',
      q: () =>
        r
          .table('reql_keys')
          .insert([{ id: 'a\u0000b' }, { id: 'y' }])
          .pluck('errors', 'inserted'),
      want: { errors: 1, inserted: 1 },
    },
    {
      name: 'a key over 127 characters, in RethinkDB words, before other errors',
      q: () => r.table('reql_keys').insert([{ id: 5 }, { id: 'k'.repeat(128) }])('first_error'),
      want: `Primary key too long (max 127 characters): "${'k'.repeat(128)}"`,
    },
  ],
  'groups and errors': [
    {
      name: 'a grouped table is a GROUPED_STREAM',
      q: () => r.table('reql_terms').group('a').typeOf(),
      want: 'GROUPED_STREAM',
    },
    {
      name: 'reduced or coerced groups are GROUPED_DATA',
      q: () =>
        r.expr([
          r.table('reql_terms').group('a').count().typeOf(),
          r.table('reql_terms').group('a').coerceTo('array').typeOf(),
        ]),
      want: ['GROUPED_DATA', 'GROUPED_DATA'],
    },
    {
      name: 'r.do on grouped data runs per group',
      q: () =>
        r
          .table('reql_terms')
          .group('a')
          .count()
          .do((n: Any) => n.mul(10))
          .ungroup()
          .orderBy('group'),
      want: [
        { group: 1, reduction: 20 },
        { group: 2, reduction: 10 },
      ],
    },
    {
      name: 'multi groups: every combination, an empty array in the null group',
      q: () =>
        r
          .expr([{ x: 1 }])
          .group(
            (row: Any) => [row('x'), 2],
            () => [],
            { multi: true },
          )
          .count()
          .ungroup(),
      want: [
        { group: [1, null], reduction: 1 },
        { group: [2, null], reduction: 1 },
      ],
    },
    {
      name: 'a group that count’s predicate finds nothing in is gone',
      q: () =>
        r
          .table('reql_terms')
          .group('a')
          .count((x: Any) => x('id').eq(1))
          .ungroup(),
      want: [{ group: 1, reduction: 1 }],
    },
    { name: 'distinct of a table is a stream', q: () => r.table('reql_terms').distinct().typeOf(), want: 'STREAM' },
    {
      name: 'a filter function giving a non-literal object is just truthy',
      q: () => r.expr(['ab', 'cd']).filter((x: Any) => x.match('a')),
      want: ['ab'],
    },
    {
      name: 'order_by puts a missing field before null',
      q: () => r.expr([{ a: 1 }, { a: null }, {}]).orderBy('a'),
      want: [{}, { a: null }, { a: 1 }],
    },
    {
      name: 'binary sorts after numbers and objects',
      q: () => r.expr([r.binary(Buffer.from([1])).gt(12), r.binary(Buffer.from([1])).gt({})]),
      want: [true, true],
    },
    {
      name: 'for_each with a table',
      // biome-ignore lint/suspicious/useIterableCallbackReturn: ReQL's forEach, whose function returns a write
      q: () => r.expr([1]).forEach(() => r.table('reql_terms')),
      error: ['ReqlQueryLogicError', 'FOR_EACH expects one or more basic write queries.'],
    },
    {
      name: 'for_each with a number',
      // biome-ignore lint/suspicious/useIterableCallbackReturn: ReQL's forEach, whose function returns a write
      q: () => r.expr([1]).forEach(() => 3),
      error: [
        'ReqlQueryLogicError',
        'FOR_EACH expects one or more basic write queries.  Expected type ARRAY but found NUMBER.',
      ],
    },
    {
      name: 'base64 with data after the padding',
      q: () => r.expr({ $reql_type$: 'BINARY', data: 'ABCDEF==$' }),
      error: ['ReqlQueryLogicError', "Invalid base64 format, data found after padding character '='."],
    },
    {
      name: 'base64 with a bad character',
      q: () => r.expr({ $reql_type$: 'BINARY', data: 'A^CD' }),
      error: ['ReqlQueryLogicError', "Invalid base64 character found: '^'."],
    },
    {
      name: 'base64 one character short',
      q: () => r.expr({ $reql_type$: 'BINARY', data: 'ABCDE' }),
      error: ['ReqlQueryLogicError', 'Invalid base64 length: 1 character remaining, cannot decode a full byte.'],
    },
    {
      name: 'get_all with a geometry',
      q: () => r.table('reql_terms').getAll(r.point(0, 0)),
      error: ['ReqlQueryLogicError', 'Cannot use a geospatial index with `get_all`. Use `get_intersecting` instead.'],
    },
    {
      name: 'an array over 100,000 elements is not stored',
      q: () =>
        r
          .table('reql_keys')
          .insert({ id: 'big', list: r.range(100001).coerceTo('array') })
          .pluck('errors', 'first_error'),
      opts: { arrayLimit: 200000 },
      want: { errors: 1, first_error: 'Array too large for disk writes (limit 100,000 elements).' },
    },
    {
      name: 'geojson without coordinates',
      q: () => r.geojson({ type: 'Point' }),
      error: ['ReqlNonExistenceError', 'No attribute `coordinates` in object:'],
    },
  ],
  'writes and joins': [
    {
      name: 'update reading a table needs non_atomic',
      q: () =>
        r
          .table('reql_terms')
          .get(1)
          .update({ d: r.table('reql_terms').nth(0) }),
      error: [
        'ReqlQueryLogicError',
        'Could not prove argument deterministic.  Maybe you want to use the non_atomic flag?',
      ],
    },
    {
      name: 'geo terms other than r.point are not deterministic for a write',
      q: () =>
        r
          .table('reql_terms')
          .get(2)
          .update({ g: r.line([0, 0], [1, 1]) }),
      error: [
        'ReqlQueryLogicError',
        'Could not prove argument deterministic.  Maybe you want to use the non_atomic flag?',
      ],
    },
    {
      name: 'r.now() is deterministic for a write',
      q: () => r.table('reql_terms').get(2).update({ t: r.now() })('replaced'),
      want: 1,
    },
    {
      name: 'an index function using r.now()',
      q: () => r.table('reql_terms').indexCreate('when', () => r.now()),
      error: ['ReqlQueryLogicError', 'Could not prove function deterministic.  Index functions must be deterministic.'],
    },
    {
      name: 'r.literal outside a merge',
      q: () => r.expr([1]).map(() => ({ a: r.literal(1) })),
      error: [
        'ReqlQueryLogicError',
        'Stray literal keyword found: literal is only legal inside of the object passed to merge or update and cannot nest inside other literals.',
      ],
    },
    {
      name: 'r.literal in a merge replaces the field',
      q: () => r.expr({ a: { b: 1, c: 2 } }).merge({ a: r.literal({ b: 3 }) }),
      want: { a: { b: 3 } },
    },
    {
      name: 'r.literal through r.args in a merge',
      q: () => r.expr({ a: { b: 1 } }).merge(r.args([{ a: r.literal({ c: 1 }) }])),
      want: { a: { c: 1 } },
    },
    {
      name: 'a duplicate within one insert reports the stored document',
      q: () => r.table('reql_keys').insert([{ id: 666 }, { id: 666 }], { returnChanges: 'always' })('changes'),
      want: [
        { new_val: { id: 666 }, old_val: null },
        {
          error: 'Duplicate primary key `id`:\n{\n\t"id":\t666\n}\n{\n\t"id":\t666\n}',
          new_val: { id: 666 },
          old_val: { id: 666 },
        },
      ],
    },
    {
      name: 'filter by a literal matches exactly',
      q: () => r.expr([{ id: 0, a: 1 }, { id: 0 }]).filter(r.literal({ id: 0 })),
      want: [{ id: 0 }],
    },
    {
      name: 'with non_atomic it runs',
      q: () =>
        r
          .table('reql_terms')
          .get(3)
          .update(
            { d: r.table('reql_terms').get(3)('a') },
            { nonAtomic: true },
          )('replaced'),
      want: 1,
    },
    {
      name: 'a conflict function reading a table',
      q: () => r.table('reql_terms').insert({ id: 1 }, { conflict: () => r.table('reql_terms').get(1) }),
      error: ['ReqlQueryLogicError', 'The conflict function passed to `insert` must be deterministic.'],
    },
    {
      name: 'replace of a missing row under another key',
      q: () => r.table('reql_terms').get('nope').replace({ id: 'other' }).pluck('errors', 'first_error'),
      want: { errors: 1, first_error: 'Primary key `id` cannot be changed (null -> {\n\t"id":\t"other"\n})' },
    },
    {
      name: 'return_vals is obsolete',
      q: () => r.table('reql_terms').insert({ id: 9 }, { return_vals: true } as Any),
      error: [
        'ReqlQueryLogicError',
        'Error: encountered obsolete optarg `return_vals`.  Use `return_changes` instead.',
      ],
    },
    {
      name: 'eq_join keeps the left order and skips rows without the key',
      q: () =>
        r
          .expr([{ k: 3 }, { x: 0 }, { k: 1 }])
          .eqJoin((row: Any) => row('k'), r.table('reql_terms'), { ordered: true })
          .zip()('id')
          .coerceTo('array'),
      want: [3, 1],
    },
    { name: 'zero shifted far left', q: () => r.expr(0).bitSal(3000), want: 0 },
    {
      name: 'delete on an array',
      q: () => r.expr([1, 2]).delete(),
      error: ['ReqlQueryLogicError', 'Expected type SELECTION but found DATUM:'],
    },
    {
      name: 'offsets_of a table',
      q: () => r.expr([1]).offsetsOf(r.table('reql_terms')),
      error: ['ReqlQueryLogicError', 'Expected type DATUM but found TABLE:'],
    },
    {
      name: 'pluck on a sequence of sequences',
      q: () => r.expr([[{ foo: 1 }]]).pluck('foo'),
      error: ['ReqlQueryLogicError', 'Cannot perform pluck on a sequence of sequences.'],
    },
    {
      name: 'a terminal on a changefeed',
      q: () => r.table('reql_terms').changes().orderBy('id'),
      error: [
        'ReqlQueryLogicError',
        'Cannot call a terminal (`reduce`, `count`, etc.) on an infinite stream (such as a changefeed).',
      ],
    },
  ],
  'geo semantics': [
    {
      name: "a hole's boundary belongs to the polygon",
      q: () =>
        r
          .polygon([1, 1], [2, 1], [2, 2], [1, 2])
          .polygonSub(r.polygon([1.1, 1.1], [1.9, 1.1], [1.9, 1.9], [1.1, 1.9]))
          .do((p: Any) => [
            p.intersects(r.point(1.5, 1.1)),
            p.includes(r.point(1.1, 1.1)),
            p.intersects(r.point(1.5, 1.5)),
          ]),
      want: [true, true, false],
    },
    {
      name: 'a line or a polygon touching a polygon at a point does not intersect it',
      q: () =>
        r
          .polygon([1, 1], [2, 1], [2, 2], [1, 2])
          .do((p: Any) => [
            p.intersects(r.line([2, 2], [3, 3])),
            p.intersects(r.line([2, 1.5], [3, 3])),
            p.intersects(r.polygon([2, 2], [3, 2], [3, 3], [2, 3])),
            p.intersects(r.polygon([2, 1.1], [3, 1.1], [3, 1.9], [2, 1.9])),
            p.intersects(r.line([1.5, 1.5], [3, 3])),
          ]),
      want: [false, false, false, true, true],
    },
    {
      name: 'distance to a short line, as RethinkDB computes it',
      q: () => r.distance(r.point(0, 0), r.line([0.000002, -1], [-0.000001, 1])),
      want: 0.055659745396754216,
    },
    {
      name: 'a circle too large, with RethinkDB numbers',
      q: () => r.circle([0, 0], 14000000),
      error: [
        'ReqlQueryLogicError',
        'Radius must be smaller than a quarter of the circumference along the minor axis of the reference ellipsoid.  Got 14000000m, but must be smaller than 9985163.1855612862855m.',
      ],
    },
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

const TARGETS = referenceTargets('reql-terms.test');

const canonical = (v: unknown): string => JSON.stringify(v);

describe.each(TARGETS)('ReQL terms on %s', (_target, port, enabled) => {
  let conn: Any;
  beforeAll(async () => {
    if (!enabled) return;
    conn = await r.connect({ host: '127.0.0.1', port: port() });
    await r.tableCreate('reql_terms').run(conn);
    await r
      .table('reql_terms')
      .insert([
        { id: 1, a: 1 },
        { id: 2, a: 2, c: 7 },
        { id: 3, a: 1 },
      ])
      .run(conn);
    await r.tableCreate('reql_keys').run(conn);
    await r
      .table('reql_keys')
      .insert([
        { id: 'x', n: 'string' },
        { id: r.epochTime(100).inTimezone('+02:00'), n: 'time' },
        { id: 5, n: 'number' },
        { id: true, n: 'bool' },
        { id: [1, 'b'], n: 'array b' },
        { id: [1, 'a'], n: 'array a' },
        { id: [0], n: 'array 0' },
      ])
      .run(conn);
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
            got = await c.q().run(conn, c.opts ?? {});
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
