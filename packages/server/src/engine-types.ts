/**
 * The part of @wharf/engine's API (docs/CONTRACTS.md §1) the server uses, as structural types.
 * The real `Database` satisfies them; tests may pass an in-memory stand-in.
 */
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
}

/** Engine counters; field names as in packages/engine/core/src/stats.rs, camelCase. */
export type EngineStats = Record<string, number | boolean | number[]>;

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
  durability?: Durability;
}
