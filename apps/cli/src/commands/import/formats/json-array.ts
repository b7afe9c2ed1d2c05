/**
 * A JSON array of documents (`[ {...}, {...} ]`), streamed: a byte scanner finds where each
 * element starts and ends (tracking strings, escapes and bracket nesting) and hands the element's
 * text over without parsing it; only one element is ever held in memory. Elements that are not
 * objects are rejected. A broken array structure (not an element's content) stops the import,
 * since what follows cannot be located reliably.
 */
import { DEFAULT_MAX_RECORD_BYTES, type Emit, type FormatParser, START, type StartAt } from './types.js';

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

  feed(chunk: Buffer, emit: Emit): number {
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

  end(_emit: Emit): void {
    if (this.#state === S.InValue) {
      this.#fail(`the input ends inside the element starting at line ${this.#elemLine}`, this.#offset);
    }
    if (this.#state !== S.Done) this.#fail("the input ends before the array's closing ']'", this.#offset);
  }
}
