/**
 * Property tests (fast-check) of the driver port's byte-level parts, on the real code: query
 * framing (frames split and merged arbitrarily), the V1_0 handshake (garbage, truncation, wrong
 * magic, arbitrary splits of a good exchange) and term decoding (any JSON, prototype-named keys,
 * deep nesting). Each run is bounded (numRuns) so the file takes seconds.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { thrown } from '../../../test/helpers/thrown.js';
import { ReqlCompileError, ReqlError } from '../src/rethinkdb/errors.js';
import { encodeQuery, FrameReader } from '../src/rethinkdb/framing.js';
import { adminCredentials, Handshake, type HandshakeResult } from '../src/rethinkdb/handshake.js';
import { UNSUPPORTED_VERSION_TEXT } from '../src/rethinkdb/protocol.js';
import { clientFinal } from '../src/rethinkdb/scram.js';
import { compile, MAX_TERM_DEPTH } from '../src/rethinkdb/term/compiler.js';
import { MAX_DOCUMENT_DEPTH } from '../src/rethinkdb/term/datum.js';

const MAGIC = Buffer.from([0xc3, 0xbd, 0xc2, 0x34]);
const PROTOTYPE_KEYS = [
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '__defineGetter__',
  'prototype',
];

/** Cut a buffer at the given offsets (sorted, deduplicated, within bounds). */
function cut(buf: Buffer, offsets: number[]): Buffer[] {
  const points = [...new Set(offsets.map((o) => o % (buf.length + 1)))].sort((a, b) => a - b);
  const parts: Buffer[] = [];
  let at = 0;
  for (const p of points) {
    parts.push(buf.subarray(at, p));
    at = p;
  }
  parts.push(buf.subarray(at));
  return parts;
}

