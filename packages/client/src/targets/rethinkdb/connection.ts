/**
 * One raw connection to a RethinkDB driver port (Wharf's or a real RethinkDB), for the target's
 * bulk inserts: the V1_0 handshake as a client (SCRAM-SHA-256, the arithmetic from
 * `@wharf/wire/rethinkdb`), then query frames the target builds itself. The official driver
 * serializes a query with JSON.stringify and then UTF-8-encodes it, which for a batch's base64
 * text costs more CPU than the whole rest of the client; here the frame is
 * `[token][len][prefix + base64 + suffix]`, written straight into one buffer.
 *
 * Answers are mapped to the error names the official driver gives (ReqlOpFailedError,
 * ReqlOpIndeterminateError, ReqlAvailabilityError…), so the target's transient/retry logic reads
 * the same for both. A socket that fails rejects every query on it with ReqlDriverError whose
 * `outcomeUnknown` is set; `host` names the node.
 */
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import {
  clientFinal,
  encodeBase64Query,
  encodeQuery,
  FrameReader,
  parseServerFirst,
  ResponseType,
  runtimeErrorNames,
  saltedPassword,
  Version,
} from '@wharf/wire/rethinkdb';

/**
 * An error named as the official driver names it. `outcomeUnknown`: the query had been written
 * when its connection failed, so it may or may not have run (a server's answer never sets it).
 */
export class ReqlError extends Error {
  readonly outcomeUnknown: boolean;
  readonly host: string;
  constructor(name: string, message: string, host: string, outcomeUnknown = false) {
    super(message);
    this.name = name;
    this.host = host;
    this.outcomeUnknown = outcomeUnknown;
  }
}

export interface ConnectOptions {
  host: string;
  port: number;
  user: string;
  password: string;
  /** Give up connecting (TCP and handshake) after this long. */
  timeoutMs: number;
}

/** A response's body: `t`, `r`, and for errors `e` (runtime) and `b`. */
interface Response {
  t: number;
  r: unknown[];
  e?: number;
}

/** PBKDF2 of a password per (salt, iterations): 4096 rounds per connection add up otherwise. */
const saltedCache = new Map<string, Buffer>();
function salted(password: string, salt: Buffer, iterations: number): Buffer {
  const key = `${salt.toString('base64')}\0${iterations}\0${password}`;
  let s = saltedCache.get(key);
  if (!s) {
    s = saltedPassword(password, salt, iterations);
    if (saltedCache.size > 64) saltedCache.clear();
    saltedCache.set(key, s);
  }
  return s;
}

/** Largest response accepted (a write result; read-backs go through the official driver). */
const MAX_RESPONSE_BYTES = 64 << 20;

export class RawConnection {
  readonly host: string;
  /** The server's `server_version` from the handshake (Wharf's ends in `-wharf`). */
  readonly serverVersion: string;
  readonly #socket: Socket;
  readonly #reader = new FrameReader(MAX_RESPONSE_BYTES);
  readonly #pending = new Map<number, { resolve(r: Response): void; reject(e: Error): void }>();
  #nextToken = 1;
  #failure: ReqlError | null = null;

