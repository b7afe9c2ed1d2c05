/**
 * The V1_0 handshake as a byte-driven state machine (no sockets): feed it what arrives, write
 * what it returns. Every reply is one buffer (JSON + NUL), to be written with one write call:
 * the official driver crashes on a handshake reply split across TCP segments.
 *
 *   C: magic c3 bd c2 34            S: {"success":true,"min_protocol_version":0,...}\0
 *   C: {"protocol_version":0,...,"authentication":"n,,n=admin,r=<cnonce>"}\0
 *                                   S: {"success":true,"authentication":"r=…,s=…,i=4096"}\0
 *   C: {"authentication":"c=biws,r=…,p=…"}\0
 *                                   S: {"success":true,"authentication":"v=…"}\0
 *
 * Drivers send the magic and the first JSON message in one write without waiting, so several
 * steps may be fed at once; bytes after the last NUL are handed back as `rest` (query frames).
 */
import { createHmac, randomBytes } from 'node:crypto';
import { SERVER_VERSION, UNSUPPORTED_VERSION_TEXT, Version } from './protocol.js';
import {
  authMessage,
  type ClientFirst,
  deriveCredentials,
  parseClientFinal,
  parseClientFirst,
  type ScramCredentials,
  ScramError,
  serverFinal,
  serverFirst,
  verifyProof,
} from './scram.js';

export interface HandshakeOptions {
  /** SCRAM credentials of a user, or undefined when there is no such user. */
  credentials(user: string): ScramCredentials | undefined;
  /** Why this connection may not log in as `user` (e.g. empty password off loopback), or null. */
  refuse?(user: string): string | null;
  /** Cap on one JSON handshake message (the reference server uses 2048). */
  maxMessageBytes: number;
  serverVersion?: string;
  /** Key for the stable fake salt of unknown users (so a user's existence is not revealed). */
  secret?: Buffer;
}

export type HandshakeResult =
  | { status: 'pending'; replies: Buffer[] }
  | { status: 'done'; replies: Buffer[]; user: string; rest: Buffer }
  | { status: 'failed'; replies: Buffer[]; reason: string; badCredentials: boolean };

type Stage = 'magic' | 'first' | 'final' | 'done' | 'failed';

const NUL = Buffer.from([0]);

function reply(obj: object): Buffer {
  return Buffer.concat([Buffer.from(JSON.stringify(obj), 'utf8'), NUL]);
}

export function handshakeError(code: number, error: string): Buffer {
  return reply({ success: false, error, error_code: code });
}

export class Handshake {
  readonly #opts: HandshakeOptions;
  readonly #secret: Buffer;
  #stage: Stage = 'magic';
  #buf: Buffer = Buffer.alloc(0);
  #first?: ClientFirst;
  #serverFirst = '';
  #fullNonce = '';
  #creds?: ScramCredentials;
  #unknownUser = false;

  constructor(opts: HandshakeOptions) {
    this.#opts = opts;
    this.#secret = opts.secret ?? randomBytes(32);
  }

  get stage(): Stage {
    return this.#stage;
  }

