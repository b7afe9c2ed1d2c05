import { describe, expect, it } from 'vitest';
import { encodeQuery, encodeResponse, FrameReader } from '../src/rethinkdb/framing.js';

describe('query framing', () => {
  it('reassembles frames from a stream cut at every byte', () => {
    const frames = [
      encodeQuery(1, '[1,"foo"]'),
      encodeQuery(2n ** 40n, '[2]'),
      encodeQuery(-1, JSON.stringify([1, 'é'.repeat(300)])),
    ];
    const stream = Buffer.concat(frames);
    const reader = new FrameReader(1 << 20);
    const out: { token: bigint; body: string }[] = [];
    for (const byte of stream) {
      reader.push(Buffer.from([byte]));
      for (let ev = reader.next(); ev; ev = reader.next()) {
        if (ev.kind !== 'frame') throw new Error('unexpected');
        out.push({ token: ev.token.readBigInt64LE(0), body: ev.body.toString('utf8') });
      }
    }
    expect(out).toEqual([
      { token: 1n, body: '[1,"foo"]' },
      { token: 2n ** 40n, body: '[2]' },
      { token: -1n, body: JSON.stringify([1, 'é'.repeat(300)]) },
    ]);
    expect(reader.buffered).toBe(0);
  });

  it('takes token, length and body arriving as three writes (the official driver)', () => {
    const frame = encodeQuery(7, '[1,[15,["t"]]]');
    const reader = new FrameReader(1024);
    reader.push(frame.subarray(0, 8));
    expect(reader.next()).toBeNull();
    reader.push(frame.subarray(8, 12));
    expect(reader.next()).toBeNull();
    reader.push(frame.subarray(12));
    const ev = reader.next();
    expect(ev?.kind === 'frame' && ev.body.toString()).toBe('[1,[15,["t"]]]');
  });

  it('reports an oversized frame from its header, before the body arrives, and stops', () => {
    const reader = new FrameReader(100);
    const header = Buffer.alloc(12);
    header.writeBigInt64LE(9n, 0);
    header.writeUInt32LE(101, 8);
    reader.push(header);
    const ev = reader.next();
    expect(ev).toMatchObject({ kind: 'too-large', length: 101 });
    expect(ev?.token.readBigInt64LE(0)).toBe(9n);
    reader.push(Buffer.alloc(50));
    expect(reader.next()).toBeNull();
  });

  it('echoes the token bytes in responses', () => {
    const token = Buffer.from([1, 2, 3, 4, 5, 6, 7, 0x80]);
    const res = encodeResponse(token, '{"t":1,"r":["ü"]}');
    expect(res.subarray(0, 8).equals(token)).toBe(true);
    expect(res.readUInt32LE(8)).toBe(Buffer.byteLength('{"t":1,"r":["ü"]}'));
    expect(res.subarray(12).toString()).toBe('{"t":1,"r":["ü"]}');
  });
});
