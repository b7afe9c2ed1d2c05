/**
 * The input: a file (read from any offset) or standard input (read once, in order). Both give
 * the first bytes for format detection, the bytes before a resume point (to count lines and read
 * a CSV header), then chunks from that point on.
 */
import { closeSync, createReadStream, openSync, readSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import type { Readable } from 'node:stream';

export const CHUNK_BYTES = 1024 * 1024;
const HEAD_BYTES = 64 * 1024;

export interface InputSource {
  /** null for standard input. */
  readonly path: string | null;
  /** Size in bytes when known (a regular file). */
  readonly size: number | null;
  /** The first bytes of the input (up to 64 KiB). */
  head(): Promise<Buffer>;
  /** Reads bytes [0, offset) in order, for counting lines or reading a header before a resume point. */
  prefix(offset: number, visit: (chunk: Buffer) => void): Promise<void>;
  /** Chunks from `offset` on (after prefix(offset) for standard input), up to `end` for a file. */
  chunks(offset: number, end?: number): AsyncIterable<Buffer>;
}

export function openInput(file: string, stdin: Readable): InputSource {
  return file === '-' ? new StreamSource(stdin) : new FileSource(file);
}

class FileSource implements InputSource {
  readonly path: string;
  readonly size: number;

  constructor(path: string) {
    const st = statSync(path);
    if (st.isDirectory()) throw new Error(`${path} is a directory`);
    this.path = path;
    this.size = st.isFile() ? st.size : Number.NaN;
  }

  async head(): Promise<Buffer> {
    const fd = openSync(this.path, 'r');
    try {
      const buf = Buffer.allocUnsafe(HEAD_BYTES);
      const n = readSync(fd, buf, 0, HEAD_BYTES, 0);
      return buf.subarray(0, n);
    } finally {
      closeSync(fd);
    }
  }

  async prefix(offset: number, visit: (chunk: Buffer) => void): Promise<void> {
    if (offset <= 0) return;
    for await (const c of createReadStream(this.path, { start: 0, end: offset - 1, highWaterMark: 1 << 20 }))
      visit(c as Buffer);
  }

  /**
   * Reads into two buffers in turn: a chunk's buffer is read into again two chunks later, once
   * the parser is done with it (parsers and the loader copy whatever they keep). A read stream
   * allocated a new buffer per chunk, which cost the import's main thread a tenth of its time.
   */
  async *chunks(offset: number, end = Number.POSITIVE_INFINITY): AsyncIterable<Buffer> {
    const fh = await open(this.path, 'r');
    try {
      const buffers = [Buffer.allocUnsafeSlow(CHUNK_BYTES), Buffer.allocUnsafeSlow(CHUNK_BYTES)];
      let position = offset;
      for (let k = 0; position < end; k ^= 1) {
        const buf = buffers[k]!;
        const want = Math.min(buf.length, end - position);
        const { bytesRead } = await fh.read(buf, 0, want, position);
        if (bytesRead === 0) return;
        position += bytesRead;
        yield buf.subarray(0, bytesRead);
      }
    } finally {
      await fh.close();
    }
  }
}

class StreamSource implements InputSource {
  readonly path = null;
  readonly size = null;
  #it: AsyncIterator<Buffer>;
  #pending: Buffer[] = [];
  #consumed = 0; // bytes handed out so far

  constructor(stream: Readable) {
    this.#it = (stream as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  }

  async #next(): Promise<Buffer | null> {
    if (this.#pending.length > 0) return this.#pending.shift()!;
    const r = await this.#it.next();
    if (r.done) return null;
    return typeof r.value === 'string' ? Buffer.from(r.value) : r.value;
  }

  async head(): Promise<Buffer> {
    const parts: Buffer[] = [];
    let n = 0;
    while (n < 1) {
      const c = await this.#next();
      if (!c) break;
      parts.push(c);
      n += c.length;
      // Enough to see the first non-blank byte.
      if (c.some((b) => b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09)) break;
      n = 0;
    }
    this.#pending.unshift(...parts);
    return Buffer.concat(parts).subarray(0, HEAD_BYTES);
  }

  async prefix(offset: number, visit: (chunk: Buffer) => void): Promise<void> {
    while (this.#consumed < offset) {
      const c = await this.#next();
      if (!c)
        throw new Error(
          `standard input ended after ${this.#consumed} bytes, before the resume point at byte ${offset}`,
        );
      const take = Math.min(c.length, offset - this.#consumed);
      visit(c.subarray(0, take));
      this.#consumed += take;
      if (take < c.length) this.#pending.unshift(c.subarray(take));
    }
  }

  async *chunks(offset: number): AsyncIterable<Buffer> {
    await this.prefix(offset, () => {});
    for (;;) {
      const c = await this.#next();
      if (!c) return;
      this.#consumed += c.length;
      yield c;
    }
  }
}