describe('query framing (property)', () => {
  const frameArb = fc.record({
    token: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
    body: fc.oneof(
      fc.string({ unit: 'binary', maxLength: 300 }),
      fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v) ?? 'null'),
    ),
  });

  it('yields every frame, in order and byte for byte, however the stream is split', () => {
    fc.assert(
      fc.property(fc.array(frameArb, { maxLength: 12 }), fc.array(fc.nat(), { maxLength: 40 }), (frames, offsets) => {
        const stream = Buffer.concat(frames.map((f) => encodeQuery(f.token, f.body)));
        const reader = new FrameReader(1 << 20);
        const out: { token: bigint; body: string }[] = [];
        for (const chunk of cut(stream, offsets)) {
          reader.push(chunk);
          for (let ev = reader.next(); ev; ev = reader.next()) {
            if (ev.kind !== 'frame') throw new Error('unexpected too-large');
            out.push({ token: ev.token.readBigInt64LE(0), body: ev.body.toString('utf8') });
          }
        }
        expect(out).toEqual(
          frames.map((f) => ({ token: f.token, body: Buffer.from(f.body, 'utf8').toString('utf8') })),
        );
        expect(reader.buffered).toBe(0);
      }),
      { numRuns: 300 },
    );
  });

  it('reports an oversized frame with its token once, after every frame before it, then takes nothing more', () => {
    fc.assert(
      fc.property(
        fc.array(frameArb, { maxLength: 5 }),
        fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }),
        fc.integer({ min: 1025, max: 2 ** 32 - 1 }),
        fc.uint8Array({ maxLength: 64 }),
        fc.array(fc.nat(), { maxLength: 20 }),
        (before, token, length, after, offsets) => {
          const header = Buffer.alloc(12);
          header.writeBigInt64LE(token, 0);
          header.writeUInt32LE(length, 8);
          const stream = Buffer.concat([
            ...before.map((f) => encodeQuery(f.token, f.body.slice(0, 200))),
            header,
            Buffer.from(after),
          ]);
          const reader = new FrameReader(1024);
          const events: string[] = [];
          for (const chunk of cut(stream, offsets)) {
            reader.push(chunk);
            for (let ev = reader.next(); ev; ev = reader.next()) {
              events.push(
                ev.kind === 'frame'
                  ? `frame ${ev.token.readBigInt64LE(0)}`
                  : `too-large ${ev.token.readBigInt64LE(0)} ${ev.length}`,
              );
            }
          }
          expect(events).toEqual([...before.map((f) => `frame ${f.token}`), `too-large ${token} ${length}`]);
          expect(reader.buffered).toBe(0);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('V1_0 handshake (property)', () => {
  const newHandshake = (): Handshake => new Handshake({ credentials: adminCredentials('pw'), maxMessageBytes: 2048 });

  /** Feed chunks until the handshake finishes; every outcome is a result, never a throw. */
  function feed(h: Handshake, chunks: Buffer[]): { results: HandshakeResult[]; replies: Buffer[] } {
    const results: HandshakeResult[] = [];
    for (const chunk of chunks) {
      const res = h.push(chunk);
      results.push(res);
      if (res.status !== 'pending') break;
    }
    return { results, replies: results.flatMap((r) => r.replies) };
  }

  /** Every reply is one JSON object and one NUL, or the plain-text version error. */
  function checkReplies(replies: Buffer[]): void {
    for (const b of replies) {
      expect(b[b.length - 1]).toBe(0);
      expect(b.indexOf(0)).toBe(b.length - 1);
      const text = b.subarray(0, -1).toString('utf8');
      if (text === UNSUPPORTED_VERSION_TEXT) continue;
      const msg = JSON.parse(text) as { success: boolean; error_code?: number; error?: string };
      expect(typeof msg.success).toBe('boolean');
      if (!msg.success) {
        expect(Number.isInteger(msg.error_code)).toBe(true);
        expect(typeof msg.error).toBe('string');
      }
    }
  }

  it('answers a wrong magic number with the version error and fails, however the bytes arrive', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 4, maxLength: 200 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        (bytes, offsets) => {
          const buf = Buffer.from(bytes);
          fc.pre(buf.readUInt32LE(0) !== MAGIC.readUInt32LE(0));
          const { results, replies } = feed(newHandshake(), cut(buf, offsets));
          expect(results[results.length - 1]?.status).toBe('failed');
          expect(replies.map((b) => b.toString('utf8'))).toEqual([`${UNSUPPORTED_VERSION_TEXT}\0`]);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('after the right magic, answers garbage with a clean error code or waits for more (never throws, never waits past the size limit)', () => {
    const message = fc.oneof(
      fc.uint8Array({ maxLength: 3000 }).map((b) => Buffer.from(b)),
      fc.jsonValue({ maxDepth: 3 }).map((v) => Buffer.from(`${JSON.stringify(v)}\0`)),
      fc
        .record(
          {
            protocol_version: fc.oneof(fc.constant(0), fc.jsonValue({ maxDepth: 1 })),
            authentication_method: fc.oneof(fc.constant('SCRAM-SHA-256'), fc.jsonValue({ maxDepth: 1 })),
            authentication: fc.oneof(
              fc.string({ unit: 'binary', maxLength: 100 }),
              fc
                .tuple(fc.constantFrom('n,,', 'y,,', 'p=x,,', ',,', 'n,a=admin,'), fc.string({ maxLength: 60 }))
                .map(([a, b]) => a + b),
              fc.constantFrom(
                'n,,n=admin,r=',
                'n,,n=,r=x',
                'n,,r=x',
                'n,,n=admin',
                'n,,n=admin,r=x,e=1',
                'n,,n=ad=3Dmin,r=x',
                'n,,n=ad=2min,r=x',
              ),
            ),
          },
          { requiredKeys: [] },
        )
        .map((o) => Buffer.from(`${JSON.stringify(o)}\0`)),
    );
    fc.assert(
      fc.property(
        fc.array(message, { minLength: 1, maxLength: 3 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        (messages, offsets) => {
          const h = newHandshake();
          const { results, replies } = feed(h, cut(Buffer.concat([MAGIC, ...messages]), offsets));
          checkReplies(replies);
          const last = results[results.length - 1] as HandshakeResult;
          // Garbage cannot complete a SCRAM exchange: no proof was computed from the password.
          expect(last.status).not.toBe('done');
          if (last.status === 'pending') {
            // Waiting is allowed only for a message without its NUL, shorter than the limit
            // (the connection's handshake timeout ends that wait).
            expect(h.stage === 'first' || h.stage === 'final').toBe(true);
          }
        },
      ),
      { numRuns: 400 },
    );
  });

  it('refuses a message past the size limit with code 7 even without a NUL', () => {
    fc.assert(
      fc.property(fc.integer({ min: 2048, max: 6000 }), fc.array(fc.nat(), { maxLength: 10 }), (size, offsets) => {
        const { results, replies } = feed(
          newHandshake(),
          cut(Buffer.concat([MAGIC, Buffer.alloc(size, 0x61)]), offsets),
        );
        expect(results[results.length - 1]?.status).toBe('failed');
        const last = replies[replies.length - 1] as Buffer;
        expect(JSON.parse(last.subarray(0, -1).toString())).toEqual({
          success: false,
          error: 'Limited read buffer size.',
          error_code: 7,
        });
      }),
      { numRuns: 100 },
    );
  });

  it('completes a good exchange however it is split, truncated anywhere it just waits', () => {
    fc.assert(
      fc.property(
        fc.array(fc.nat(), { maxLength: 12 }),
        fc.nat(),
        fc.uint8Array({ maxLength: 40 }),
        (offsets, truncateAt, rest) => {
          const h = newHandshake();
          const bare = 'n=admin,r=clientnonce';
          const first = Buffer.from(
            `${JSON.stringify({ protocol_version: 0, authentication_method: 'SCRAM-SHA-256', authentication: `n,,${bare}` })}\0`,
          );
          const opening = Buffer.concat([MAGIC, first]);
          // Truncated before the client-first's NUL: pending, nothing refused.
          const truncated = newHandshake();
          const upTo = truncateAt % opening.length;
          const t = feed(truncated, cut(opening.subarray(0, upTo), offsets));
          expect(t.results.every((r) => r.status === 'pending')).toBe(true);

          const step1 = feed(h, cut(opening, offsets));
          checkReplies(step1.replies);
          const sf = JSON.parse((step1.replies[1] as Buffer).subarray(0, -1).toString()) as { authentication: string };
          const salt = Buffer.from(/s=([^,]+)/.exec(sf.authentication)?.[1] as string, 'base64');
          const { message } = clientFinal(
            'pw',
            salt,
            Number(/i=(\d+)/.exec(sf.authentication)?.[1]),
            bare,
            sf.authentication,
          );
          const final = Buffer.concat([
            Buffer.from(`${JSON.stringify({ authentication: message })}\0`),
            Buffer.from(rest),
          ]);
          const step2 = feed(h, cut(final, offsets));
          checkReplies(step2.replies);
          const done = step2.results[step2.results.length - 1] as HandshakeResult;
          expect(done.status).toBe('done');
          if (done.status !== 'done') return;
          expect(done.user).toBe('admin');
          // Bytes after the last NUL of the chunk that finished are query bytes, handed back.
          const finishedAt = step2.results.length;
          const fed = Buffer.concat(cut(final, offsets).slice(0, finishedAt));
          expect(done.rest).toEqual(fed.subarray(fed.indexOf(0) + 1));
        },
      ),
      { numRuns: 30 },
    );
  });
});

describe('term decoding (property)', () => {
  const key = fc.oneof(fc.constantFrom(...PROTOTYPE_KEYS, 'a', 'id', '$reql_type$'), fc.string({ maxLength: 8 }));
  const { term } = fc.letrec((tie) => ({
    term: fc.oneof(
      { depthSize: 'small' },
      fc.jsonValue({ maxDepth: 2 }),
      fc.dictionary(key, tie('term'), { maxKeys: 4 }),
      fc.tuple(fc.integer({ min: -5, max: 200 }), fc.array(tie('term'), { maxLength: 4 })),
      fc.tuple(
        fc.integer({ min: 1, max: 200 }),
        fc.array(tie('term'), { maxLength: 3 }),
        fc.dictionary(key, tie('term'), { maxKeys: 3 }),
      ),
      fc.array(tie('term'), { maxLength: 5 }),
    ),
  }));

  it('compiles any JSON to a node or a ReQL error, never another exception', () => {
    fc.assert(
      fc.property(term, (wire) => {
        // Through JSON, as the connection hands it over (own `__proto__` keys included).
        const parsed: unknown = JSON.parse(JSON.stringify(wire) ?? 'null');
        try {
          compile(parsed);
        } catch (err) {
          expect(err).toBeInstanceOf(ReqlError);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('keeps prototype-named keys of literal objects as plain fields', () => {
    fc.assert(
      fc.property(fc.dictionary(key, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 6 }), (obj) => {
        const text = JSON.stringify(obj);
        const node = compile([1, [JSON.parse(text)]]);
        expect(node.kind).toBe('datum');
        expect(JSON.stringify((node as { value: unknown }).value)).toBe(text);
        // As MAKE_OBJ with a term inside, the folded object holds the same keys.
        const withTerm = `{${Object.keys(obj)
          .map((k) => `${JSON.stringify(k)}:[2,[1]]`)
          .join(',')}}`;
        const folded = compile(JSON.parse(withTerm));
        expect(JSON.stringify((folded as { value: unknown }).value)).toBe(withTerm.replace(/\[2,\[1\]\]/g, '[1]'));
      }),
      { numRuns: 300 },
    );
  });

  it('refuses nesting past the limits with errors naming them, at any depth (no stack overflow)', () => {
    const shapes = ['object', 'makeArray', 'datumArray', 'terms'] as const;
    fc.assert(
      fc.property(fc.constantFrom(...shapes), fc.integer({ min: 1, max: 20_000 }), (shape, depth) => {
        let text = '1';
        for (let i = 0; i < depth; i++) {
          text =
            shape === 'object'
              ? `{"a":${text}}`
              : shape === 'makeArray'
                ? `[2,[${text}]]`
                : shape === 'datumArray'
                  ? `[${text}]`
                  : `[24,[${text},1]]`;
        }
        const wire: unknown = JSON.parse(shape === 'datumArray' ? `[1,[${text}]]` : text);
        // MAKE_ARRAY levels are terms too: past MAX_TERM_DEPTH that limit is met first.
        const limit =
          shape === 'terms' || (shape === 'makeArray' && depth > MAX_TERM_DEPTH) ? MAX_TERM_DEPTH : MAX_DOCUMENT_DEPTH;
        if (depth <= limit) {
          expect(() => compile(wire)).not.toThrow();
          return;
        }
        expect(thrown(() => compile(wire), ReqlCompileError).message).toContain(`limit of ${limit} levels`);
      }),
      { numRuns: 60 },
    );
  });
});
