/**
 * The addon's interface, which is internal (the public API is `Database` and `Table`), and the
 * one place that asks for the addon (`native.ts` finds it: a source build or the prebuilt package).
 */
import type { Conflict, Durability } from '@wharf/wire';
import type { CsvBatch } from './csv.ts';
import { loadNative } from './native.ts';
import type { OpenOptions } from './options.ts';

export type { Conflict, Durability };
/**
 * A primary key: a string or a finite number, or one of RethinkDB's other key values — a
 * boolean, an array of keys, a time (`{ $reql_type$: 'TIME', epoch_time, timezone }`, keyed by
 * its instant) or binary (`{ $reql_type$: 'BINARY', data: <base64> }`). Keys order as RethinkDB
 * orders them: arrays < booleans < numbers < binary < times < strings.
 */
export type Key = string | number | DatumKey;
export type DatumKey = boolean | unknown[] | { $reql_type$: string; [field: string]: unknown };
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
 * Where things are in the memory each database shares with the addon: a `SharedArrayBuffer` of
 * `sharedBytes` that JS creates and hands to `open`. Defined once, in `napi/src/shared_memory.rs`
 * (which describes each field), and read from the addon here.
 */
export interface SharedMemoryLayout {
  sharedBytes: number;
  /** 32-bit word: how many answers were sealed, ever (mod 2^32), stored by the engine's threads. */
  sealedWord: number;
  /** Byte offset of `answerSlots` answers of `answerFields` numbers, written by `deliverAnswers`. */
  answerOffset: number;
  answerSlots: number;
  answerFields: number;
  /** Within an answer: the request id. */
  answerIdField: number;
  /** Within an answer: the first of the counts, in the order of `answerCounts`. */
  answerCountsField: number;
  answerCounts: string[];
  /** Within an answer: -1, or the index `d` of its details in `answerDetails()`. */
  answerDetailsField: number;
  /** Byte offset of `outboxSlots` request ids, written by JS for `insertEach`. */
  outboxOffset: number;
  outboxSlots: number;
}

/** The open options the engine itself takes (the rest are the JS handle's). */
export type NativeOpenOptions = Pick<
  OpenOptions,
  | 'segmentSize'
  | 'checkpointBytes'
  | 'flushIntervalMs'
  | 'groupCommitWindowMs'
  | 'memoryBudget'
  | 'mergeFanIn'
  | 'backgroundDelayPerMibMs'
>;

/** One open database. Reads resolve to JSON text; requests with an `id` answer through the callback. */
export interface NativeDatabase {
  createTable(id: number, name: string, primaryKey: string): void;
  dropTable(id: number, name: string): void;
  sync(id: number): void;
  /** Writes up to `answerSlots` answers waiting into the shared memory; returns how many. */
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
  insertEach(
    count: number,
    table: string,
    ndjson: string,
    durability: number,
    conflict: number,
    waitForIndexes: boolean,
  ): void;
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
  /** One page of a lazy read (`napi/src/pages.rs`): the query and the page as JSON text. */
  readPage(table: string, queryJson: string): Promise<string>;
  listTables(): string;
  stats(): string;
  close(): Promise<void>;
  /** Subscribes to a table's changes; `onReady` rings when a batch waits or the feed ends. */
  changes(table: string, capacity: number, onReady: () => void): NativeChangeFeed;
}

/** A subscription to a table's changes (`changes.ts`). */
export interface NativeChangeFeed {
  /** `{"skipped":n,"closed":b,"changes":[{"key":k,"old":doc|null,"new":doc|null},…]}`, up to `max` changes. */
  take(max: number): string;
  close(): void;
}

export interface Binding {
  NativeDatabase: {
    /**
     * `doorbell` is called when answers wait and JS has not taken them; `sharedMemory` is a
     * `Uint8Array` over a whole `SharedArrayBuffer` of the layout's `sharedBytes`.
     */
    open(
      dir: string,
      options: NativeOpenOptions,
      doorbell: () => void,
      sharedMemory: Uint8Array,
    ): Promise<NativeDatabase>;
  };
  sharedMemoryLayout(): SharedMemoryLayout;
  /** `napi/src/csv.rs`; `csv.ts` validates the arguments. */
  csvToNdjson(
    input: Buffer,
    columns: { name: string; kind: string }[] | null,
    options: {
      delimiter: number;
      quoting: boolean;
      newline: number;
      stripBom: boolean;
      atEnd: boolean;
      maxRecordBytes: number;
    },
  ): CsvBatch;
}

/** The counts of a `WriteResult`, each at its own field of an answer. */
export const ANSWER_COUNT_NAMES = ['inserted', 'replaced', 'unchanged', 'deleted', 'skipped', 'errors'] as const;
export type AnswerCount = (typeof ANSWER_COUNT_NAMES)[number];

/** One database's shared memory and the typed arrays JS reads and writes it through. */
export interface SharedMemory {
  layout: SharedMemoryLayout;
  /** Handed to `open`: the whole buffer. */
  bytes: Uint8Array;
  /** The 32-bit words (`sealedWord`), accessed with `Atomics` only. */
  words: Int32Array;
  /** The answer slots, read on the JS thread after `deliverAnswers`. */
  slots: Float64Array;
  /** The outbox, written on the JS thread before `insertEach`. */
  outbox: Uint32Array;
  /** Where each count of a write is within an answer. */
  countField: Record<AnswerCount, number>;
}

/** A new shared memory laid out as the addon says (`sharedMemoryLayout`). */
export function newSharedMemory(): SharedMemory {
  const layout = binding().sharedMemoryLayout();
  const countField = {} as Record<AnswerCount, number>;
  for (const name of ANSWER_COUNT_NAMES) {
    const i = layout.answerCounts.indexOf(name);
    // An addon from another version: say so rather than misread every answer.
    if (i < 0)
      throw new Error(
        `the native engine's answers have no \`${name}\` count: the addon does not match this JS (run \`npm run build:native\`)`,
      );
    countField[name] = layout.answerCountsField + i;
  }
  const buffer = new SharedArrayBuffer(layout.sharedBytes);
  return {
    layout,
    bytes: new Uint8Array(buffer),
    words: new Int32Array(buffer, 0, layout.answerOffset / 4),
    slots: new Float64Array(buffer, layout.answerOffset, layout.answerSlots * layout.answerFields),
    outbox: new Uint32Array(buffer, layout.outboxOffset, layout.outboxSlots),
    countField,
  };
}

let loaded: Binding | undefined;

/** Loads the addon on first use, so importing the package (types, `WharfError`) never fails. */
export function binding(): Binding {
  if (loaded) return loaded;
  loaded = loadNative() as Binding;
  return loaded;
}
