/**
 * CSV (and TSV) with a header line, through csv-parse. Each record becomes an object keyed by the
 * header. Values are strings unless typed: `auto` infers numbers, booleans and null (and drops
 * empty fields); `header` reads a type from each header cell, `name:type` (string, number, int,
 * boolean, json, auto). A record whose field count differs from the header's, or whose typed value
 * does not convert, is rejected with its line. A quoting error stops the import (the records after
 * it cannot be located reliably).
 */
import { parse } from 'csv-parse';
import { type Emit, type FormatParser, START, type StartAt } from './types.js';

export type CsvTypes = 'none' | 'auto' | 'header';
export type ColumnType = 'string' | 'number' | 'int' | 'boolean' | 'json' | 'auto';
const COLUMN_TYPES: readonly ColumnType[] = ['string', 'number', 'int', 'boolean', 'json', 'auto'];

export interface CsvOptions {
  delimiter: string;
  types: CsvTypes;
  /** The header, when resuming past it. */
  header?: string[];
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

interface CsvApi {
  parse(buf: Buffer | undefined, end: boolean, push: (r: CsvRecord) => void, close: () => void): Error | undefined;
}

export class CsvParser implements FormatParser {
  #api: CsvApi;
  #columns: Column[] | null;
  readonly #types: CsvTypes;
  readonly #baseOffset: number;
  readonly #baseLine: number;
  #pending: CsvRecord[] = [];
  #next = 0; // index of the next pending record to emit
  #error: Error | null = null;

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
    this.#baseLine = start.line - 1;
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

  #record(r: CsvRecord, emit: Emit): boolean | void {
    const endLine = this.#baseLine + r.info.lines;
    const endOffset = this.#baseOffset + r.info.bytes;
    // The record's first line: its end line minus the line breaks inside it (leading blank lines
    // that csv-parse skipped are part of `raw`, but not of the record).
    const body = r.raw.replace(/^[\r\n]+/, '').replace(/\r?\n$/, '');
    let inner = 0;
    for (let i = body.indexOf('\n'); i !== -1; i = body.indexOf('\n', i + 1)) inner++;
    const line = endLine - inner;
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
    if (!this.#error) return;
    const lines = (this.#error as { lines?: number }).lines;
    throw new CsvError(this.#error.message, this.#baseLine + (lines ?? 0));
  }

  feed(chunk: Buffer, emit: Emit): number {
    if (chunk.length > 0 && !this.#error) {
      this.#error =
        this.#api.parse(
          chunk,
          false,
          (r) => this.#pending.push(r),
          () => {},
        ) ?? null;
    }
    this.#drain(emit);
    // Records before a syntax error are emitted first; then the error stops the import.
    if (!this.pending) this.#throwIfFailed();
    return chunk.length;
  }

  end(emit: Emit): void {
    if (!this.#error)
      this.#error =
        this.#api.parse(
          undefined,
          true,
          (r) => this.#pending.push(r),
          () => {},
        ) ?? null;
    this.#drain(emit, true);
    this.#throwIfFailed();
    if (!this.#columns) throw new CsvError('the input has no header line', 1);
  }
}
