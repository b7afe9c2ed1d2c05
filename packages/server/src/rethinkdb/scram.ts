/**
 * SCRAM-SHA-256 as RethinkDB does it (RFC 5802/7677 without channel binding; failures are
 * reported as RethinkDB handshake error codes 10–20, not with the RFC's `e=` attribute).
 *
 *   SaltedPassword  = PBKDF2-HMAC-SHA-256(password, salt, iterations, 32)
 *   ClientKey       = HMAC(SaltedPassword, "Client Key");  StoredKey = SHA-256(ClientKey)
 *   ServerKey       = HMAC(SaltedPassword, "Server Key")
 *   AuthMessage     = client-first-bare + "," + server-first + "," + client-final-without-proof
 *   ClientProof     = ClientKey XOR HMAC(StoredKey, AuthMessage)      (p= in client-final)
 *   server-final    = "v=" + base64(HMAC(ServerKey, AuthMessage))
 *
 * The server keeps StoredKey and ServerKey (never the password).
 */
import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';

export const DEFAULT_ITERATIONS = 4096;

export class ScramError extends Error {
  readonly errorCode: number;
  constructor(errorCode: number, message: string) {
    super(message);
    this.name = 'ScramError';
    this.errorCode = errorCode;
  }
}

export interface ScramCredentials {
  salt: Buffer;
  iterations: number;
  storedKey: Buffer;
  serverKey: Buffer;
}

const hmac = (key: Buffer, data: string | Buffer): Buffer => createHmac('sha256', key).update(data).digest();

export function saltedPassword(password: string, salt: Buffer, iterations: number): Buffer {
  return pbkdf2Sync(Buffer.from(password, 'utf8'), salt, iterations, 32, 'sha256');
}

export function deriveCredentials(
  password: string,
  salt: Buffer = randomBytes(16),
  iterations = DEFAULT_ITERATIONS,
): ScramCredentials {
  const salted = saltedPassword(password, salt, iterations);
  const clientKey = hmac(salted, 'Client Key');
  return {
    salt,
    iterations,
    storedKey: createHash('sha256').update(clientKey).digest(),
    serverKey: hmac(salted, 'Server Key'),
  };
}

/** Split `k=v,k=v` into attributes: one-character keys, no repeats; `m` is an extension. */
function attributes(text: string, allowed: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of text.split(',')) {
    const eq = part.indexOf('=');
    if (eq !== 1) throw new ScramError(10, 'Invalid encoding');
    const key = part[0] as string;
    if (key === 'm') throw new ScramError(11, 'Extensions not supported');
    if (!allowed.includes(key) || out.has(key)) throw new ScramError(10, 'Invalid encoding');
    out.set(key, part.slice(2));
  }
  return out;
}

/** saslname: `=2C` → `,`, `=3D` → `=`; any other `=` is invalid. */
function decodeSaslName(name: string): string {
  if (/=(?!2C|3D)/.test(name)) throw new ScramError(18, 'Invalid username encoding');
  return name.replace(/=2C/g, ',').replace(/=3D/g, '=');
}

export interface ClientFirst {
  user: string;
  nonce: string;
  /** client-first-message-bare (for AuthMessage). */
  bare: string;
}

export function parseClientFirst(message: string): ClientFirst {
  if (!message.startsWith('n,')) {
    if (/^[yp]/.test(message)) throw new ScramError(15, 'Channel binding is not supported');
    throw new ScramError(10, 'Invalid encoding');
  }
  const second = message.indexOf(',', 2);
  if (second === -1) throw new ScramError(10, 'Invalid encoding');
  const bare = message.slice(second + 1);
  const attrs = attributes(bare, 'nr');
  const user = attrs.get('n');
  const nonce = attrs.get('r');
  if (user === undefined || nonce === undefined || nonce.length === 0) throw new ScramError(10, 'Invalid encoding');
  return { user: decodeSaslName(user), nonce, bare };
}

/** server-first-message, attributes in the order r, s, i (rethinkdb-ts reads them by position). */
export function serverFirst(fullNonce: string, creds: Pick<ScramCredentials, 'salt' | 'iterations'>): string {
  return `r=${fullNonce},s=${creds.salt.toString('base64')},i=${creds.iterations}`;
}

export interface ClientFinal {
  nonce: string;
  proof: Buffer;
  withoutProof: string;
}

export function parseClientFinal(message: string): ClientFinal {
  const attrs = attributes(message, 'crp');
  const c = attrs.get('c');
  const r = attrs.get('r');
  const p = attrs.get('p');
  if (c === undefined || r === undefined || p === undefined) throw new ScramError(10, 'Invalid encoding');
  if (c !== 'biws') throw new ScramError(10, 'Invalid encoding');
  const proofAt = message.lastIndexOf(',p=');
  if (proofAt === -1) throw new ScramError(10, 'Invalid encoding');
  return { nonce: r, proof: Buffer.from(p, 'base64'), withoutProof: message.slice(0, proofAt) };
}

export function authMessage(
  clientFirstBare: string,
  serverFirstMessage: string,
  clientFinalWithoutProof: string,
): string {
  return `${clientFirstBare},${serverFirstMessage},${clientFinalWithoutProof}`;
}

/** True when `proof` was made with the password behind `creds`. Constant time. */
export function verifyProof(creds: ScramCredentials, message: string, proof: Buffer): boolean {
  if (proof.length !== 32) return false;
  const signature = hmac(creds.storedKey, message);
  const clientKey = Buffer.allocUnsafe(32);
  for (let i = 0; i < 32; i++) clientKey[i] = (proof[i] as number) ^ (signature[i] as number);
  return timingSafeEqual(createHash('sha256').update(clientKey).digest(), creds.storedKey);
}

/** server-final-message: `v=` + base64(ServerSignature). */
export function serverFinal(creds: ScramCredentials, message: string): string {
  return `v=${hmac(creds.serverKey, message).toString('base64')}`;
}

/** The client side (tests and tools): client-final-message for a password. */
export function clientFinal(
  password: string,
  salt: Buffer,
  iterations: number,
  clientFirstBare: string,
  serverFirstMessage: string,
): { message: string; expectedServerFinal: string } {
  const salted = saltedPassword(password, salt, iterations);
  const clientKey = hmac(salted, 'Client Key');
  const storedKey = createHash('sha256').update(clientKey).digest();
  const nonce = /(?:^|,)r=([^,]*)/.exec(serverFirstMessage)?.[1] ?? '';
  const withoutProof = `c=biws,r=${nonce}`;
  const auth = authMessage(clientFirstBare, serverFirstMessage, withoutProof);
  const sig = hmac(storedKey, auth);
  const proof = Buffer.allocUnsafe(32);
  for (let i = 0; i < 32; i++) proof[i] = (clientKey[i] as number) ^ (sig[i] as number);
  return {
    message: `${withoutProof},p=${proof.toString('base64')}`,
    expectedServerFinal: `v=${hmac(hmac(salted, 'Server Key'), auth).toString('base64')}`,
  };
}
