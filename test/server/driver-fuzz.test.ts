/**
 * Property tests (fast-check) against a real server process over real driver-port connections:
 * generated ReQL terms and datums (prototype-named keys, deep nesting, odd numbers and strings,
 * writes) get response frames that always parse as JSON and are well-formed responses; the answers
 * about prototype-named keys are those of a model (own fields only); queries framed and split
 * arbitrarily on the socket are all answered, each under its token; handshakes with garbage,
 * truncation or a wrong magic number end cleanly. After each property the server still serves.
 * Runs are bounded (numRuns) so the file takes well under a minute.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeDir, type SpawnedServer, spawnServer } from '../helpers/spawn-server.js';
import { openSocket, type RawConnection, type RawResponse, rawConnect, V1_0 } from './raw-driver.js';

const T = {
  DATUM: 1,
  MAKE_ARRAY: 2,
  VAR: 10,
  ERROR: 12,
  TABLE: 15,
  GET: 16,
  EQ: 17,
  LT: 19,
  ADD: 24,
  GET_FIELD: 31,
  HAS_FIELDS: 32,
  PLUCK: 33,
  WITHOUT: 34,
  MERGE: 35,
  MAP: 38,
  FILTER: 39,
  ORDER_BY: 41,
  COUNT: 43,
  TYPE_OF: 52,
  UPDATE: 53,
  REPLACE: 55,
  INSERT: 56,
  FUNC: 69,
  DEFAULT: 92,
  KEYS: 94,
  JSON: 98,
  OBJECT: 143,
  BRACKET: 170,
} as const;
const RESPONSE_TYPES = new Set([1, 2, 3, 4, 5, 16, 17, 18]);
const ERROR_TYPES = new Set([1000000, 2000000, 3000000, 3100000, 4100000, 4200000, 5000000, 6000000]);
const PROTOTYPE_KEYS = [
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '__defineGetter__',
  'isPrototypeOf',
  'prototype',
];

// ---- generators ----

const key = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...PROTOTYPE_KEYS) },
  { weight: 2, arbitrary: fc.constantFrom('a', 'b', 'id', '$reql_type$', '') },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 6 }) },
);
const plainKey = key.filter((k) => k !== '$reql_type$');
const oddNumber = fc.oneof(
  fc.integer(),
  fc.double({ noDefaultInfinity: true, noNaN: true }),
  fc.constantFrom(0, -0, 0.1, 1e308, -1e308, 5e-324, 2 ** 53, -(2 ** 53) - 2, 1e21),
);
const oddString = fc.oneof(
  key,
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.string({ unit: 'grapheme', maxLength: 10 }),
);
const scalar = fc.oneof(fc.constant(null), fc.boolean(), oddNumber, oddString);
const { datum } = fc.letrec((tie) => ({
  datum: fc.oneof(
    { depthSize: 'small', maxDepth: 4 },
    scalar,
    fc.array(tie('datum'), { maxLength: 4 }),
    fc.dictionary(key, tie('datum'), { maxKeys: 4 }),
  ),
}));

/** A datum as a term: arrays as MAKE_ARRAY, objects as MAKE_OBJ (their values terms). */
function datumTerm(d: unknown): unknown {
  if (Array.isArray(d)) return [T.MAKE_ARRAY, d.map(datumTerm)];
  if (d !== null && typeof d === 'object') {
    const out = Object.create(null) as Record<string, unknown>;
    for (const k of Object.keys(d)) out[k] = datumTerm((d as Record<string, unknown>)[k]);
    return out;
  }
  return d;
}

/** JSON text nested `depth` levels of arrays and objects. */
const deepText = fc
  .tuple(fc.integer({ min: 100, max: 10_000 }), fc.boolean())
  .map(([depth, objects]) =>
    objects ? `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}` : `${'['.repeat(depth)}1${']'.repeat(depth)}`,
  );

const lambda = (body: unknown): unknown => [T.FUNC, [[T.MAKE_ARRAY, [1]], body]];
const row = [T.VAR, [1]];

