/**
 * NDJSON: one document per line. Lines are handed over as bytes (no decode, no parse: the
 * engine parses them); blank lines are skipped but counted; a trailing '\r' is dropped; a line
 * longer than the limit is rejected and skipped without being kept in memory.
 *
 * With a block sink, each chunk's whole lines go over as one block (cut at blank lines, which
 * are not documents, and around a line too long); per line, only its end is found and its first
 * byte looked at. A line cut by the chunk's end is carried and handed over as a block of one.
 */
import {
  DEFAULT_MAX_RECORD_BYTES,
  type Emit,
  type EmitBlock,
  type FormatParser,
  START,
  type StartAt,
} from './types.js';

const NL = 0x0a;
const CR = 0x0d;
const FF = 0x0c;

function isBlank(b: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const c = b[i]!;
    if (c !== 0x20 && c !== 0x09 && c !== CR && c !== FF) return false;
  }
  return true;
}

/** A line the engine skips: empty or ASCII whitespace only (Rust's `trim_ascii`), so not a document. */
function isBlankLine(b: Buffer, start: number, end: number): boolean {
  if (end === start) return true;
  const c = b[start]!;
  return (c === 0x20 || c === 0x09 || c === CR || c === FF) && isBlank(b, start, end);
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
        `${buf.toString('utf8', start, Math.min(end, start + 200))}…`,
      );
    }
    if (end > start && buf[end - 1] === CR) end--;
    if (isBlankLine(buf, start, end)) return true;
    return emit(buf.subarray(start, end), line, endOffset);
  }

  feed(chunk: Buffer, emit: Emit, emitBlock?: EmitBlock): number {
    if (emitBlock) return this.#feedBlocks(chunk, emit, emitBlock);
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

  #feedBlocks(chunk: Buffer, emit: Emit, emitBlock: EmitBlock): number {
    const base = this.#offset;
    const n = chunk.length;
    let pos = 0;
    let go: boolean | void = true;
    const nl0 = chunk.indexOf(NL);
    if (nl0 === -1) {
      this.#carry(chunk);
      this.#offset += n;
      return n;
    }
    if (this.#parts.length > 0 || this.#skipping) {
      // The line carried from the previous chunks ends here: a block of its own.
      this.#carry(chunk.subarray(0, nl0));
      go = this.#finishCarried(base + nl0 + 1, emit, emitBlock);
      this.#line++;
      pos = nl0 + 1;
    } else if (this.#atStart) {
      this.#atStart = false;
      if (n >= 3 && chunk[0] === 0xef && chunk[1] === 0xbb && chunk[2] === 0xbf) pos = 3;
    }
    const last = chunk.lastIndexOf(NL);
    const max = this.#max;
    let line = this.#line;
    let blockStart = pos;
    let blockLine = line;
    let docs = 0;
    while (go !== false && pos <= last) {
      const nl = chunk.indexOf(NL, pos);
      const c = chunk[pos]!;
      // The common case: a line that starts a JSON object, within the limit.
      if (c === 0x7b && nl - pos <= max) {
        docs++;
        line++;
        pos = nl + 1;
        continue;
      }
      if (!(nl - pos > max) && !isBlankLine(chunk, pos, nl)) {
        docs++;
        line++;
        pos = nl + 1;
        continue;
      }
      // A blank line, or one too long: the block so far goes, the line is skipped or rejected.
      if (docs > 0) go = emitBlock(chunk.subarray(blockStart, pos), docs, blockLine, base + pos, 1, 'newline');
      if (nl - pos > max) {
        const rejected = emit(
          null,
          line,
          base + nl + 1,
          `line longer than ${max} bytes`,
          `${chunk.toString('utf8', pos, Math.min(nl, pos + 200))}…`,
        );
        if (rejected === false) go = false;
      }
      line++;
      pos = nl + 1;
      blockStart = pos;
      blockLine = line;
      docs = 0;
    }
    if (docs > 0) go = emitBlock(chunk.subarray(blockStart, pos), docs, blockLine, base + pos, 1, 'newline');
    this.#line = line;
    if (go !== false && pos < n) {
      this.#carry(chunk.subarray(pos));
      pos = n;
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

  #finishCarried(endOffset: number, emit: Emit, emitBlock?: EmitBlock): boolean | void {
    if (this.#skipping) {
      this.#skipping = false;
      this.#atStart = false;
      return emit(null, this.#partLine, endOffset, `line longer than ${this.#max} bytes`, this.#skipHead);
    }
    const buf = this.#parts.length === 1 ? this.#parts[0]! : Buffer.concat(this.#parts);
    this.#parts = [];
    this.#partBytes = 0;
    if (!emitBlock) return this.#emitLine(buf, 0, buf.length, this.#partLine, endOffset, emit);
    let start = 0;
    if (this.#atStart) {
      this.#atStart = false;
      if (buf.length >= 3 && buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf) start = 3;
    }
    if (isBlankLine(buf, start, buf.length)) return true;
    return emitBlock(buf.subarray(start), 1, this.#partLine, endOffset, 1, 'newline');
  }

  end(emit: Emit, emitBlock?: EmitBlock): void {
    if (this.#parts.length > 0 || this.#skipping) this.#finishCarried(this.#offset, emit, emitBlock);
  }
}
