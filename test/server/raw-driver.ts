/**
 * A minimal RethinkDB V1_0 client over a raw socket, for feeding the driver port bytes that no
 * real driver would send. SCRAM-SHA-256 is computed here independently of the server's code.
 */
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';

export const V1_0 = Buffer.from([0xc3, 0xbd, 0xc2, 0x34]);

/** Reads bytes from a socket on demand. */
export class ByteReader {
  #buf = Buffer.alloc(0);
  #waiters: (() => void)[] = [];
  ended = false;

  constructor(readonly socket: Socket) {
    socket.on('data', (c: Buffer) => {
      this.#buf = Buffer.concat([this.#buf, c]);
      this.#wake();
    });
    socket.on('close', () => {
      this.ended = true;
      this.#wake();
    });
    socket.on('error', () => {});
  }

  #wake(): void {
    const w = this.#waiters;
    this.#waiters = [];
    for (const f of w) f();
  }

  async #wait(timeoutMs: number): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('timed out waiting for server bytes')), timeoutMs);
      this.#waiters.push(() => {
        clearTimeout(t);
        resolve();
      });
    });
  }

  /** Bytes up to (not including) the next NUL; null if the socket closed first. */
  async untilNul(timeoutMs = 10_000): Promise<string | null> {
    for (;;) {
      const i = this.#buf.indexOf(0);
      if (i !== -1) {
        const s = this.#buf.toString('utf8', 0, i);
        this.#buf = this.#buf.subarray(i + 1);
        return s;
      }
      if (this.ended) return null;
      await this.#wait(timeoutMs);
    }
  }

  async take(n: number, timeoutMs = 10_000): Promise<Buffer | null> {
    while (this.#buf.length < n) {
      if (this.ended) return null;
      await this.#wait(timeoutMs);
    }
    const out = this.#buf.subarray(0, n);
    this.#buf = this.#buf.subarray(n);
    return out;
  }

  /** Resolves once the server closed the connection. */
  async closed(timeoutMs = 10_000): Promise<void> {
    while (!this.ended) await this.#wait(timeoutMs);
  }
}

export async function openSocket(port: number, host = '127.0.0.1'): Promise<{ socket: Socket; reader: ByteReader }> {
  const socket = connect(port, host);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('error', reject);
  });
  return { socket, reader: new ByteReader(socket) };
}

const hmac = (key: Buffer, data: string): Buffer => createHmac('sha256', key).update(data).digest();

/** Connect and authenticate as admin. */
export async function rawConnect(port: number, password = ''): Promise<RawConnection> {
  const { socket, reader } = await openSocket(port);
  const nonce = randomBytes(18).toString('base64');
  const first = `n=admin,r=${nonce}`;
  socket.write(
    Buffer.concat([
      V1_0,
      Buffer.from(
        JSON.stringify({ protocol_version: 0, authentication_method: 'SCRAM-SHA-256', authentication: `n,,${first}` }),
      ),
      Buffer.from([0]),
    ]),
  );
  const hello = JSON.parse((await reader.untilNul()) as string) as { success: boolean };
  if (!hello.success) throw new Error('no hello');
  const sf = JSON.parse((await reader.untilNul()) as string) as { success: boolean; authentication: string };
  if (!sf.success) throw new Error(`server-first failed: ${JSON.stringify(sf)}`);
  const [r, s, i] = sf.authentication.split(',').map((p) => p.slice(2)) as [string, string, string];
  const salted = pbkdf2Sync(password, Buffer.from(s, 'base64'), Number(i), 32, 'sha256');
  const clientKey = hmac(salted, 'Client Key');
  const storedKey = createHash('sha256').update(clientKey).digest();
  const withoutProof = `c=biws,r=${r}`;
  const auth = `${first},${sf.authentication},${withoutProof}`;
  const sig = hmac(storedKey, auth);
  const proof = Buffer.from(clientKey.map((b, k) => b ^ (sig[k] as number)));
  socket.write(
    Buffer.concat([
      Buffer.from(JSON.stringify({ authentication: `${withoutProof},p=${proof.toString('base64')}` })),
      Buffer.from([0]),
    ]),
  );
  const fin = JSON.parse((await reader.untilNul()) as string) as { success: boolean; authentication: string };
  if (!fin.success) throw new Error(`auth failed: ${JSON.stringify(fin)}`);
  const expected = `v=${hmac(hmac(salted, 'Server Key'), auth).toString('base64')}`;
  if (fin.authentication !== expected) throw new Error('bad server signature');
  return new RawConnection(socket, reader);
}

export interface RawResponse {
  token: bigint;
  body: { t: number; r: unknown[]; e?: number; b?: unknown[]; n?: number[] };
}

export class RawConnection {
  constructor(
    readonly socket: Socket,
    readonly reader: ByteReader,
  ) {}

  frame(token: bigint, body: string | Buffer): Buffer {
    const b = typeof body === 'string' ? Buffer.from(body) : body;
    const h = Buffer.alloc(12);
    h.writeBigInt64LE(token, 0);
    h.writeUInt32LE(b.length, 8);
    return Buffer.concat([h, b]);
  }

  send(token: bigint, body: string | Buffer): void {
    this.socket.write(this.frame(token, body));
  }

  async response(timeoutMs = 10_000): Promise<RawResponse | null> {
    const h = await this.reader.take(12, timeoutMs);
    if (!h) return null;
    const body = await this.reader.take(h.readUInt32LE(8), timeoutMs);
    if (!body) return null;
    return { token: h.readBigInt64LE(0), body: JSON.parse(body.toString('utf8')) as RawResponse['body'] };
  }

  async query(token: bigint, body: unknown): Promise<RawResponse> {
    this.send(token, JSON.stringify(body));
    const res = await this.response();
    if (!res) throw new Error('connection closed');
    return res;
  }

  close(): void {
    this.socket.destroy();
  }
}