const { term } = fc.letrec((tie) => {
  const t = tie('term');
  return {
    term: fc.oneof(
      { depthSize: 'small', maxDepth: 5 },
      { weight: 3, arbitrary: datum.map(datumTerm) },
      datum.map((d) => [T.DATUM, [d]]),
      fc.tuple(t, fc.oneof(key, fc.integer({ min: -3, max: 3 }))).map(([x, k]) => [T.BRACKET, [x, k]]),
      fc.tuple(t, key).map(([x, k]) => [T.GET_FIELD, [x, k]]),
      fc.tuple(t, fc.array(key, { minLength: 1, maxLength: 3 })).map(([x, ks]) => [T.HAS_FIELDS, [x, ...ks]]),
      fc.tuple(t, fc.array(key, { minLength: 1, maxLength: 3 })).map(([x, ks]) => [T.PLUCK, [x, ...ks]]),
      fc.tuple(t, fc.array(key, { minLength: 1, maxLength: 3 })).map(([x, ks]) => [T.WITHOUT, [x, ...ks]]),
      fc.tuple(t, t).map(([x, y]) => [T.MERGE, [x, y]]),
      t.map((x) => [T.KEYS, [x]]),
      t.map((x) => [T.COUNT, [x]]),
      t.map((x) => [T.TYPE_OF, [x]]),
      fc.array(fc.tuple(key, t), { maxLength: 3 }).map((pairs) => [T.OBJECT, pairs.flat()]),
      fc.tuple(t, t).map(([x, y]) => [T.DEFAULT, [x, y]]),
      fc.tuple(t, t).map(([x, y]) => [T.ADD, [x, y]]),
      fc.tuple(t, t).map(([x, y]) => [T.EQ, [x, y]]),
      fc.tuple(t, t).map(([x, y]) => [T.LT, [x, y]]),
      fc.tuple(t, key).map(([x, k]) => [T.MAP, [x, lambda([T.BRACKET, [row, k]])]]),
      fc.tuple(t, t).map(([x, p]) => [T.FILTER, [x, p]]),
      fc.tuple(t, key).map(([x, k]) => [T.ORDER_BY, [x, k]]),
      fc
        .oneof(
          datum.map((d) => JSON.stringify(d)),
          deepText,
          fc.string({ maxLength: 20 }),
        )
        .map((s) => [T.JSON, [s]]),
      oddString.map((s) => [T.ERROR, [s]]),
      fc.tuple(fc.integer({ min: -10, max: 400 }), fc.array(t, { maxLength: 3 })),
      // Writes: documents with prototype-named keys into a table, and rewrites of its rows.
      t.map((doc) => [T.INSERT, [[T.TABLE, ['fuzz']], doc], { conflict: 'replace' }]),
      fc
        .tuple(fc.integer({ min: 0, max: 5 }), t)
        .map(([id, patch]) => [T.UPDATE, [[T.GET, [[T.TABLE, ['fuzz']], id]], patch]]),
      fc
        .tuple(fc.integer({ min: 0, max: 5 }), t)
        .map(([id, patch]) => [T.REPLACE, [[T.GET, [[T.TABLE, ['fuzz']], id]], lambda([T.MERGE, [row, patch]])]]),
      fc.integer({ min: 0, max: 5 }).map((id) => [T.GET, [[T.TABLE, ['fuzz']], id]]),
    ),
  };
});

// ---- checks ----

/** A response as the driver must be able to take it (RawConnection already parsed it as JSON). */
function checkWellFormed(res: RawResponse | null, token: bigint): asserts res is RawResponse {
  expect(res).not.toBeNull();
  const r = res as RawResponse;
  expect(r.token).toBe(token);
  const body = r.body as Record<string, unknown>;
  expect(RESPONSE_TYPES.has(body.t as number)).toBe(true);
  expect(Array.isArray(body.r)).toBe(true);
  if (body.t === 1) expect(body.r).toHaveLength(1);
  if ((body.t as number) >= 16) {
    expect(body.r).toHaveLength(1);
    expect(typeof (body.r as unknown[])[0]).toBe('string');
    expect(Array.isArray(body.b)).toBe(true);
    expect((body.r as string[])[0]).not.toMatch(/Maximum call stack|undefined is not|Cannot read prop/);
  }
  if (body.t === 18) expect(ERROR_TYPES.has(body.e as number)).toBe(true);
  if (body.t === 3) expect(body.n).toEqual([]);
}

