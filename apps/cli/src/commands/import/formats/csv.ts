/**
 * CSV (and TSV) with a header line. Each record becomes an object keyed by the header. Values are
 * strings unless typed: `auto` infers numbers, booleans and null (and drops empty fields); `header`
 * reads a type from each header cell, `name:type` (string, number, int, boolean, json, auto). A
 * record whose field count differs from the header's, or whose typed value does not convert, is
 * rejected with its line. A quoting error stops the import (the records after it cannot be located
 * reliably).
 *
 * Two paths give the same documents and rejects (test/csv-paths.test.ts runs both on the same
 * inputs): with @wharf/engine installed, its native transcoder (`csvToNdjson`) turns each block of
 * records into NDJSON documents in one call, emitted as byte slices like the NDJSON parser's, and
 * a record longer than the limit is rejected and skipped; without it (a remote-only install),
 * csv-parse makes one object per record.
 */
import { parse } from 'csv-parse';
import { DEFAULT_MAX_RECORD_BYTES, type Emit, type FormatParser, START, type StartAt } from './types.js';

export type CsvTypes = 'none' | 'auto' | 'header';
export type ColumnType = 'string' | 'number' | 'int' | 'boolean' | 'json' | 'auto';
const COLUMN_TYPES: readonly ColumnType[] = ['string', 'number', 'int', 'boolean', 'json', 'auto'];

export interface CsvOptions {
  delimiter: string;
  types: CsvTypes;
  /** The header, when resuming past it. */
  header?: string[];
  /** Use @wharf/engine's transcoder (true; it must be loaded: `loadNativeCsv`) or csv-parse (false); default: the transcoder when loaded. */
  native?: boolean;
}

export class CsvError extends Error {
  constructor(
    message: string,
    readonly line: number,
  ) {
    super(`${message}`);
    this.name = 'CsvError';
  }
}

interface Column {
  name: string;
  type: ColumnType;
}

/** Parses the header cells into columns. Throws on empty or duplicate names, unknown types. */
export function columnsOf(header: string[], types: CsvTypes): Column[] {
  const seen = new Set<string>();
  return header.map((cell, i) => {
    let name = cell;
    let type: ColumnType = types === 'auto' ? 'auto' : 'string';
    if (types === 'header') {
      const colon = cell.lastIndexOf(':');
      if (colon > 0) {
        const t = cell.slice(colon + 1).trim() as ColumnType;
        if (!COLUMN_TYPES.includes(t)) {
          throw new CsvError(
            `header column ${i + 1} (${JSON.stringify(cell)}): unknown type ${JSON.stringify(t)} (known: ${COLUMN_TYPES.join(', ')})`,
            1,
          );
        }
        name = cell.slice(0, colon);
        type = t;
      }
    }
    name = name.trim();
    if (!name) throw new CsvError(`header column ${i + 1} has no name`, 1);
    if (seen.has(name)) throw new CsvError(`header column ${JSON.stringify(name)} appears twice`, 1);
    seen.add(name);
    return { name, type };
  });
}

const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/** Converts one cell; returns undefined to drop the field; throws a message on a bad value. */
export function convert(value: string, type: ColumnType): unknown {
  switch (type) {
    case 'string':
      return value;
    case 'auto':
      if (value === '') return undefined;
      if (value === 'true') return true;
      if (value === 'false') return false;
      if (value === 'null') return null;
      if (NUMBER.test(value)) {
        const n = Number(value);
        if (Number.isFinite(n)) return n;
      }
      return value;
    case 'number':
    case 'int': {
      if (value === '') return undefined;
      const n = Number(value);
      if (!NUMBER.test(value.trim()) || !Number.isFinite(n))
        throw new Error(`${JSON.stringify(value)} is not a number`);
      if (type === 'int' && !Number.isSafeInteger(n)) throw new Error(`${JSON.stringify(value)} is not an integer`);
      return n;
    }
    case 'boolean': {
      if (value === '') return undefined;
      const v = value.toLowerCase();
      if (v === 'true' || v === '1' || v === 'yes') return true;
      if (v === 'false' || v === '0' || v === 'no') return false;
      throw new Error(`${JSON.stringify(value)} is not a boolean`);
    }
    case 'json':
      if (value === '') return undefined;
      try {
        return JSON.parse(value);
      } catch {
        throw new Error(`${JSON.stringify(value.slice(0, 100))} is not JSON`);
      }
  }
}

interface CsvRecord {
  record: string[];
  info: { lines: number; bytes: number };
  raw: string;
}

