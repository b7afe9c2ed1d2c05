/** `@wharf/engine`: the embedded Wharf database. See README.md for the API and its contract. */

export { type Change, type ChangeBatch, ChangeFeed } from './changes.ts';
export {
  CSV_REJECT,
  type CsvBatch,
  type CsvColumn,
  type CsvColumnType,
  type CsvNewline,
  type CsvRecordError,
  type CsvToNdjsonOptions,
  csvToNdjson,
} from './csv.ts';
export { Database } from './database.ts';
export { ERROR_CODES, type ErrorCode, WharfError } from './errors.ts';
export { MAX_DOCUMENT_DEPTH } from './limits.ts';
export type {
  BetweenOptions,
  ChangesOptions,
  Conflict,
  CreateIndexOptions,
  CreateTableOptions,
  DeleteOptions,
  Durability,
  FilterPredicate,
  FilterSpec,
  IndexQueryOptions,
  IndexValue,
  IndexWaitOptions,
  Key,
  MatchField,
  OpenOptions,
  Page,
  PageQuery,
  PageRange,
  PageResume,
  ScanOptions,
  WriteOptions,
} from './options.ts';
export type { EngineStats, IndexInfo, LatencySummary, TableInfo, WriteResult, WriteStages } from './results.ts';
export { type Document, Table } from './table.ts';
