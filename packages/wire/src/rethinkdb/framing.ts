/**
 * Query and response frames after the handshake, the same in both directions:
 *
 *   offset 0 : 8 bytes   token (opaque; echoed byte for byte)
 *   offset 8 : u32 LE    body length N
 *   offset 12: N bytes   UTF-8 JSON body
 *
 * Frames arrive split and merged arbitrarily (the official driver writes token, length and body
 * with three writes), so the reader reassembles them from chunks and only copies a frame's bytes
 * once it has all of them. This module knows nothing of terms.
 */

export const TOKEN_SIZE = 8;
export const FRAME_HEADER_SIZE = 12;

export type FrameEvent =
  | { kind: 'frame'; token: Buffer; body: Buffer }
  /** The announced body length exceeds the limit; the stream can't be resynchronised. */
  | { kind: 'too-large'; token: Buffer; length: number };

export class FrameReader {
  readonly #maxBody: number;
  #chunks: Buffer[] = [];
  #length = 0;
  #failed = false;

  constructor(maxBodyBytes: number) {
    this.#maxBody = maxBodyBytes;
  }

  /** Bytes buffered and not yet returned as frames. */
  get buffered(): number {
    return this.#length;
  }

  push(chunk: Buffer): void {
    if (this.#failed || chunk.length === 0) return;
    this.#chunks.push(chunk);
    this.#length += chunk.length;
  }

  /** The next complete frame, a too-large event (after which the reader stops), or null. */
  next(): FrameEvent | null {
    if (this.#failed || this.#length < FRAME_HEADER_SIZE) return null;
    const header = this.#peek(FRAME_HEADER_SIZE);
    const length = header.readUInt32LE(TOKEN_SIZE);
    const token = Buffer.from(header.subarray(0, TOKEN_SIZE));
    if (length > this.#maxBody) {
      this.#failed = true;
      this.#chunks = [];
      this.#length = 0;
      return { kind: 'too-large', token, length };
    }
    if (this.#length < FRAME_HEADER_SIZE + length) return null;
    this.#take(FRAME_HEADER_SIZE);
    const body = this.#take(length);
    return { kind: 'frame', token, body };
  }

  /** The first n bytes, without consuming them (n ≤ buffered). */
  #peek(n: number): Buffer {
    const first = this.#chunks[0] as Buffer;
    if (first.length >= n) return first.subarray(0, n);
    this.#chunks = [Buffer.concat(this.#chunks)];
    return (this.#chunks[0] as Buffer).subarray(0, n);
  }

  /** Remove and return the first n bytes (n ≤ buffered). */
  #take(n: number): Buffer {
    this.#length -= n;
    const first = this.#chunks[0];
    if (first !== undefined && first.length >= n) {
      if (first.length === n) this.#chunks.shift();
      else this.#chunks[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    const out = Buffer.allocUnsafe(n);
    let filled = 0;
    while (filled < n) {
      const c = this.#chunks[0] as Buffer;
      const want = n - filled;
      if (c.length <= want) {
        c.copy(out, filled);
        filled += c.length;
        this.#chunks.shift();
      } else {
        c.copy(out, filled, 0, want);
        this.#chunks[0] = c.subarray(want);
        filled += want;
      }
    }
    return out;
  }
}

/** The 12-byte header of a frame with a body of `bodyLength` bytes. */
export function responseHeader(token: Buffer, bodyLength: number): Buffer {
  const header = Buffer.allocUnsafe(FRAME_HEADER_SIZE);
  token.copy(header, 0, 0, TOKEN_SIZE);
  header.writeUInt32LE(bodyLength, TOKEN_SIZE);
  return header;
}

/** A whole response frame (header + UTF-8 JSON body) in one buffer. */
export function encodeResponse(token: Buffer, json: string): Buffer {
  const bodyLength = Buffer.byteLength(json, 'utf8');
  const frame = Buffer.allocUnsafe(FRAME_HEADER_SIZE + bodyLength);
  token.copy(frame, 0, 0, TOKEN_SIZE);
  frame.writeUInt32LE(bodyLength, TOKEN_SIZE);
  frame.write(json, FRAME_HEADER_SIZE, 'utf8');
  return frame;
}

/** A query frame (header + UTF-8 JSON body) in one buffer. */
export function encodeQuery(token: bigint | number, json: string): Buffer {
  const bodyLength = Buffer.byteLength(json, 'utf8');
  const frame = Buffer.allocUnsafe(FRAME_HEADER_SIZE + bodyLength);
  frame.writeBigInt64LE(BigInt(token), 0);
  frame.writeUInt32LE(bodyLength, TOKEN_SIZE);
  frame.write(json, FRAME_HEADER_SIZE, 'utf8');
  return frame;
}

/**
 * A query frame whose body is `prefix + base64(bytes) + suffix`, built straight into one buffer:
 * the bytes are base64-encoded natively and written as latin1, so the (large) text is never
 * JSON-escaped nor UTF-8 encoded. The prefix and suffix are JSON text around a string literal.
 */
export function encodeBase64Query(token: number, prefix: string, bytes: Buffer, suffix: string): Buffer {
  const pre = Buffer.byteLength(prefix, 'utf8');
  const b64 = bytes.toString('base64');
  const body = pre + b64.length + Buffer.byteLength(suffix, 'utf8');
  const frame = Buffer.allocUnsafe(FRAME_HEADER_SIZE + body);
  frame.writeUInt32LE(token >>> 0, 0);
  frame.writeUInt32LE(Math.floor(token / 2 ** 32), 4);
  frame.writeUInt32LE(body, TOKEN_SIZE);
  let at = FRAME_HEADER_SIZE + frame.write(prefix, FRAME_HEADER_SIZE, 'utf8');
  at += frame.write(b64, at, 'latin1');
  frame.write(suffix, at, 'utf8');
  return frame;
}