/** A record located in the input by this parser (csv-parse's line count and `raw` are off with CRLF). */
interface LocatedRecord {
  record: string[];
  line: number;
  endOffset: number;
  /** Its text without the empty lines before it and its line ending. */
  body: string;
}

interface CsvApi {
  parse(buf: Buffer | undefined, end: boolean, push: (r: CsvRecord) => void, close: () => void): Error | undefined;
}

/** csv-parse: one object per record. */
class CsvParseParser implements FormatParser {
  #api: CsvApi;
  #columns: Column[] | null;
  readonly #types: CsvTypes;
  readonly #baseOffset: number;
  #pending: LocatedRecord[] = [];
  #next = 0; // index of the next pending record to emit
  #error: CsvError | null = null;
  #window: Buffer = Buffer.alloc(0); // the input from #windowOffset on, not yet taken by a record
  #windowOffset = 0; // relative to #baseOffset
  #line: number; // line number at #windowOffset

  constructor(opts: CsvOptions, start: StartAt = START) {
    const quoting = opts.delimiter === '\t' ? { quote: false as const } : {};
    // csv-parse's stream Parser exposes its push-style engine as `api`; driving it directly keeps
    // this parser synchronous like the others (no stream, no extra buffering).
    const parser = parse({
      bom: start.offset === 0,
      delimiter: opts.delimiter,
      skip_empty_lines: true,
      relax_column_count: true,
      info: true,
      raw: true,
      ...quoting,
    }) as unknown as { api?: CsvApi };
    if (!parser.api) throw new Error('csv-parse: unsupported version (no push API)');
    this.#api = parser.api;
    this.#types = opts.types;
    this.#columns = opts.header ? columnsOf(opts.header, opts.types) : null;
    this.#baseOffset = start.offset;
    this.#line = start.line;
  }

  /** The header's column names (after the header was read). */
  get header(): string[] | null {
    return this.#columns?.map((c) => c.name) ?? null;
  }

  get pending(): boolean {
    return this.#next < this.#pending.length;
  }

