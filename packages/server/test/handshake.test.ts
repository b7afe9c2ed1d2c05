import { describe, expect, it } from 'vitest';
import { adminCredentials, Handshake, type HandshakeResult } from '../src/rethinkdb/handshake.js';
import { clientFinal } from '../src/rethinkdb/scram.js';

const MAGIC = Buffer.from([0xc3, 0xbd, 0xc2, 0x34]);
const nul = (obj: unknown): Buffer => Buffer.concat([Buffer.from(JSON.stringify(obj)), Buffer.from([0])]);
const first = (auth = 'n,,n=admin,r=clientnonce') =>
  nul({ protocol_version: 0, authentication_method: 'SCRAM-SHA-256', authentication: auth });
const replies = (res: HandshakeResult): unknown[] =>
  res.replies.map((b) => {
    expect(b[b.length - 1]).toBe(0);
    expect(b.indexOf(0)).toBe(b.length - 1); // one NUL, at the end
    return JSON.parse(b.subarray(0, -1).toString());
  });

function handshake(password = '', refuse?: () => string | null): Handshake {
  return new Handshake({
    credentials: adminCredentials(password),
    maxMessageBytes: 2048,
    ...(refuse ? { refuse } : {}),
  });
}

function finish(h: Handshake, password: string, serverFirst: string): HandshakeResult {
  const salt = Buffer.from(/s=([^,]+)/.exec(serverFirst)?.[1] as string, 'base64');
  const { message } = clientFinal(
    password,
    salt,
    Number(/i=(\d+)/.exec(serverFirst)?.[1]),
    'n=admin,r=clientnonce',
    serverFirst,
  );
  return h.push(nul({ authentication: message }));
}

describe('V1_0 handshake', () => {
  it('answers pipelined magic + client-first at once, then verifies the proof and hands over the rest', () => {
    const h = handshake('pw');
    const step = h.push(Buffer.concat([MAGIC, first()]));
    expect(step.status).toBe('pending');
    const [hello, sf] = replies(step) as [Record<string, unknown>, { success: boolean; authentication: string }];
    expect(hello).toMatchObject({ success: true, min_protocol_version: 0, max_protocol_version: 0 });
    expect(sf.authentication).toMatch(/^r=clientnonce[^,]+,s=[^,]+,i=4096$/); // r, s, i order
    const salt = Buffer.from(/s=([^,]+)/.exec(sf.authentication)?.[1] as string, 'base64');
    const { message, expectedServerFinal } = clientFinal('pw', salt, 4096, 'n=admin,r=clientnonce', sf.authentication);
    const rest = Buffer.from([1, 2, 3]);
    const done = h.push(Buffer.concat([nul({ authentication: message }), rest]));
    expect(done.status).toBe('done');
    expect(replies(done)).toEqual([{ success: true, authentication: expectedServerFinal }]);
    expect(done.status === 'done' && done.rest.equals(rest)).toBe(true);
  });

  it('accepts the bytes one at a time', () => {
    const h = handshake();
    const all: Buffer[] = [];
    let last: HandshakeResult | undefined;
    for (const b of Buffer.concat([MAGIC, first()])) {
      last = h.push(Buffer.from([b]));
      all.push(...last.replies);
    }
    expect(last?.status).toBe('pending');
    expect(all).toHaveLength(2);
    const sf = JSON.parse(all[1]!.subarray(0, -1).toString()) as { authentication: string };
    expect(finish(h, '', sf.authentication).status).toBe('done');
  });

  it('fails a wrong password with code 12 and an unknown user with code 17, after the proof', () => {
    const h = handshake('right');
    const sf = replies(h.push(Buffer.concat([MAGIC, first()])))[1] as { authentication: string };
    const bad = finish(h, 'wrong', sf.authentication);
    expect(bad.status).toBe('failed');
    expect(replies(bad)).toEqual([{ success: false, error: 'Wrong password', error_code: 12 }]);

    const u = handshake('');
    const usf = replies(u.push(Buffer.concat([MAGIC, first('n,,n=root,r=clientnonce')])))[1] as {
      authentication: string;
    };
    const salt = Buffer.from(/s=([^,]+)/.exec(usf.authentication)?.[1] as string, 'base64');
    const { message } = clientFinal('', salt, 4096, 'n=root,r=clientnonce', usf.authentication);
    expect(replies(u.push(nul({ authentication: message })))).toEqual([
      { success: false, error: 'Unknown user', error_code: 17 },
    ]);
  });

  it('rejects an unknown magic number with the plain-text error', () => {
    const res = handshake().push(Buffer.from('GET / HTTP/1.1\r\n'));
    expect(res.status).toBe('failed');
    expect(res.replies[0]?.toString()).toMatch(/^ERROR: Received an unsupported protocol version\..*\n\0$/s);
  });

  it('reports bad messages with the reference codes', () => {
    const code = (msg: Buffer): unknown => {
      const h = handshake();
      const res = h.push(Buffer.concat([MAGIC, msg]));
      return (replies(res).at(-1) as { error_code?: number }).error_code;
    };
    expect(code(Buffer.from('{oops\0'))).toBe(8);
    expect(code(nul({ protocol_version: '0' }))).toBe(1);
    expect(code(nul({ protocol_version: 1 }))).toBe(2);
    expect(code(nul({ protocol_version: 0, authentication_method: 5 }))).toBe(3);
    expect(code(nul({ protocol_version: 0, authentication_method: 'MD5' }))).toBe(4);
    expect(code(nul({ protocol_version: 0, authentication_method: 'SCRAM-SHA-256' }))).toBe(5);
    expect(code(Buffer.alloc(3000, 0x20))).toBe(7);
    expect(code(first('x,,n=admin,r=a'))).toBe(10);
  });

  it('refuses a connection the server does not allow (empty password off loopback)', () => {
    const h = handshake('', () => 'loopback only');
    const res = h.push(Buffer.concat([MAGIC, first()]));
    expect(res.status).toBe('failed');
    expect(replies(res)[1]).toEqual({ success: false, error: 'loopback only', error_code: 20 });
  });
});
