/**
 * The addon's interface, which is internal (the public API is `Database` and `Table`), and the
 * one place that asks for the addon (`native.ts` finds it: a source build or the prebuilt package).
 */
import type { Conflict, Durability } from '@wharf/wire';
import { loadNative } from './native.ts';
import type { OpenOptions } from './options.ts';

export type { Conflict, Durability };
export type Key = string | number;
export type DocFormat = 'ndjson' | 'json';

/**
 * Enums cross into the addon as small integers (a string argument costs two napi calls and an
 * allocation on every write). Mirrors `doc_format`, `durability_of` and `conflict_of` in
 * `napi/src/table.rs`.
 */
export const FORMAT_CODE = { ndjson: 0, json: 1 } as const satisfies Record<DocFormat, number>;
export const DURABILITY_CODE = { hard: 0, soft: 1 } as const satisfies Record<Durability, number>;
export const CONFLICT_CODE = { error: 0, replace: 1, update: 2 } as const satisfies Record<Conflict, number>;

/**
 * The memory one database shares with the addon (`SharedMemory` in `napi/src/completion.rs`),
 * read and written here through typed arrays over it:
 * - 32-bit word `SEALED_WORD`: how many answers were sealed, ever (mod 2^32), written by the
 *   engine's threads;
 * - word `POLLING_WORD`: 1 while JS polls for answers (no doorbell then), written by JS;
 * - from byte `ANSWER_OFFSET`, `ANSWER_SLOTS` answers of `ANSWER_FIELDS` numbers, written by
 *   `deliverAnswers`: the request id; the six counts of a write (inserted, replaced, unchanged,
 *   deleted, skipped, errors; 0 for requests without a result); -1, or the index `d` of its
 *   details in `answerDetails()`: `[2d]` null for a success or the `WHARF_…` code of a failure,
 *   `[2d + 1]` the failure's message, or the whole result as JSON when it has more than counts;
 * - from byte `OUTBOX_OFFSET`, `OUTBOX_SLOTS` request ids, written by JS for `insertEach`.
 */
export const SEALED_WORD = 0;
export const POLLING_WORD = 1;
export const ANSWER_OFFSET = 16;
export const ANSWER_SLOTS = 512;
export const ANSWER_FIELDS = 8;
export const OUTBOX_OFFSET = ANSWER_OFFSET + ANSWER_SLOTS * ANSWER_FIELDS * 8;
export const OUTBOX_SLOTS = 4096;
export const SHARED_BYTES = OUTBOX_OFFSET + OUTBOX_SLOTS * 4;

/** The open options the engine itself takes (the rest are the JS handle's). */
export type NativeOpenOptions = Pick<
  OpenOptions,
  'segmentSize' | 'checkpointBytes' | 'flushIntervalMs' | 'groupCommitWindowMs' | 'memoryBudget' | 'mergeFanIn' | 'backgroundDelayPerMibMs'
>;

/** One open database. Reads resolve to JSON text; requests with an `id` answer through the callback. */
export interface NativeDatabase {
  createTable(id: number, name: string, primaryKey: string): void;
  dropTable(id: number, name: string): void;
  sync(id: number): void;
  /** The memory shared with the addon (see `SEALED_WORD`). Once per database. */
  sharedMemory(): ArrayBuffer;
  /** Writes up to `ANSWER_SLOTS` answers waiting into the shared memory; returns how many. */
  deliverAnswers(): number;
  /** Gives the CPU to another thread waiting for it, if one is (`sched_yield`). */
  yieldCpu(): void;
  /** The details of the answers `deliverAnswers` wrote last. */
  answerDetails(): (string | null)[];
  /** Resolves once the batch is parsed and submitted (only for large batches); never rejects. */
  insert(
    id: number,
    table: string,
    data: string | Buffer,
    format: number,
    durability: number,
    conflict: number,
    waitForIndexes: boolean,
  ): Promise<void> | null;
  /**
   * Single-document inserts sent together: line i of `ndjson` is the document of the i-th of the
   * `count` request ids written into the shared memory's outbox.
   */
  insertEach(count: number, table: string, ndjson: string, durability: number, conflict: number, waitForIndexes: boolean): void;
  delete(id: number, table: string, keys: Key[], durability: number): void;
  get(table: string, key: Key): Promise<string>;
  getMany(table: string, keys: Key[]): Promise<string>;
  /** Synchronous: JSON text when no wait is needed, null when `get` must read on the pool. */
  getFromMemory(table: string, key: Key): string | null;
  getManyFromMemory(table: string, keys: Key[]): string | null;
  scan(
    table: string,
    lower: Key | undefined,
    lowerInclusive: boolean,
    upper: Key | undefined,
    upperInclusive: boolean,
    limit: number | undefined,
    reverse: boolean,
  ): Promise<string>;
  count(table: string): Promise<string>;
  createIndex(id: number, table: string, name: string, field: string, multi: boolean): void;
  dropIndex(id: number, table: string, name: string): void;
  listIndexes(table: string): Promise<string>;
  indexWait(table: string, names: string[], timeoutMs: number): Promise<string>;
  getAll(table: string, index: string, valuesJson: string, fresh: boolean): Promise<string>;
  between(
    table: string,
    index: string,
    lowerJson: string | undefined,
    lowerClosed: boolean,
    upperJson: string | undefined,
    upperClosed: boolean,
    limit: number | undefined,
    reverse: boolean,
    fresh: boolean,
  ): Promise<string>;
  listTables(): string;
  stats(): string;
  close(): Promise<void>;
}

export interface Binding {
  NativeDatabase: {
    /** `doorbell` is called when answers wait and JS is not polling for them. */
    open(dir: string, options: NativeOpenOptions, doorbell: () => void): Promise<NativeDatabase>;
  };
}

let loaded: Binding | undefined;

/** Loads the addon on first use, so importing the package (types, `WharfError`) never fails. */
export function binding(): Binding {
  if (loaded) return loaded;
  loaded = loadNative() as Binding;
  return loaded;
}