  /** Emits pending records until one is refused (`all`: ignore refusals). */
  #drain(emit: Emit, all = false): void {
    while (this.#next < this.#pending.length) {
      const go = this.#record(this.#pending[this.#next++]!, emit);
      if (go === false && !all) break;
    }
    if (this.#next === this.#pending.length) {
      this.#pending = [];
      this.#next = 0;
    }
  }

  /** Finds the record csv-parse just gave in the input: its first line and its text. */
  #locate(r: CsvRecord): LocatedRecord {
    const w = this.#window;
    const end = r.info.bytes - this.#windowOffset;
    let start = 0;
    let line = this.#line;
    while (start < end && (w[start] === 0x0a || w[start] === 0x0d)) if (w[start++] === 0x0a) line++;
    let stop = end;
    if (stop > start && w[stop - 1] === 0x0a) stop--;
    if (stop > start && w[stop - 1] === 0x0d) stop--;
    const located = {
      record: r.record,
      line,
      endOffset: this.#baseOffset + r.info.bytes,
      body: w.toString('utf8', start, stop),
    };
    for (let i = w.indexOf(0x0a, start); i !== -1 && i < end; i = w.indexOf(0x0a, i + 1)) line++;
    this.#line = line;
    this.#window = w.subarray(end);
    this.#windowOffset += end;
    return located;
  }

  /** A quoting error stops the parse at the first line of the record that holds it. */
  #failed(err: Error): CsvError {
    const w = this.#window;
    let line = this.#line;
    for (let i = 0; i < w.length && (w[i] === 0x0a || w[i] === 0x0d); i++) if (w[i] === 0x0a) line++;
    return new CsvError(err.message.replace(/ at line \d+/, ''), line);
  }

  #parse(chunk: Buffer | undefined): void {
    if (chunk) this.#window = this.#window.length > 0 ? Buffer.concat([this.#window, chunk]) : Buffer.from(chunk);
    const err = this.#api.parse(
      chunk,
      chunk === undefined,
      (r) => this.#pending.push(this.#locate(r)),
      () => {},
    );
    if (err) this.#error = this.#failed(err);
  }

  #record(r: LocatedRecord, emit: Emit): boolean | void {
    const { line, endOffset, body } = r;
    if (!this.#columns) {
      try {
        this.#columns = columnsOf(r.record, this.#types);
      } catch (err) {
        throw new CsvError((err as Error).message, line);
      }
      return true;
    }
    const cols = this.#columns;
    if (r.record.length !== cols.length) {
      return emit(null, line, endOffset, `${r.record.length} fields, the header has ${cols.length}`, body);
    }
    const doc: Record<string, unknown> = {};
    for (let i = 0; i < cols.length; i++) {
      const c = cols[i]!;
      let v: unknown;
      try {
        v = convert(r.record[i]!, c.type);
      } catch (err) {
        return emit(null, line, endOffset, `column ${JSON.stringify(c.name)}: ${(err as Error).message}`, body);
      }
      if (v !== undefined) doc[c.name] = v;
    }
    return emit(doc, line, endOffset);
  }

  #throwIfFailed(): void {
    if (this.#error) throw this.#error;
  }

  feed(chunk: Buffer, emit: Emit): number {
    if (chunk.length > 0 && !this.#error) this.#parse(chunk);
    this.#drain(emit);
    // Records before a syntax error are emitted first; then the error stops the import.
    if (!this.pending) this.#throwIfFailed();
    return chunk.length;
  }

  end(emit: Emit): void {
    if (!this.#error) this.#parse(undefined);
    this.#drain(emit, true);
    this.#throwIfFailed();
    if (!this.#columns) throw new CsvError('the input has no header line', 1);
  }
}

// ── the native path ───────────────────────────────────────────────────────────────────────────

/**
 * The part of @wharf/engine's `csvToNdjson` this parser uses (README.md of @wharf/engine, "CSV to
 * NDJSON"), declared here: @wharf/engine is optional, and a remote-only install must work without it.
 */
interface NativeCsvBatch {
  ndjson: Buffer;
  records: Uint32Array;
  errors: { record: number; message: string; raw: string }[];
  consumed: number;
  lines: number;
  syntaxError?: { line: number; message: string } | null;
  header?: string[] | null;
  headerLine: number;
}
type CsvNewline = 'lf' | 'crlf' | 'cr';
type CsvToNdjson = (
  input: Uint8Array,
  options: {
    delimiter: string;
    quoting: boolean;
    newline: CsvNewline;
    columns: { name: string; type: ColumnType }[] | null;
    atEnd: boolean;
    maxRecordBytes: number;
  },
) => NativeCsvBatch;

const ENGINE_PACKAGE = '@wharf/engine';
let nativeCsv: CsvToNdjson | null | undefined;

/**
 * Loads @wharf/engine's CSV transcoder if it is installed and its addon loads; false otherwise
 * (the parser then uses csv-parse). Once per process.
 */
export async function loadNativeCsv(): Promise<boolean> {
  if (nativeCsv === undefined) {
    try {
      const engine = (await import(ENGINE_PACKAGE)) as { csvToNdjson?: CsvToNdjson };
      const fn = engine.csvToNdjson;
      if (typeof fn !== 'function') throw new Error('no csvToNdjson');
      // The addon loads on first use: a platform without it fails here, not mid-import.
      fn(Buffer.alloc(0), {
        delimiter: ',',
        quoting: true,
        newline: 'lf',
        columns: [],
        atEnd: true,
        maxRecordBytes: 1,
      });
      nativeCsv = fn;
    } catch {
      nativeCsv = null;
    }
  }
  return nativeCsv !== null;
}

const REJECT = 0xffffffff;
const QUOTE = 0x22;

/** csv-parse's choice of record delimiter: the first line ending outside quotes (null: none yet). */
function detectNewline(buf: Buffer, quoting: boolean): CsvNewline | null {
  let inQuotes = false;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i]!;
    if (c === QUOTE && quoting) inQuotes = !inQuotes;
    else if (inQuotes) continue;
    else if (c === 0x0a) return 'lf';
    else if (c === 0x0d) return i + 1 < buf.length ? (buf[i + 1] === 0x0a ? 'crlf' : 'cr') : null;
  }
  return null;
}

function countByte(buf: Buffer, byte: number, start = 0, end = buf.length): number {
  let n = 0;
  for (let i = buf.indexOf(byte, start); i !== -1 && i < end; i = buf.indexOf(byte, i + 1)) n++;
  return n;
}

interface PendingBatch {
  batch: NativeCsvBatch;
  next: number; // index of the next record to emit
  nextError: number;
  offset: number; // input offset of the batch's first byte
  line: number; // line number there
}

/** A record longer than the limit, being skipped: its bytes are scanned for its end, not kept. */
interface Skipping {
  line: number;
  head: string;
  inQuotes: boolean;
}

