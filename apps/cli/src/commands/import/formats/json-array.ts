/**
 * A JSON array of documents (`[ {...}, {...} ]`), streamed: a byte scanner finds where each
 * element starts and ends (tracking strings, escapes and bracket nesting) and hands the element's
 * text over without parsing it; only one element is ever held in memory. Elements that are not
 * objects are rejected. A broken array structure (not an element's content) stops the import,
 * since what follows cannot be located reliably.
 *
 * With a block sink, a chunk's elements go over as blocks: one copy of the chunk's span from the
 * first element to the last, with the commas between them turned into blanks (elements one per
 * line) or newlines (all on one line), so the engine reads one element per line. Only the common
 * layout takes this path (object elements on one line each, or all on one line, within a chunk);
 * anything else (a multi-line element, one cut by the chunk's end, a non-object, a broken
 * structure) is handled one element at a time by the byte-by-byte scanner, with the same results.
 */
import {
  DEFAULT_MAX_RECORD_BYTES,
  type Emit,
  type EmitBlock,
  type FormatParser,
  START,
  type StartAt,
} from './types.js';

/** Nesting tracked by the block path's scanner; deeper elements take the byte-by-byte path. */
const FAST_DEPTH = 64;
const SPACE = 0x20;

enum S {
  BeforeArray,
  BeforeValue,
  InValue,
  AfterValue,
  Done,
}

const NL = 0x0a;