  private constructor(socket: Socket, host: string, serverVersion: string, rest: Buffer) {
    this.#socket = socket;
    this.host = host;
    this.serverVersion = serverVersion;
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    socket.on('error', (err) => this.#fail(`${err.message}`));
    socket.on('close', () => this.#fail('the connection closed'));
    if (rest.length > 0) this.#onData(rest);
  }

  /** Connects and logs in; rejects with ReqlDriverError (or ReqlAuthError for a bad login). */
  static open(opts: ConnectOptions): Promise<RawConnection> {
    const host = `${opts.host}:${opts.port}`;
    return new Promise((resolve, reject) => {
      const socket = connect({ host: opts.host, port: opts.port });
      socket.setNoDelay(true);
      let buf: Buffer = Buffer.alloc(0);
      let step = 0;
      let serverVersion = '';
      const nonce = randomBytes(18).toString('base64');
      const firstBare = `n=${opts.user.replace(/=/g, '=3D').replace(/,/g, '=2C')},r=${nonce}`;
      let expectedFinal = '';
      const fail = (name: string, why: string) => {
        clearTimeout(timer);
        socket.removeAllListeners();
        socket.on('error', () => {});
        socket.destroy();
        reject(new ReqlError(name, `Could not connect to ${host}: ${why}`, host));
      };
      const timer = setTimeout(() => fail('ReqlDriverError', `no answer in ${opts.timeoutMs} ms`), opts.timeoutMs);
      socket.on('error', (err) => fail('ReqlDriverError', err.message));
      socket.on('close', () => fail('ReqlDriverError', 'the connection closed during the handshake'));
      socket.on('connect', () => {
        const magic = Buffer.alloc(4);
        magic.writeUInt32LE(Version.V1_0, 0);
        const first = JSON.stringify({
          protocol_version: 0,
          authentication_method: 'SCRAM-SHA-256',
          authentication: `n,,${firstBare}`,
        });
        // The magic and the first message in one write, as the official drivers send them.
        socket.write(Buffer.concat([magic, Buffer.from(first, 'utf8'), Buffer.from([0])]));
      });
      socket.on('data', (chunk: Buffer) => {
        buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
        for (let nul = buf.indexOf(0); nul !== -1 && step < 3; nul = buf.indexOf(0)) {
          const text = buf.toString('utf8', 0, nul);
          buf = buf.subarray(nul + 1);
          let msg: {
            success?: boolean;
            error?: string;
            error_code?: number;
            authentication?: string;
            server_version?: string;
          };
          try {
            msg = JSON.parse(text);
          } catch {
            // A server that does not speak V1_0 answers in plain text.
            return fail('ReqlDriverError', text.trim() || 'not a RethinkDB driver port');
          }
          if (!msg.success) {
            const code = msg.error_code ?? 0;
            return fail(code >= 10 && code <= 20 ? 'ReqlAuthError' : 'ReqlDriverError', msg.error ?? 'refused');
          }
          if (step === 0) {
            serverVersion = String(msg.server_version ?? '');
            step = 1;
          } else if (step === 1) {
            const serverFirst = msg.authentication ?? '';
            const parsed = parseServerFirst(serverFirst);
            if (!parsed?.nonce.startsWith(nonce)) return fail('ReqlAuthError', 'Invalid nonce from server');
            const final = clientFinal(
              opts.password,
              parsed.salt,
              parsed.iterations,
              firstBare,
              serverFirst,
              salted(opts.password, parsed.salt, parsed.iterations),
            );
            expectedFinal = final.expectedServerFinal;
            socket.write(
              Buffer.concat([Buffer.from(JSON.stringify({ authentication: final.message })), Buffer.from([0])]),
            );
            step = 2;
          } else {
            if (msg.authentication !== expectedFinal) return fail('ReqlAuthError', 'Invalid server signature');
            step = 3;
            clearTimeout(timer);
            socket.removeAllListeners();
            resolve(new RawConnection(socket, host, serverVersion, buf));
            return;
          }
        }
      });
    });
  }

  /** True once the socket failed or was closed: open another. */
  get broken(): boolean {
    return this.#failure !== null;
  }

  /** Why the socket failed, once it has. */
  get failure(): string | null {
    return this.#failure?.message ?? null;
  }

  /** Runs a query whose body is `prefix + base64(bytes) + suffix`; resolves its atom. */
  runBase64(prefix: string, bytes: Buffer, suffix: string): Promise<unknown> {
    return this.#run((token) => encodeBase64Query(token, prefix, bytes, suffix));
  }

  /** Runs a query given as its JSON body (`[1, term, optargs?]`); resolves its atom or sequence. */
  runJson(body: string): Promise<unknown> {
    return this.#run((token) => encodeQuery(token, body));
  }

  #run(frame: (token: number) => Buffer): Promise<unknown> {
    if (this.#failure) return Promise.reject(new ReqlError('ReqlDriverError', this.#failure.message, this.host));
    const token = this.#nextToken++;
    return new Promise<Response>((resolve, reject) => {
      this.#pending.set(token, { resolve, reject });
      this.#socket.write(frame(token));
    }).then((res) => this.#answer(res));
  }

  #answer(res: Response): unknown {
    switch (res.t) {
      case ResponseType.SUCCESS_ATOM:
      case ResponseType.SERVER_INFO:
        return res.r[0];
      case ResponseType.SUCCESS_SEQUENCE:
        return res.r;
      case ResponseType.CLIENT_ERROR:
        throw new ReqlError('ReqlDriverError', String(res.r[0]), this.host);
      case ResponseType.COMPILE_ERROR:
        throw new ReqlError('ReqlCompileError', String(res.r[0]), this.host);
      case ResponseType.RUNTIME_ERROR:
        throw new ReqlError(runtimeErrorNames[res.e ?? 0] ?? 'ReqlRuntimeError', String(res.r[0]), this.host);
      default:
        // A partial sequence or a feed: nothing this connection sends asks for one.
        throw new ReqlError('ReqlDriverError', `unexpected response type ${res.t}`, this.host);
    }
  }

  #onData(chunk: Buffer): void {
    this.#reader.push(chunk);
    for (let ev = this.#reader.next(); ev !== null; ev = this.#reader.next()) {
      if (ev.kind === 'too-large') {
        this.#fail(`a response of ${ev.length} bytes is larger than ${MAX_RESPONSE_BYTES}`);
        return;
      }
      const token = ev.token.readUInt32LE(0) + ev.token.readUInt32LE(4) * 2 ** 32;
      const waiter = this.#pending.get(token);
      if (!waiter) continue;
      this.#pending.delete(token);
      try {
        waiter.resolve(JSON.parse(ev.body.toString('utf8')) as Response);
      } catch (err) {
        waiter.reject(
          new ReqlError('ReqlDriverError', `unreadable response: ${(err as Error).message}`, this.host, true),
        );
      }
    }
  }

  /** The socket is gone: every query waiting on it fails, its outcome unknown. */
  #fail(why: string): void {
    if (this.#failure) return;
    this.#failure = new ReqlError('ReqlDriverError', `Connection to ${this.host} failed: ${why}`, this.host, true);
    this.#socket.destroy();
    for (const { reject } of this.#pending.values())
      reject(new ReqlError('ReqlDriverError', this.#failure.message, this.host, true));
    this.#pending.clear();
  }

  close(): void {
    this.#fail('closed by the client');
  }
}