/** @wharf/engine's transcoder: NDJSON byte slices, one native call per block of records. */
class NativeCsvParser implements FormatParser {
  readonly #transcode: CsvToNdjson;
  readonly #delimiter: string;
  readonly #quoting: boolean;
  readonly #types: CsvTypes;
  readonly #max: number;
  #columns: Column[] | null;
  #newline: CsvNewline | null = null;
  #carry: Buffer = Buffer.alloc(0); // bytes from #offset on, not yet taken by a record
  #carryOwned = true; // false while #carry is (part of) a chunk the caller may reuse
  #offset: number;
  #line: number;
  #need = 0; // transcode again once the carry holds this many bytes (or at the end)
  #atStart: boolean; // the carry starts at the input's first byte: it may start with a BOM
  #pending: PendingBatch | null = null;
  #error: CsvError | null = null;
  #skipping: Skipping | null = null;

  constructor(transcode: CsvToNdjson, opts: CsvOptions, start: StartAt, maxRecordBytes: number) {
    this.#transcode = transcode;
    this.#delimiter = opts.delimiter;
    this.#quoting = opts.delimiter !== '\t';
    this.#types = opts.types;
    this.#max = maxRecordBytes;
    this.#columns = opts.header ? columnsOf(opts.header, opts.types) : null;
    this.#offset = start.offset;
    this.#line = start.line;
    this.#atStart = start.offset === 0;
  }

  get header(): string[] | null {
    return this.#columns?.map((c) => c.name) ?? null;
  }

  get pending(): boolean {
    return this.#pending !== null;
  }

  feed(chunk: Buffer, emit: Emit): number {
    if (chunk.length > 0) {
      if (this.#carry.length === 0) {
        this.#carry = chunk;
        this.#carryOwned = false;
      } else {
        this.#carry = Buffer.concat([this.#carry, chunk]);
        this.#carryOwned = true;
      }
    }
    try {
      this.#run(emit, false);
    } finally {
      if (!this.#carryOwned) {
        this.#carry = Buffer.from(this.#carry); // copy: the chunk may be reused by the stream
        this.#carryOwned = true;
      }
    }
    return chunk.length;
  }

