/** `@wharf/engine`: the embedded Wharf database. See README.md for the API and its contract. */
export { Database } from './database.ts';
export { MAX_DOCUMENT_DEPTH } from './limits.ts';
export { Table, type Document } from './table.ts';
export { WharfError, ERROR_CODES, type ErrorCode } from './errors.ts';
export type {
  OpenOptions,
  CreateTableOptions,
  WriteOptions,
  DeleteOptions,
  IndexValue,
  CreateIndexOptions,
  IndexQueryOptions,
  BetweenOptions,
  IndexWaitOptions,
  ScanOptions,
  Durability,
  Conflict,
  Key,
} from './options.ts';
export type { WriteResult, TableInfo, EngineStats, WriteStages, LatencySummary, IndexInfo } from './results.ts';