describe('driver port (property, real server)', () => {
  let server: SpawnedServer;
  let conn: RawConnection;
  let nextToken = 1n;

  beforeAll(async () => {
    server = await spawnServer({ args: ['--limit', 'handshakeTimeoutMs=300'] });
    conn = await rawConnect(server.driver.port);
    const created = await conn.query(nextToken++, [1, [60, ['fuzz']]]);
    expect(created.body.t).toBe(1);
  });

  afterAll(async () => {
    conn?.close();
    await server?.stop('SIGKILL');
    if (server) removeDir(server.dataDir);
  });

  /** Send one START and take its one response, checked; CONTINUE until a stream ends. */
  async function run(termWire: unknown): Promise<RawResponse> {
    const token = nextToken++;
    conn.send(token, JSON.stringify([1, termWire, {}]));
    let res = await conn.response();
    checkWellFormed(res, token);
    const first = res;
    while (res.body.t === 3) {
      conn.send(token, '[2]');
      res = await conn.response();
      checkWellFormed(res, token);
    }
    return first;
  }

  async function stillServing(): Promise<void> {
    const res = await run([T.ADD, [1, 1]]);
    expect(res.body).toMatchObject({ t: 1, r: [2] });
  }

  it('answers every generated term with a well-formed JSON response frame', async () => {
    await fc.assert(
      fc.asyncProperty(term, async (wire) => {
        await run(wire);
      }),
      { numRuns: 1000 },
    );
    await stillServing();
    // Everything the table holds reads back as JSON.
    const all = await run([T.TABLE, ['fuzz']]);
    expect(all.body).toMatchObject({ t: expect.toSatisfy((t: number) => t === 2 || t === 3) });
  });

  it('answers field reads, tests and key lists on prototype-named keys as a model of own fields does', async () => {
    await fc.assert(
      // (`$reql_type$` makes a pseudo-type, whose fields are not read this way: left out here.)
      fc.asyncProperty(fc.dictionary(plainKey, datum, { maxKeys: 5 }), plainKey, async (obj, k) => {
        const text = JSON.stringify(obj);
        const own = JSON.parse(text) as Record<string, unknown>;
        const has = Object.hasOwn(own, k);
        const value = await run([T.BRACKET, [[T.JSON, [text]], k]]);
        if (has) expect(JSON.stringify(value.body.r[0])).toBe(JSON.stringify(own[k]));
        else expect(value.body).toMatchObject({ t: 18, e: 3100000, r: [expect.stringMatching(/^No attribute `/)] });
        const defaulted = await run([T.DEFAULT, [[T.BRACKET, [[T.JSON, [text]], k]], 'absent']]);
        expect(defaulted.body.t).toBe(1);
        if (!has) expect(defaulted.body.r).toEqual(['absent']);
        const hasFields = await run([T.HAS_FIELDS, [[T.JSON, [text]], k]]);
        expect(hasFields.body.r).toEqual([has && own[k] !== null]);
        const keys = await run([T.KEYS, [[T.JSON, [text]]]]);
        expect(keys.body.r).toEqual([Object.keys(own).sort()]);
        const merged = await run([T.MERGE, [{ z: 1 }, [T.JSON, [text]]]]);
        expect(Object.keys(merged.body.r[0] as object).sort()).toEqual([...new Set(['z', ...Object.keys(own)])].sort());
      }),
      { numRuns: 150 },
    );
    await stillServing();
  });

  it('refuses datums nested past 128 levels with an error naming the limit (r.json and raw datums)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 10_000 }), fc.boolean(), fc.boolean(), async (depth, objects, raw) => {
        const text = objects
          ? `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`
          : `${'['.repeat(depth)}1${']'.repeat(depth)}`;
        // raw: the datum itself in the query (a DATUM term), not a string for r.json.
        const sent = raw ? await runRaw(`[1,[52,[[1,[${text}]]]],{}]`) : await run([T.TYPE_OF, [[T.JSON, [text]]]]);
        if (depth <= 128) expect(sent.body).toEqual({ t: 1, r: [objects ? 'OBJECT' : 'ARRAY'] });
        else {
          expect([17, 18]).toContain(sent.body.t);
          expect(sent.body.r[0]).toMatch(
            /nested deeper than the limit of 128 levels of objects and arrays \(MAX_DOCUMENT_DEPTH\)/,
          );
        }
      }),
      { numRuns: 40 },
    );
    await stillServing();
  });

  /** Send a START whose body is given as text, take its response. */
  async function runRaw(body: string): Promise<RawResponse> {
    const token = nextToken++;
    conn.send(token, body);
    const res = await conn.response();
    checkWellFormed(res, token);
    return res;
  }

  it('refuses terms nested past 256 levels with an error naming the limit, up to 10,000 levels', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.integer({ min: 1, max: 300 }), fc.integer({ min: 1, max: 10_000 })),
        async (depth) => {
          const body = `[1,${'[24,['.repeat(depth)}0${',1]]'.repeat(depth)},{}]`;
          const res = await runRaw(body);
          if (depth <= 256) expect(res.body).toEqual({ t: 1, r: [depth] });
          else
            expect(res.body).toMatchObject({
              t: 17,
              r: ['Query is nested deeper than the limit of 256 levels of terms (MAX_TERM_DEPTH).'],
            });
        },
      ),
      { numRuns: 30 },
    );
    await stillServing();
  });

  it('answers every query of a stream split and merged arbitrarily on the socket, under its own token', async () => {
    const c = await rawConnect(server.driver.port);
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.tuple(fc.bigInt({ min: 1n, max: 2n ** 62n }), fc.integer(), fc.integer()), {
            minLength: 1,
            maxLength: 20,
          }),
          fc.array(fc.nat(), { maxLength: 30 }),
          async (queries, offsets) => {
            const tokens = new Set<bigint>();
            const unique = queries.filter(([t]) => !tokens.has(t) && tokens.add(t));
            const stream = Buffer.concat(
              unique.map(([t, a, b]) => c.frame(t, JSON.stringify([1, [T.ADD, [a, b]], {}]))),
            );
            const points = [...new Set(offsets.map((o) => o % (stream.length + 1)))].sort((x, y) => x - y);
            let at = 0;
            for (const p of [...points, stream.length]) {
              if (p > at) {
                c.socket.write(stream.subarray(at, p));
                // Let each piece leave on its own (otherwise Node may coalesce the writes).
                await new Promise((resolve) => setImmediate(resolve));
              }
              at = p;
            }
            const answers = new Map<bigint, unknown>();
            for (let i = 0; i < unique.length; i++) {
              const res = await c.response();
              expect(res).not.toBeNull();
              answers.set((res as RawResponse).token, (res as RawResponse).body);
            }
            for (const [t, a, b] of unique) expect(answers.get(t)).toEqual({ t: 1, r: [a + b] });
          },
        ),
        { numRuns: 60 },
      );
    } finally {
      c.close();
    }
    await stillServing();
  });

  it('ends handshakes with garbage, a wrong magic number or truncation cleanly, never crashing or hanging', async () => {
    const opening = Buffer.concat([
      V1_0,
      Buffer.from(
        `${JSON.stringify({ protocol_version: 0, authentication_method: 'SCRAM-SHA-256', authentication: 'n,,n=admin,r=abc' })}\0`,
      ),
    ]);
    const input = fc.oneof(
      fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
      fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.concat([V1_0, Buffer.from(b)])),
      fc.nat().map((n) => opening.subarray(0, n % opening.length)),
      fc.jsonValue({ maxDepth: 3 }).map((v) => Buffer.concat([V1_0, Buffer.from(`${JSON.stringify(v)}\0`)])),
    );
    await fc.assert(
      fc.asyncProperty(input, async (bytes) => {
        const { socket, reader } = await openSocket(server.driver.port);
        socket.write(bytes);
        // Whatever was sent, the server answers what it can and closes: at once for bad input,
        // after handshakeTimeoutMs (0.3 s here) for a handshake left unfinished.
        const replies: string[] = [];
        for (let text = await reader.untilNul(5000); text !== null; text = await reader.untilNul(5000))
          replies.push(text);
        await reader.closed(5000);
        for (const text of replies) {
          if (text.startsWith('ERROR: Received an unsupported protocol version')) continue;
          const msg = JSON.parse(text) as { success: boolean };
          expect(typeof msg.success).toBe('boolean');
        }
        socket.destroy();
      }),
      { numRuns: 25 },
    );
    await stillServing();
  });
});
