/**
 * NDJSON: one document per line. Lines are handed over as bytes (no decode, no parse: the
 * engine parses them); blank lines are skipped but counted; a trailing '\r' is dropped; a line
 * longer than the limit is rejected and skipped without being kept in memory.
 */
import { DEFAULT_MAX_RECORD_BYTES, type Emit, type FormatParser, START, type StartAt } from './types.js';

const NL = 0x0a;
const CR = 0x0d;

function isBlank(b: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const c = b[i]!;
    if (c !== 0x20 && c !== 0x09 && c !== CR) return false;
  }
  return true;
}

export class NdjsonParser implements FormatParser {
  #line: number;
  #offset: number; // offset of the first byte of the next chunk
  #parts: Buffer[] = [];
  #partBytes = 0;
  #partLine = 0;
  #skipping = false; // inside a line that is too long
  #skipHead = '';
  #atStart: boolean; // the next line is the input's first: it may start with a BOM
  readonly #max: number;

  constructor(start: StartAt = START, maxRecordBytes = DEFAULT_MAX_RECORD_BYTES) {
    this.#line = start.line;
    this.#offset = start.offset;
    this.#atStart = start.offset === 0;
    this.#max = maxRecordBytes;
  }

  readonly pending = false;

  #emitLine(buf: Buffer, start: number, end: number, line: number, endOffset: number, emit: Emit): boolean | void {
    if (this.#atStart) {
      this.#atStart = false;
      if (end - start >= 3 && buf[start] === 0xef && buf[start + 1] === 0xbb && buf[start + 2] === 0xbf) start += 3;
    }
    if (end - start > this.#max) {
      return emit(
        null,
        line,
        endOffset,
        `line longer than ${this.#max} bytes`,
        `${buf.toString('utf8', start, start + 200)}…`,
      );
    }
    if (end > start && buf[end - 1] === CR) end--;
    if (
      end === start ||
      ((buf[start] === 0x20 || buf[start] === 0x09 || buf[start] === CR) && isBlank(buf, start, end))
    )
      return true;
    return emit(buf.subarray(start, end), line, endOffset);
  }

  feed(chunk: Buffer, emit: Emit): number {
    let pos = 0;
    const base = this.#offset;
    while (pos < chunk.length) {
      const nl = chunk.indexOf(NL, pos);
      if (nl === -1) {
        this.#carry(chunk.subarray(pos));
        pos = chunk.length;
        break;
      }
      let go: boolean | void;
      if (this.#parts.length > 0 || this.#skipping) {
        this.#carry(chunk.subarray(pos, nl));
        go = this.#finishCarried(base + nl + 1, emit);
      } else {
        go = this.#emitLine(chunk, pos, nl, this.#line, base + nl + 1, emit);
      }
      this.#line++;
      pos = nl + 1;
      if (go === false) break;
    }
    this.#offset += pos;
    return pos;
  }

  #carry(piece: Buffer): void {
    if (this.#parts.length === 0 && !this.#skipping) this.#partLine = this.#line;
    if (this.#skipping) return;
    if (this.#partBytes + piece.length > this.#max) {
      // Reported when the line ends, so its offset is where the next line starts.
      this.#skipHead = `${Buffer.concat([...this.#parts, piece])
        .subarray(0, 200)
        .toString('utf8')}…`;
      this.#parts = [];
      this.#partBytes = 0;
      this.#skipping = true;
      return;
    }
    // Copy: the chunk may be reused by the stream.
    this.#parts.push(Buffer.from(piece));
    this.#partBytes += piece.length;
  }

  #finishCarried(endOffset: number, emit: Emit): boolean | void {
    if (this.#skipping) {
      this.#skipping = false;
      this.#atStart = false;
      return emit(null, this.#partLine, endOffset, `line longer than ${this.#max} bytes`, this.#skipHead);
    }
    const buf = this.#parts.length === 1 ? this.#parts[0]! : Buffer.concat(this.#parts);
    this.#parts = [];
    this.#partBytes = 0;
    return this.#emitLine(buf, 0, buf.length, this.#partLine, endOffset, emit);
  }

  end(emit: Emit): void {
    if (this.#parts.length > 0 || this.#skipping) this.#finishCarried(this.#offset, emit);
  }
}