function isWs(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

export class JsonArrayError extends Error {
  constructor(
    message: string,
    readonly line: number,
    readonly offset: number,
  ) {
    super(`${message} (line ${line}, byte ${offset})`);
    this.name = 'JsonArrayError';
  }
}

export class JsonArrayParser implements FormatParser {
  #state: S;
  #line: number;
  #offset: number;
  // element in progress
  #parts: Buffer[] = [];
  #partBytes = 0;
  #elemLine = 0;
  #stack: number[] = []; // expected closers: 0x7d '}' or 0x5d ']'
  #inString = false;
  #escape = false;
  #scalar = false;
  #elements = 0;
  readonly #max: number;

  constructor(start: StartAt = START, maxRecordBytes = DEFAULT_MAX_RECORD_BYTES) {
    this.#state = start.resumed ? S.AfterValue : S.BeforeArray;
    this.#line = start.line;
    this.#offset = start.offset;
    this.#max = maxRecordBytes;
  }

  /** Elements seen so far (documents and rejected ones). */
  get elements(): number {
    return this.#elements;
  }

  #fail(message: string, at: number): never {
    throw new JsonArrayError(message, this.#line, at);
  }

  readonly pending = false;

  #closers = new Uint8Array(FAST_DEPTH);
  #commas = new Int32Array(1024);

  feed(chunk: Buffer, emit: Emit, emitBlock?: EmitBlock): number {
    return emitBlock ? this.#feedBlocks(chunk, emit, emitBlock) : this.#feedRecords(chunk, emit);
  }

  /** An element the byte-by-byte scanner produced, handed over as a block of one. */
  #elementBlock(
    doc: unknown,
    line: number,
    endOffset: number,
    emit: Emit,
    emitBlock: EmitBlock,
  ): boolean | void {
    if (doc instanceof Uint8Array) return emitBlock(doc as Buffer, 1, line, endOffset, 1, 'value');
    // A multi-line element: on one line for the engine.
    const text = doc as string;
    let encoded: string;
    try {
      encoded = JSON.stringify(JSON.parse(text));
    } catch (err) {
      return emit(null, line, endOffset, `invalid JSON: ${(err as Error).message}`, text);
    }
    return emitBlock(Buffer.from(encoded), 1, line, endOffset, 1, 'value');
  }

  #feedBlocks(chunk: Buffer, emit: Emit, emitBlock: EmitBlock): number {
    const n = chunk.length;
    const base = this.#offset;
    let i = 0;
    let paused = false;
    // One step of the byte-by-byte scanner from `i`: up to the end of one element (or of the chunk).
    const oneStep = () => {
      this.#offset = base + i;
      const used = this.#feedRecords(chunk.subarray(i), (doc, line, endOffset, error, raw) => {
        const go =
          doc === null
            ? emit(null, line, endOffset, error, raw)
            : this.#elementBlock(doc, line, endOffset, emit, emitBlock);
        if (go === false) paused = true;
        return false;
      });
      i += used;
    };
    const closers = this.#closers;
    let commas = this.#commas;
    let line = this.#line;
    let state = this.#state;
    // The block being gathered: [blockStart, lastEnd) of the chunk.
    let docs = 0;
    let blockStart = 0;
    let blockLine = 0;
    let lastEnd = 0;
    let lineStep = -1;
    let ncommas = 0;
    let sepLines = 0; // newlines since the last element's end
    const flush = (): boolean => {
      if (docs === 0) return true;
      const bytes = Buffer.allocUnsafe(lastEnd - blockStart);
      chunk.copy(bytes, 0, blockStart, lastEnd);
      const sep = lineStep === 0 ? NL : SPACE;
      // (a comma after the last element is not in the block)
      for (let k = 0; k < ncommas && commas[k]! < lastEnd; k++) bytes[commas[k]! - blockStart] = sep;
      const go = emitBlock(bytes, docs, blockLine, base + lastEnd, lineStep === 0 ? 0 : 1, 'value');
      docs = 0;
      ncommas = 0;
      return go !== false;
    };
    while (i < n && !paused) {
      if (state !== S.AfterValue && state !== S.BeforeValue) {
        if (!flush()) {
          paused = true;
          break;
        }
        this.#line = line;
        this.#state = state;
        oneStep();
        line = this.#line;
        state = this.#state;
        sepLines = 0;
        continue;
      }
      const c = chunk[i]!;
      if (c === SPACE || c === NL || c === 0x0d || c === 0x09) {
        if (c === NL) {
          line++;
          sepLines++;
        }
        i++;
        continue;
      }
      if (state === S.AfterValue) {
        if (c === 0x2c) {
          if (docs > 0) {
            if (ncommas === commas.length) {
              const grown = new Int32Array(commas.length * 2);
              grown.set(commas);
              commas = grown;
              this.#commas = grown;
            }
            commas[ncommas++] = i;
          }
          state = S.BeforeValue;
          i++;
          continue;
        }
        state = S.Done; // ']' (or an error the byte-by-byte scanner reports)
        if (c !== 0x5d) {
          state = S.AfterValue;
          if (!flush()) {
            paused = true;
            break;
          }
          this.#line = line;
          this.#state = state;
          oneStep(); // throws
          continue;
        }
        i++;
        continue;
      }
      // BeforeValue: an element starts at i.
      if (c !== 0x7b) {
        state = S.BeforeValue;
        if (!flush()) {
          paused = true;
          break;
        }
        this.#line = line;
        this.#state = state;
        oneStep();
        line = this.#line;
        state = this.#state;
        sepLines = 0;
        continue;
      }
      // Scan the object: strings, escapes, nesting; give up on anything unusual.
      let depth = 1;
      closers[0] = 0x7d;
      let inString = false;
      let end = -1;
      let j = i + 1;
      for (; j < n; j++) {
        const b = chunk[j]!;
        if (inString) {
          if (b === 0x22) inString = false;
          else if (b === 0x5c) {
            if (chunk[++j] === NL) break;
          } else if (b === NL) break;
          continue;
        }
        if (b === 0x22) inString = true;
        else if (b === 0x7b || b === 0x5b) {
          if (depth === FAST_DEPTH) break;
          closers[depth++] = b + 2; // '{' → '}', '[' → ']'
        } else if (b === 0x7d || b === 0x5d) {
          if (closers[--depth] !== b) break;
          if (depth === 0) {
            end = j + 1;
            break;
          }
        } else if (b === NL) break;
      }
      const fitsBlock = docs === 0 || (lineStep === -1 ? sepLines <= 1 : sepLines === lineStep);
      if (end === -1 || !fitsBlock || end - i > this.#max) {
        // Not for the block path (or not within this block): the block so far goes first.
        if (!flush()) {
          paused = true; // resumes before this element
          break;
        }
        if (end === -1 || end - i > this.#max) {
          this.#line = line;
          this.#state = S.BeforeValue;
          oneStep();
          line = this.#line;
          state = this.#state;
          sepLines = 0;
          continue;
        }
      }
      if (docs === 0) {
        blockStart = i;
        blockLine = line;
        lineStep = -1;
      } else if (lineStep === -1) lineStep = sepLines;
      docs++;
      this.#elements++;
      lastEnd = end;
      sepLines = 0;
      state = S.AfterValue;
      i = end;
    }
    if (!paused && !flush()) paused = true;
    this.#line = line;
    this.#state = state;
    this.#offset = base + i;
    return i;
  }

  #feedRecords(chunk: Buffer, emit: Emit): number {
    let i = 0;
    const base = this.#offset;
    const n = chunk.length;
    let elemStart = this.#state === S.InValue ? 0 : -1;
    while (i < n) {
      const c = chunk[i]!;
      switch (this.#state) {
        case S.InValue: {
          // Hot loop: scan the element's bytes.
          let done = false;
          for (; i < n; i++) {
            const b = chunk[i]!;
            if (this.#inString) {
              if (b === NL) this.#line++;
              if (this.#escape) this.#escape = false;
              else if (b === 0x5c) this.#escape = true;
              else if (b === 0x22) this.#inString = false;
              continue;
            }
            if (this.#scalar) {
              if (b === 0x2c || b === 0x5d || isWs(b)) {
                done = true; // the scalar ended before b
                break;
              }
              if (b === 0x22) this.#inString = true;
              continue;
            }
            if (b === NL) this.#line++;
            else if (b === 0x22) this.#inString = true;
            else if (b === 0x7b) this.#stack.push(0x7d);
            else if (b === 0x5b) this.#stack.push(0x5d);
            else if (b === 0x7d || b === 0x5d) {
              if (this.#stack.pop() !== b) {
                this.#fail(
                  `mismatched '${String.fromCharCode(b)}' in the element starting at line ${this.#elemLine}`,
                  base + i,
                );
              }
              if (this.#stack.length === 0) {
                i++;
                done = true;
                break;
              }
            }
          }
          if (!done) {
            this.#carry(chunk.subarray(elemStart, n), base + n);
            this.#offset += n;
            return n;
          }
          const go = this.#finishElement(chunk, elemStart, i, base + i, emit);
          elemStart = -1;
          this.#state = S.AfterValue;
          if (go === false) {
            this.#offset += i;
            return i;
          }
          break;
        }
        case S.BeforeArray:
          if (c === NL) this.#line++;
          if (isWs(c) || (base + i < 3 && (c === 0xef || c === 0xbb || c === 0xbf))) {
            i++; // whitespace, or the UTF-8 BOM
            break;
          }
          if (c !== 0x5b) this.#fail(`expected '[' to open the array, found '${String.fromCharCode(c)}'`, base + i);
          this.#state = S.BeforeValue;
          i++;
          break;
        case S.BeforeValue:
          if (c === NL) this.#line++;
          if (isWs(c)) {
            i++;
            break;
          }
          if (c === 0x5d && this.#elements === 0) {
            this.#state = S.Done;
            i++;
            break;
          }
          if (c === 0x2c || c === 0x5d) this.#fail(`expected an element, found '${String.fromCharCode(c)}'`, base + i);
          this.#state = S.InValue;
          this.#elemLine = this.#line;
          this.#stack.length = 0;
          this.#inString = false;
          this.#escape = false;
          this.#scalar = c !== 0x7b && c !== 0x5b;
          elemStart = i;
          break;
        case S.AfterValue:
          if (c === NL) this.#line++;
          if (isWs(c)) {
            i++;
            break;
          }
          if (c === 0x2c) this.#state = S.BeforeValue;
          else if (c === 0x5d) this.#state = S.Done;
          else this.#fail(`expected ',' or ']' after an element, found '${String.fromCharCode(c)}'`, base + i);
          i++;
          break;
        case S.Done:
          if (c === NL) this.#line++;
          if (!isWs(c)) this.#fail('data after the end of the array', base + i);
          i++;
          break;
      }
    }
    this.#offset += n;
    return n;
  }

  #carry(piece: Buffer, at: number): void {
    this.#partBytes += piece.length;
    if (this.#partBytes > this.#max) {
      this.#fail(`element starting at line ${this.#elemLine} is longer than ${this.#max} bytes`, at);
    }
    this.#parts.push(Buffer.from(piece)); // a copy: the stream may reuse its chunk
  }

  #finishElement(chunk: Buffer, start: number, end: number, endOffset: number, emit: Emit): boolean | void {
    let text: Buffer = chunk.subarray(start, end);
    if (this.#parts.length > 0) {
      this.#parts.push(text);
      text = Buffer.concat(this.#parts);
      this.#parts = [];
      this.#partBytes = 0;
    }
    this.#elements++;
    if (this.#scalar)
      return emit(null, this.#elemLine, endOffset, 'a document must be a JSON object', text.toString('utf8'));
    if (text[0] !== 0x7b) {
      return emit(
        null,
        this.#elemLine,
        endOffset,
        'a document must be a JSON object, not an array',
        text.subarray(0, 1000).toString('utf8'),
      );
    }
    // Multi-line elements are re-encoded on one line by the loader (it parses them then).
    return emit(text.indexOf(NL) === -1 ? text : text.toString('utf8'), this.#elemLine, endOffset);
  }

  end(_emit: Emit, _emitBlock?: EmitBlock): void {
    if (this.#state === S.InValue) {
      this.#fail(`the input ends inside the element starting at line ${this.#elemLine}`, this.#offset);
    }
    if (this.#state !== S.Done) this.#fail("the input ends before the array's closing ']'", this.#offset);
  }
}
