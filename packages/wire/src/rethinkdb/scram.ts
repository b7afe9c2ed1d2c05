/**
 * SCRAM-SHA-256 as RethinkDB's V1_0 handshake does it (RFC 5802/7677 without channel binding),
 * the arithmetic both ends share: the server (`@wharf/server`'s driver port) checks proofs with
 * it, the client (`@wharf/client`'s rethinkdb:// target) makes them.
 *
 *   SaltedPassword  = PBKDF2-HMAC-SHA-256(password, salt, iterations, 32)
 *   ClientKey       = HMAC(SaltedPassword, "Client Key");  StoredKey = SHA-256(ClientKey)
 *   ServerKey       = HMAC(SaltedPassword, "Server Key")
 *   AuthMessage     = client-first-bare + "," + server-first + "," + client-final-without-proof
 *   ClientProof     = ClientKey XOR HMAC(StoredKey, AuthMessage)      (p= in client-final)
 *   server-final    = "v=" + base64(HMAC(ServerKey, AuthMessage))
 */
import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';

export const DEFAULT_ITERATIONS = 4096;

export interface ScramCredentials {
  salt: Buffer;
  iterations: number;
  storedKey: Buffer;
  serverKey: Buffer;
}

export const hmac = (key: Buffer, data: string | Buffer): Buffer => createHmac('sha256', key).update(data).digest();

export function saltedPassword(password: string, salt: Buffer, iterations: number): Buffer {
  return pbkdf2Sync(Buffer.from(password, 'utf8'), salt, iterations, 32, 'sha256');
}

/** What a server keeps for a user: salt, iterations, StoredKey and ServerKey (never the password). */
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
export function serverFinal(creds: Pick<ScramCredentials, 'serverKey'>, message: string): string {
  return `v=${hmac(creds.serverKey, message).toString('base64')}`;
}

/** The attributes of a server-first-message (`r=…,s=…,i=…`), or null when one is missing. */
export function parseServerFirst(message: string): { nonce: string; salt: Buffer; iterations: number } | null {
  const attr = (k: string) => new RegExp(`(?:^|,)${k}=([^,]*)`).exec(message)?.[1];
  const nonce = attr('r');
  const salt = attr('s');
  const iterations = Number(attr('i'));
  if (nonce === undefined || salt === undefined || !Number.isInteger(iterations) || iterations < 1) return null;
  return { nonce, salt: Buffer.from(salt, 'base64'), iterations };
}

/**
 * The client's side: client-final-message for a password, and the server-final it must get back.
 * `salted` may be given (PBKDF2 of the password, cached by the caller per salt and iterations).
 */
export function clientFinal(
  password: string,
  salt: Buffer,
  iterations: number,
  clientFirstBare: string,
  serverFirstMessage: string,
  salted: Buffer = saltedPassword(password, salt, iterations),
): { message: string; expectedServerFinal: string } {
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
