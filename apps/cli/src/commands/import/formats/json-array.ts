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

/**
 * Finds the end of the object starting at chunk[i] ('{'): the index just past its '}', or -1 when
 * the block path leaves it to the byte-by-byte scanner (a newline in it, the chunk's end, nesting
 * deeper than FAST_DEPTH, a mismatched bracket). Only locals: this is the import's hot loop.
 */
function scanObject(chunk: Buffer, i: number, n: number, closers: Uint8Array): number {
  let depth = 1;
  closers[0] = 0x7d;
  let inString = false;
  for (let j = i + 1; j < n; j++) {
    const b = chunk[j]!;
    if (inString) {
      if (b === 0x22) inString = false;
      else if (b === 0x5c) {
        if (chunk[++j] === NL) return -1;
      } else if (b === NL) return -1;
      continue;
    }
    if (b === 0x22) inString = true;
    else if (b === 0x7b || b === 0x5b) {
      if (depth === FAST_DEPTH) return -1;
      closers[depth++] = b + 2; // '{' → '}', '[' → ']'
    } else if (b === 0x7d || b === 0x5d) {
      if (closers[--depth] !== b) return -1;
      if (depth === 0) return j + 1;
    } else if (b === NL) return -1;
  }
  return -1;
}

/**
 * Hands over the elements [blockStart, lastEnd) of a chunk as one block: copied, with the commas
 * between them made blanks (one element per line) or newlines (all on one line).
 */
function flushBlock(
  chunk: Buffer,
  blockStart: number,
  lastEnd: number,
  commas: Int32Array,
  ncommas: number,
  lineStep: number,
  docs: number,
  line: number,
  base: number,
  emitBlock: EmitBlock,
): boolean {
  const bytes = Buffer.allocUnsafe(lastEnd - blockStart);
  chunk.copy(bytes, 0, blockStart, lastEnd);
  const sep = lineStep === 0 ? NL : SPACE;
  // (a comma after the last element is not in the block)
  for (let k = 0; k < ncommas && commas[k]! < lastEnd; k++) bytes[commas[k]! - blockStart] = sep;
  return emitBlock(bytes, docs, line, base + lastEnd, lineStep === 0 ? 0 : 1, 'value') !== false;
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
  #elementBlock(doc: unknown, line: number, endOffset: number, emit: Emit, emitBlock: EmitBlock): boolean | void {
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

  #paused = false;

  /** One step of the byte-by-byte scanner from chunk[i]: up to the end of one element (or of the chunk). */
  #oneStep(chunk: Buffer, i: number, emit: Emit, emitBlock: EmitBlock): number {
    return this.#feedRecords(chunk.subarray(i), (doc, line, endOffset, error, raw) => {
      const go =
        doc === null
          ? emit(null, line, endOffset, error, raw)
          : this.#elementBlock(doc, line, endOffset, emit, emitBlock);
      if (go === false) this.#paused = true;
      return false;
    });
  }

  #feedBlocks(chunk: Buffer, emit: Emit, emitBlock: EmitBlock): number {
    const n = chunk.length;
    const base = this.#offset;
    const closers = this.#closers;
    const max = this.#max;
    let commas = this.#commas;
    let i = 0;
    let line = this.#line;
    let state = this.#state;
    // The block being gathered: elements [blockStart, lastEnd) of the chunk, the commas between them.
    let docs = 0;
    let blockStart = 0;
    let blockLine = 0;
    let lastEnd = 0;
    let lineStep = -1;
    let ncommas = 0;
    let sepLines = 0; // newlines since the last element's end
    let paused = false;
    this.#paused = false;
    while (i < n) {
      if (state !== S.AfterValue && state !== S.BeforeValue) {
        // Outside the array's elements (or inside one carried over): the byte-by-byte scanner.
        if (docs > 0) {
          paused = !flushBlock(chunk, blockStart, lastEnd, commas, ncommas, lineStep, docs, blockLine, base, emitBlock);
          docs = 0;
          ncommas = 0;
          if (paused) break;
        }
        this.#line = line;
        this.#state = state;
        this.#offset = base + i;
        i += this.#oneStep(chunk, i, emit, emitBlock);
        line = this.#line;
        state = this.#state;
        sepLines = 0;
        if (this.#paused) {
          paused = true;
          break;
        }
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
        } else if (c === 0x5d) {
          state = S.Done;
          i++;
        } else {
          // Not ',' or ']': the byte-by-byte scanner reports it (after the block so far).
          if (docs > 0) {
            paused = !flushBlock(
              chunk,
              blockStart,
              lastEnd,
              commas,
              ncommas,
              lineStep,
              docs,
              blockLine,
              base,
              emitBlock,
            );
            docs = 0;
            ncommas = 0;
          }
          this.#line = line;
          this.#state = state;
          this.#offset = base + i;
          this.#oneStep(chunk, i, emit, emitBlock); // throws
        }
        continue;
      }
      // BeforeValue: an element starts at i.
      const end = c === 0x7b ? scanObject(chunk, i, n, closers) : -1;
      const fits = docs === 0 || (lineStep === -1 ? sepLines <= 1 : sepLines === lineStep);
      if (end === -1 || !fits || end - i > max) {
        // Not for this block: the block so far goes first.
        if (docs > 0) {
          paused = !flushBlock(chunk, blockStart, lastEnd, commas, ncommas, lineStep, docs, blockLine, base, emitBlock);
          docs = 0;
          ncommas = 0;
          if (paused) break; // resumes before this element
        }
        if (end === -1 || end - i > max) {
          // Not for the block path at all: a non-object, a multi-line element, one cut by the chunk's end…
          this.#line = line;
          this.#state = S.BeforeValue;
          this.#offset = base + i;
          i += this.#oneStep(chunk, i, emit, emitBlock);
          line = this.#line;
          state = this.#state;
          sepLines = 0;
          if (this.#paused) {
            paused = true;
            break;
          }
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
    if (docs > 0 && !paused)
      paused = !flushBlock(chunk, blockStart, lastEnd, commas, ncommas, lineStep, docs, blockLine, base, emitBlock);
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
