/**
 * Property tests (fast-check) of the ws frame codec: any bytes decode to a frame or throw a
 * WireError with a catalogued code, never anything else; any valid message round-trips
 * (encodeFrame and encodeFrameParts alike); server messages too.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type ClientMessage,
  decodeFrame,
  decodeServerMessage,
  encodeFrame,
  encodeFrameParts,
  encodeServerMessage,
  type ServerMessage,
  WireError,
} from '../src/index.js';

const WIRE_CODES = new Set(['WHARF_ERR_WS_BAD_FRAME', 'WHARF_ERR_WS_BAD_MESSAGE', 'WHARF_ERR_WS_FRAME_TOO_LARGE']);

/** decodeFrame's outcome: the frame, or the WireError; any other throw fails the property. */
function decodeOrWireError(bytes: Uint8Array): { ok: true } | { ok: false; err: WireError } {
  try {
    decodeFrame(bytes);
    return { ok: true };
  } catch (err) {
    if (!(err instanceof WireError))
      throw new Error(`decodeFrame threw a ${(err as Error)?.constructor?.name}: ${String(err)}`);
    return { ok: false, err };
  }
}

const table = fc.string({ minLength: 1, maxLength: 40 });
const id = fc.maxSafeNat();
const clientMessage: fc.Arbitrary<ClientMessage> = fc.oneof(
  fc.record({ type: fc.constant('ensureTable' as const), id, table }, { requiredKeys: ['type', 'id', 'table'] }),
  fc.record(
    {
      type: fc.constant('insert' as const),
      id,
      table,
      format: fc.constantFrom('ndjson' as const, 'json' as const),
      durability: fc.constantFrom('soft' as const, 'hard' as const),
      conflict: fc.constantFrom('error' as const, 'replace' as const, 'update' as const),
    },
    { requiredKeys: ['type', 'id', 'table', 'format'] },
  ),
  fc.record({ type: fc.constant('sync' as const), id }),
);

/** A header of arbitrary JSON (mostly objects with protocol-like keys), to reach the validator. */
const jsonHeader = fc.oneof(
  fc.json(),
  fc
    .record(
      {
        type: fc.oneof(fc.constantFrom('ensureTable', 'insert', 'sync', '__proto__', 'constructor'), fc.string()),
        id: fc.oneof(fc.integer(), fc.double(), fc.string(), fc.constant(null)),
        table: fc.oneof(fc.string(), fc.integer()),
        format: fc.oneof(fc.constantFrom('ndjson', 'json'), fc.string()),
        durability: fc.string(),
        conflict: fc.string(),
        primaryKey: fc.oneof(fc.string(), fc.constant(0)),
      },
      { requiredKeys: [] },
    )
    .map((o) => JSON.stringify(o)),
);

function frameWithHeader(headerText: string, payload: Uint8Array, lengthDelta: number): Buffer {
  const h = Buffer.from(headerText, 'utf8');
  const out = Buffer.alloc(4 + h.length + payload.length);
  out.writeUInt32LE(Math.max(0, Math.min(0xffffffff, h.length + lengthDelta)), 0);
  h.copy(out, 4);
  out.set(payload, 4 + h.length);
  return out;
}

describe('ws frame codec (fast-check)', () => {
  it('decodes arbitrary bytes to a frame or a WireError with a catalogued code', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 512 }), (bytes) => {
        const r = decodeOrWireError(bytes);
        if (!r.ok) expect(WIRE_CODES.has(r.err.code)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('decodes frames with arbitrary JSON headers, payloads and length prefixes cleanly', () => {
    fc.assert(
      fc.property(
        jsonHeader,
        fc.uint8Array({ maxLength: 64 }),
        fc.integer({ min: -8, max: 8 }),
        (header, payload, delta) => {
          const r = decodeOrWireError(frameWithHeader(header, payload, delta));
          if (!r.ok) {
            expect(WIRE_CODES.has(r.err.code)).toBe(true);
            expect(r.err.message.length).toBeGreaterThan(0);
          }
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('round-trips every valid client message and payload', () => {
    fc.assert(
      fc.property(clientMessage, fc.uint8Array({ maxLength: 256 }), (msg, bytes) => {
        const payload = msg.type === 'insert' ? Buffer.from(bytes) : Buffer.alloc(0);
        const decoded = decodeFrame(encodeFrame(msg, payload));
        expect(decoded.header).toEqual(msg);
        expect(Buffer.compare(decoded.payload, payload)).toBe(0);
        const [head, body] = encodeFrameParts(msg, payload);
        expect(decodeFrame(Buffer.concat([head, body])).header).toEqual(msg);
      }),
      { numRuns: 1000 },
    );
  });

  it('round-trips server messages', () => {
    const result = fc.record({
      inserted: fc.nat(),
      replaced: fc.nat(),
      unchanged: fc.nat(),
      deleted: fc.nat(),
      skipped: fc.nat(),
      errors: fc.nat(),
    });
    const serverMessage: fc.Arbitrary<ServerMessage> = fc.oneof(
      fc.record({ type: fc.constant('ack' as const), id: fc.nat(), result }),
      fc.record({ type: fc.constant('synced' as const), id: fc.nat() }),
      fc.record({
        type: fc.constant('error' as const),
        id: fc.option(fc.nat(), { nil: null }),
        code: fc.string({ minLength: 1 }),
        message: fc.string(),
      }),
    );
    fc.assert(
      fc.property(serverMessage, (msg) => {
        expect(decodeServerMessage(encodeServerMessage(msg))).toEqual(msg);
      }),
      { numRuns: 1000 },
    );
  });
});
