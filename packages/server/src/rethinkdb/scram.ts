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
import type { ScramCredentials } from '@wharf/wire/rethinkdb';

// The arithmetic is shared with the client (`@wharf/wire/rethinkdb`); the parsing of what a
// client sends, and its error codes, are the server's.
export {
  authMessage,
  clientFinal,
  DEFAULT_ITERATIONS,
  deriveCredentials,
  type ScramCredentials,
  saltedPassword,
  serverFinal,
  verifyProof,
} from '@wharf/wire/rethinkdb';

export class ScramError extends Error {
  readonly errorCode: number;
  constructor(errorCode: number, message: string) {
    super(message);
    this.name = 'ScramError';
    this.errorCode = errorCode;
  }
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
