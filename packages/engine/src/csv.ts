/**
 * `csvToNdjson`: CSV (or TSV) records to NDJSON documents in one native call, for importers.
 * The Rust transcoder is `core/src/csv.rs`; README.md ("CSV to NDJSON") states the contract.
 */
import { binding } from './binding.ts';

export type CsvColumnType = 'string' | 'number' | 'int' | 'boolean' | 'json' | 'auto';
const COLUMN_TYPES: readonly string[] = ['string', 'number', 'int', 'boolean', 'json', 'auto'];

export type CsvNewline = 'lf' | 'crlf' | 'cr';
const NEWLINE_CODE = { lf: 0, crlf: 1, cr: 2, detect: 3 } as const;

export interface CsvColumn {
  /** The document's key for this column. */
  name: string;
  /** How its cells convert (README.md: "CSV to NDJSON"). */
  type: CsvColumnType;
}

export interface CsvToNdjsonOptions {
  /** One ASCII character; default `,`. */
  delimiter?: string;
  /** Whether `"` quotes fields; default true, except with a tab delimiter (TSV). */
  quoting?: boolean;
  /**
   * The record delimiter: `\n` (a `\r` before it is data), `\r\n` (a lone `\n` ends a record
   * too) or `\r`; default `detect`: the one the input's first line ends with, as csv-parse does.
   * Give it explicitly when the input is one block of many from the same file.
   */
  newline?: CsvNewline | 'detect';
  /** The columns; absent or null: read the header (the first record) instead of documents. */
  columns?: readonly CsvColumn[] | null;
  /** Skip a UTF-8 byte-order mark at the start (the input starts at the file's start); default false. */
  stripBom?: boolean;
  /** The input ends here: its last record may lack a line ending; default false (it is left over). */
  atEnd?: boolean;
  /** A record whose text is longer is a reject (`record longer than N bytes`); default 64 MiB. */
  maxRecordBytes?: number;
}

export interface CsvRecordError {
  /** Index of the record: its numbers are `records[4 * record …]`. */
  record: number;
  /** What is wrong and in which column, e.g. `column "age": "x" is not a number`. */
  message: string;
  /** The record's text without its line ending. */
  raw: string;
}

export interface CsvBatch {
  /** The documents, each followed by `\n`. */
  ndjson: Buffer;
  /**
   * Four numbers per record, in input order: line breaks between the start of the input and its
   * first line; the input offset just past it (and its line ending); the start and end of its
   * document in `ndjson`, both 0xFFFFFFFF for a reject (its message is in `errors`).
   */
  records: Uint32Array;
  errors: CsvRecordError[];
  /** Input bytes the records (and the empty lines among them, and the header) took. */
  consumed: number;
  /** Line breaks in those bytes. */
  lines: number;
  /** A quoting error stopped the call here (the records before it are in the batch). */
  syntaxError?: { line: number; message: string } | null;
  /** Without columns: the header's cells, when the input held its whole record. */
  header?: string[] | null;
  /** Without columns: line breaks before the header's first line. */
  headerLine: number;
}

/** The default of `maxRecordBytes`, the CLI's limit on a record too. */
export const DEFAULT_MAX_RECORD_BYTES = 64 * 1024 * 1024;

/** Document bounds of a rejected record in `CsvBatch.records`. */
export const CSV_REJECT = 0xffffffff;

/**
 * Converts the whole CSV records at the start of `input` (which starts at a record boundary) into
 * NDJSON documents keyed by `columns`; a record left unfinished at the end is not taken unless
 * `atEnd`. Synchronous (it runs on the calling thread, ~100 ns per field). Throws a `TypeError` on
 * bad options; bad records are in the batch, never thrown.
 */
export function csvToNdjson(input: Uint8Array, options: CsvToNdjsonOptions = {}): CsvBatch {
  if (!(input instanceof Uint8Array)) throw new TypeError('csvToNdjson: input must be a Buffer or Uint8Array');
  const delimiter = options.delimiter ?? ',';
  if (delimiter.length !== 1 || delimiter.charCodeAt(0) > 0x7f)
    throw new TypeError(`csvToNdjson: delimiter must be one ASCII character, got ${JSON.stringify(delimiter)}`);
  const maxRecordBytes = options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES;
  if (!Number.isSafeInteger(maxRecordBytes) || maxRecordBytes < 0)
    throw new TypeError(`csvToNdjson: maxRecordBytes must be a non-negative integer, got ${maxRecordBytes}`);
  const newline = NEWLINE_CODE[options.newline ?? 'detect'];
  if (newline === undefined)
    throw new TypeError(`csvToNdjson: newline must be lf, crlf, cr or detect, got ${JSON.stringify(options.newline)}`);
  const columns = options.columns ?? null;
  if (columns) {
    columns.forEach((c, i) => {
      if (typeof c?.name !== 'string' || !COLUMN_TYPES.includes(c.type))
        throw new TypeError(
          `csvToNdjson: column ${i + 1} needs a name and a type (${COLUMN_TYPES.join(', ')}), got ${JSON.stringify(c)}`,
        );
    });
  }
  const buf = Buffer.isBuffer(input) ? input : Buffer.from(input.buffer, input.byteOffset, input.byteLength);
  return binding().csvToNdjson(buf, columns ? columns.map((c) => ({ name: c.name, kind: c.type })) : null, {
    delimiter: delimiter.charCodeAt(0),
    quoting: options.quoting ?? delimiter !== '\t',
    newline,
    stripBom: options.stripBom ?? false,
    atEnd: options.atEnd ?? false,
    maxRecordBytes,
  });
}