  end(emit: Emit): void {
    this.#run(emit, true);
    if (this.#skipping) {
      const s = this.#skipping;
      this.#skipping = null;
      emit(null, s.line, this.#offset, `record longer than ${this.#max} bytes`, s.head);
    }
    if (!this.#columns) throw new CsvError('the input has no header line', 1);
  }

  #take(bytes: number, lines: number): void {
    this.#offset += bytes;
    this.#line += lines;
    this.#carry = this.#carry.subarray(bytes);
  }

  /** Emits what is parsed, then parses the carry, until it is used up or `emit` refuses. */
  #run(emit: Emit, atEnd: boolean): void {
    for (;;) {
      if (this.#pending && !this.#drain(emit, atEnd)) return;
      if (this.#error) throw this.#error;
      if (this.#skipping) {
        if (!this.#skip(emit)) return;
        continue;
      }
      if (this.#carry.length === 0 || (!atEnd && this.#carry.length < this.#need)) return;
      if (this.#atStart) {
        if (this.#carry.length < 3 && !atEnd) {
          this.#need = 3;
          return;
        }
        this.#atStart = false;
        const c = this.#carry;
        if (c[0] === 0xef && c[1] === 0xbb && c[2] === 0xbf) this.#take(3, 0);
        continue;
      }
      if (!this.#newline) {
        this.#newline = detectNewline(this.#carry, this.#quoting) ?? (atEnd ? 'lf' : null);
        if (!this.#newline) {
          this.#wait();
          return;
        }
      }
      const batch = this.#transcode(this.#carry, {
        delimiter: this.#delimiter,
        quoting: this.#quoting,
        newline: this.#newline,
        columns: this.#columns?.map((c) => ({ name: c.name, type: c.type })) ?? null,
        atEnd,
        maxRecordBytes: this.#max,
      });
      if (batch.syntaxError) this.#error = new CsvError(batch.syntaxError.message, this.#line + batch.syntaxError.line);
      if (!this.#columns) {
        if (this.#error) throw this.#error;
        if (!batch.header) {
          if (this.#carry.length > this.#max)
            throw new CsvError(`the header line is longer than ${this.#max} bytes`, this.#line);
          this.#need = this.#carry.length * 2;
          return;
        }
        try {
          this.#columns = columnsOf(batch.header, this.#types);
        } catch (err) {
          throw new CsvError((err as Error).message, this.#line + batch.headerLine);
        }
        this.#take(batch.consumed, batch.lines);
        this.#need = 0;
        continue;
      }
      if (batch.records.length > 0)
        this.#pending = { batch, next: 0, nextError: 0, offset: this.#offset, line: this.#line };
      const progressed = batch.consumed > 0;
      this.#take(batch.consumed, batch.lines);
      if (progressed)
        this.#need = this.#carry.length + 1; // the rest is one unfinished record
      else if (this.#error)
        continue; // emit the records before it, then throw
      else if (atEnd)
        return; // (at the end every byte is taken)
      else {
        this.#wait();
        if (!this.#skipping) return;
      }
    }
  }

  /**
   * The carry holds no whole record: transcode again once it doubled (so a long record costs
   * linear time), or skip the record once it is longer than the limit.
   */
  #wait(): void {
    this.#need = this.#carry.length * 2;
    const nl = this.#newline === 'cr' ? 0x0d : 0x0a;
    let lead = 0;
    while (lead < this.#carry.length && (this.#carry[lead] === nl || this.#carry[lead] === 0x0d)) lead++;
    // The record's text so far; the line ending still to come is not part of it.
    if (this.#carry.length - lead <= this.#max) return;
    this.#skipping = {
      line: this.#line + countByte(this.#carry, nl, 0, lead),
      head: `${this.#carry.subarray(lead, lead + 200).toString('utf8')}…`,
      inQuotes: false,
    };
    this.#need = 0;
  }

  /** Scans the carry for the end of the record being skipped; true when it ended (and was emitted). */
  #skip(emit: Emit): boolean {
    const s = this.#skipping!;
    const buf = this.#carry;
    const nl = this.#newline === 'cr' ? 0x0d : 0x0a;
    let end = -1;
    let pos = 0;
    while (end === -1) {
      const next = buf.indexOf(nl, pos);
      if (this.#quoting) {
        const stop = next === -1 ? buf.length : next;
        for (let q = buf.indexOf(QUOTE, pos); q !== -1 && q < stop; q = buf.indexOf(QUOTE, q + 1))
          s.inQuotes = !s.inQuotes;
      }
      if (next === -1) break;
      if (!s.inQuotes) end = next + 1;
      pos = next + 1;
    }
    if (end === -1) {
      this.#take(buf.length, countByte(buf, nl));
      return false;
    }
    this.#take(end, countByte(buf, nl, 0, end));
    this.#skipping = null;
    this.#need = 0;
    return emit(null, s.line, this.#offset, `record longer than ${this.#max} bytes`, s.head) !== false;
  }

  /** Emits the parsed records until one is refused (`all`: ignore refusals); true when all are. */
  #drain(emit: Emit, all: boolean): boolean {
    const p = this.#pending!;
    const { records, errors, ndjson } = p.batch;
    const count = records.length / 4;
    while (p.next < count) {
      const k = 4 * p.next++;
      const line = p.line + records[k]!;
      const end = p.offset + records[k + 1]!;
      const start = records[k + 2]!;
      let go: boolean | void;
      if (start === REJECT) {
        const e = errors[p.nextError++]!;
        go = emit(null, line, end, e.message, e.raw);
      } else {
        go = emit(ndjson.subarray(start, records[k + 3]!), line, end);
      }
      if (go === false && !all) {
        if (p.next === count) this.#pending = null;
        return false;
      }
    }
    this.#pending = null;
    return true;
  }
}

/** A CSV parser: @wharf/engine's transcoder when loaded (or asked for), else csv-parse. */
export class CsvParser implements FormatParser {
  readonly #impl: CsvParseParser | NativeCsvParser;
  /** Which path parses: `native` (@wharf/engine) or `csv-parse`. */
  readonly path: 'native' | 'csv-parse';

  constructor(opts: CsvOptions, start: StartAt = START, maxRecordBytes = DEFAULT_MAX_RECORD_BYTES) {
    // The transcoder takes a one-byte delimiter; csv-parse any string.
    const native =
      opts.native ?? (Boolean(nativeCsv) && opts.delimiter.length === 1 && opts.delimiter.charCodeAt(0) < 0x80);
    if (native && !nativeCsv) throw new Error('the native CSV transcoder is not loaded (await loadNativeCsv() first)');
    this.#impl = native
      ? new NativeCsvParser(nativeCsv!, opts, start, maxRecordBytes)
      : new CsvParseParser(opts, start);
    this.path = native ? 'native' : 'csv-parse';
  }

  get header(): string[] | null {
    return this.#impl.header;
  }

  get pending(): boolean {
    return this.#impl.pending;
  }

  feed(chunk: Buffer, emit: Emit): number {
    return this.#impl.feed(chunk, emit);
  }

  end(emit: Emit): void {
    this.#impl.end(emit);
  }
}