  push(chunk: Buffer): HandshakeResult {
    if (this.#stage === 'done' || this.#stage === 'failed') throw new Error('handshake already finished');
    this.#buf = this.#buf.length === 0 ? chunk : Buffer.concat([this.#buf, chunk]);
    const replies: Buffer[] = [];
    // badCredentials: a wrong password or an unknown user (what login throttling counts).
    const fail = (buf: Buffer, reason: string, badCredentials = false): HandshakeResult => {
      this.#stage = 'failed';
      replies.push(buf);
      return { status: 'failed', replies, reason, badCredentials };
    };
    for (;;) {
      if (this.#stage === 'magic') {
        if (this.#buf.length < 4) return { status: 'pending', replies };
        const magic = this.#buf.readUInt32LE(0);
        this.#buf = this.#buf.subarray(4);
        if (magic !== Version.V1_0) {
          return fail(
            Buffer.concat([Buffer.from(UNSUPPORTED_VERSION_TEXT), NUL]),
            `unsupported protocol version 0x${magic.toString(16)}`,
          );
        }
        replies.push(
          reply({
            success: true,
            min_protocol_version: 0,
            max_protocol_version: 0,
            server_version: this.#opts.serverVersion ?? SERVER_VERSION,
          }),
        );
        this.#stage = 'first';
        continue;
      }
      const nul = this.#buf.indexOf(0);
      if (nul === -1) {
        if (this.#buf.length >= this.#opts.maxMessageBytes)
          return fail(handshakeError(7, 'Limited read buffer size.'), 'handshake message too long');
        return { status: 'pending', replies };
      }
      if (nul >= this.#opts.maxMessageBytes)
        return fail(handshakeError(7, 'Limited read buffer size.'), 'handshake message too long');
      const text = this.#buf.toString('utf8', 0, nul);
      this.#buf = this.#buf.subarray(nul + 1);
      let msg: unknown;
      try {
        msg = JSON.parse(text);
      } catch {
        return fail(handshakeError(8, 'Invalid JSON object.'), 'handshake message is not JSON');
      }
      if (msg === null || typeof msg !== 'object' || Array.isArray(msg))
        return fail(handshakeError(8, 'Invalid JSON object.'), 'handshake message is not an object');
      try {
        if (this.#stage === 'first') {
          replies.push(this.#onFirst(msg as Record<string, unknown>));
          this.#stage = 'final';
          continue;
        }
        const user = this.#first?.user as string;
        replies.push(this.#onFinal(msg as Record<string, unknown>));
        this.#stage = 'done';
        const rest = this.#buf;
        this.#buf = Buffer.alloc(0);
        return { status: 'done', replies, user, rest };
      } catch (err) {
        if (err instanceof ScramError)
          return fail(
            handshakeError(err.errorCode, err.message),
            err.message,
            err.errorCode === 12 || err.errorCode === 17,
          );
        throw err;
      }
    }
  }

  #onFirst(msg: Record<string, unknown>): Buffer {
    if (typeof msg.protocol_version !== 'number') throw new ScramError(1, 'Expected a number for `protocol_version`.');
    if (msg.protocol_version !== 0) throw new ScramError(2, 'Unsupported `protocol_version`.');
    if (typeof msg.authentication_method !== 'string')
      throw new ScramError(3, 'Expected a string for `authentication_method`.');
    if (msg.authentication_method !== 'SCRAM-SHA-256') throw new ScramError(4, 'Unsupported `authentication_method`.');
    if (typeof msg.authentication !== 'string') throw new ScramError(5, 'Expected a string for `authentication`.');
    const first = parseClientFirst(msg.authentication);
    this.#first = first;
    const refused = this.#opts.refuse?.(first.user) ?? null;
    if (refused !== null) throw new ScramError(20, refused);
    let creds = this.#opts.credentials(first.user);
    if (creds === undefined) {
      // Answer like for a real user (stable fake salt), fail after the proof: code 17.
      this.#unknownUser = true;
      const salt = createHmac('sha256', this.#secret).update(first.user).digest().subarray(0, 16);
      creds = { salt, iterations: 4096, storedKey: Buffer.alloc(32), serverKey: Buffer.alloc(32) };
    }
    this.#creds = creds;
    this.#fullNonce = first.nonce + randomBytes(18).toString('base64');
    this.#serverFirst = serverFirst(this.#fullNonce, creds);
    return reply({ success: true, authentication: this.#serverFirst });
  }

  #onFinal(msg: Record<string, unknown>): Buffer {
    if (typeof msg.authentication !== 'string') throw new ScramError(5, 'Expected a string for `authentication`.');
    const final = parseClientFinal(msg.authentication);
    if (final.nonce !== this.#fullNonce) throw new ScramError(20, 'Other error');
    if (this.#unknownUser) throw new ScramError(17, 'Unknown user');
    const creds = this.#creds as ScramCredentials;
    const auth = authMessage((this.#first as ClientFirst).bare, this.#serverFirst, final.withoutProof);
    if (!verifyProof(creds, auth, final.proof)) throw new ScramError(12, 'Wrong password');
    return reply({ success: true, authentication: serverFinal(creds, auth) });
  }
}

/** Credentials of the single `admin` user for a password. */
export function adminCredentials(password: string): (user: string) => ScramCredentials | undefined {
  const creds = deriveCredentials(password);
  return (user) => (user === 'admin' ? creds : undefined);
}
