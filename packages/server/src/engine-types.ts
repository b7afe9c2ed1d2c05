/**
 * The part of @wharf/engine's API (docs/CONTRACTS.md §1) the server uses, as structural types.
 * The real `Database` satisfies them; tests may pass an in-memory stand-in.
 */
import type { IndexInfo, IndexValue, WriteStages } from '@wharf/engine';
import type { WriteResult } from '@wharf/wire';

export type { WriteResult };
export type Key = string | number;
export type Durability = 'soft' | 'hard';
export type Conflict = 'error' | 'replace' | 'update';

export interface TableInfo {
  name: string;
  primaryKey: string;
  documents: number;
  bytes: number;
}

export interface WriteOptions {
  durability?: Durability;
  conflict?: Conflict;
  /** The write resolves only once every index of the table reflects it. */
  waitForIndexes?: boolean;
}

export type { IndexInfo, IndexValue } from '@wharf/engine';

export interface BetweenOptions {
  leftBound?: 'closed' | 'open';
  rightBound?: 'open' | 'closed';
  limit?: number;
  reverse?: boolean;
  fresh?: boolean;
}

export interface ScanOptions {
  gt?: Key;
  gte?: Key;
  lt?: Key;
  lte?: Key;
  limit?: number;
  reverse?: boolean;
}

export interface EngineTable {
  insert(docs: object | object[], opts?: WriteOptions): Promise<WriteResult>;
  insertNdjson(buf: Buffer | string, opts?: WriteOptions): Promise<WriteResult>;
  insertJsonArray(buf: Buffer | string, opts?: WriteOptions): Promise<WriteResult>;
  get(key: Key): Promise<object | null>;
  getMany(keys: Key[]): Promise<(object | null)[]>;
  delete(key: Key | Key[], opts?: { durability?: Durability }): Promise<WriteResult>;
  scan(opts?: ScanOptions): Promise<object[]>;
  count(): Promise<number>;
  // Secondary indexes (optional so that in-memory stand-ins need not implement them).
  createIndex?(name: string, field: string, options?: { multi?: boolean }): Promise<void>;
  dropIndex?(name: string): Promise<void>;
  listIndexes?(): Promise<IndexInfo[]>;
  indexWait?(names?: string[], options?: { timeoutMs?: number }): Promise<IndexInfo[]>;
  getAll?(index: string, values: IndexValue[], options?: { fresh?: boolean }): Promise<object[]>;
  between?(index: string, lower: IndexValue | null, upper: IndexValue | null, options?: BetweenOptions): Promise<object[]>;
}

/** The table's index API, or a clear error when the engine in use has none. */
export function indexApi(table: EngineTable): Required<Pick<EngineTable, 'createIndex' | 'dropIndex' | 'listIndexes' | 'indexWait' | 'getAll' | 'between'>> {
  const t = table as Required<EngineTable>;
  if (typeof t.createIndex !== 'function' || typeof t.getAll !== 'function' || typeof t.between !== 'function') {
    throw Object.assign(new Error('this engine does not support secondary indexes'), { code: 'WHARF_UNSUPPORTED' });
  }
  return t;
}

/** Engine counters; field names as in packages/engine/core/src/stats.rs, camelCase. */
export type EngineStats = Record<string, number | boolean | number[]> & { writeStages?: WriteStages };

export interface EngineDatabase {
  createTable(name: string, opts?: { primaryKey?: string }): Promise<unknown>;
  dropTable(name: string): Promise<unknown>;
  listTables(): TableInfo[];
  table(name: string): EngineTable;
  sync(): Promise<void>;
  stats(): EngineStats;
  close(): Promise<void>;
}

export interface EngineOpenOptions {
  segmentSize?: number;
  checkpointBytes?: number;
  flushIntervalMs?: number;
  groupCommitWindowMs?: number;
  spinWaitUs?: number;
  durability?: Durability;
}
