import { decodeFrame, decodeServerMessage, encodeFrame, encodeFrameParts, limits, WireError } from '@wharf/wire';
import { describe, expect, it } from 'vitest';
import { thrown } from '../../../test/helpers/thrown.js';

function frameWithHeader(headerText: string, payload = Buffer.alloc(0)): Buffer {
  const h = Buffer.from(headerText);
  const len = Buffer.alloc(4);
  len.writeUInt32LE(h.length);
  return Buffer.concat([len, h, payload]);
}

const codeOf = (fn: () => unknown): string => thrown(fn, WireError).code;

describe('ws ingest frame codec', () => {
  it('round-trips an insert with an NDJSON payload', () => {
    const payload = Buffer.from('{"id":1}\n{"id":2}\n');
    const frame = encodeFrame(
      { type: 'insert', id: 7, table: 't', format: 'ndjson', durability: 'hard', conflict: 'replace' },
      payload,
    );
    expect(frame.readUInt32LE(0)).toBe(frame.length - 4 - payload.length);
    const { header, payload: out } = decodeFrame(frame);
    expect(header).toEqual({
      type: 'insert',
      id: 7,
      table: 't',
      format: 'ndjson',
      durability: 'hard',
      conflict: 'replace',
    });
    expect(out.toString()).toBe(payload.toString());
  });

  it('encodeFrameParts concatenates to the same bytes as encodeFrame', () => {
    const payload = Buffer.from('[{"a":1}]');
    const msg = { type: 'insert', id: 1, table: 'x', format: 'json' } as const;
    expect(Buffer.concat(encodeFrameParts(msg, payload)).equals(encodeFrame(msg, payload))).toBe(true);
  });

  it('round-trips ensureTable and sync without payload', () => {
    expect(decodeFrame(encodeFrame({ type: 'ensureTable', id: 1, table: 'a', primaryKey: 'k' })).header).toEqual({
      type: 'ensureTable',
      id: 1,
      table: 'a',
      primaryKey: 'k',
    });
    const { header, payload } = decodeFrame(encodeFrame({ type: 'sync', id: 2 }));
    expect(header).toEqual({ type: 'sync', id: 2 });
    expect(payload.length).toBe(0);
  });

  it('rejects short frames, overlong header lengths and bad JSON as bad frames', () => {
    expect(codeOf(() => decodeFrame(Buffer.from([1, 0])))).toBe('WHARF_ERR_WS_BAD_FRAME');
    const lying = Buffer.alloc(8);
    lying.writeUInt32LE(1000);
    expect(codeOf(() => decodeFrame(lying))).toBe('WHARF_ERR_WS_BAD_FRAME');
    expect(codeOf(() => decodeFrame(frameWithHeader('{not json')))).toBe('WHARF_ERR_WS_BAD_FRAME');
    const huge = Buffer.alloc(8);
    huge.writeUInt32LE(limits.maxHeaderBytes + 1);
    expect(codeOf(() => decodeFrame(huge))).toBe('WHARF_ERR_WS_BAD_FRAME');
  });

  it('rejects headers that break the protocol, keeping the id when it is readable', () => {
    const cases: [string, number | null][] = [
      ['[]', null],
      ['{"type":"insert"}', null],
      ['{"type":"insert","id":1.5,"table":"t","format":"ndjson"}', null],
      ['{"type":"nope","id":3}', 3],
      ['{"type":"insert","id":4,"table":"","format":"ndjson"}', 4],
      ['{"type":"insert","id":5,"table":"t","format":"csv"}', 5],
      ['{"type":"insert","id":6,"table":"t","format":"json","durability":"maybe"}', 6],
      ['{"type":"insert","id":7,"table":"t","format":"json","conflict":"ignore"}', 7],
      ['{"type":"ensureTable","id":8}', 8],
    ];
    for (const [text, id] of cases) {
      try {
        decodeFrame(frameWithHeader(text));
        throw new Error(`accepted ${text}`);
      } catch (err) {
        expect((err as WireError).code, text).toBe('WHARF_ERR_WS_BAD_MESSAGE');
        expect((err as WireError).id, text).toBe(id);
      }
    }
    expect(codeOf(() => decodeFrame(frameWithHeader('{"type":"sync","id":1}', Buffer.from('x'))))).toBe(
      'WHARF_ERR_WS_BAD_MESSAGE',
    );
  });

  it('decodes server messages and rejects anything else', () => {
    expect(decodeServerMessage('{"type":"synced","id":3}')).toEqual({ type: 'synced', id: 3 });
    expect(decodeServerMessage('{"type":"error","id":null,"code":"WHARF_ERR_X","message":"m"}').type).toBe('error');
    expect(codeOf(() => decodeServerMessage('{"type":"ack","id":1}'))).toBe('WHARF_ERR_WS_BAD_MESSAGE');
    expect(codeOf(() => decodeServerMessage('nope'))).toBe('WHARF_ERR_WS_BAD_MESSAGE');
  });
});
