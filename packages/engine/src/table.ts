/**
 * A table of one open database. Obtained with `db.table(name)`; creating one does no I/O, and a
 * missing table surfaces as `WHARF_ERR_TABLE_NOT_FOUND` on use.
 */
import {
  CONFLICT_CODE,
  type Conflict,
  type DocFormat,
  DURABILITY_CODE,
  type Durability,
  FORMAT_CODE,
  type Key,
} from './binding.ts';
import { ChangeFeed } from './changes.ts';
import { invalidArgument } from './errors.ts';
import { type Handle, INSERT_BATCH_CHARS } from './handle.ts';
import {
  type BetweenOptions,
  betweenOptions,
  bulkData,
  type ChangesOptions,
  type CreateIndexOptions,
  changesOptions,
  checkKey,
  checkKeys,
  createIndexOptions,
  type DeleteOptions,
  deleteOptions,
  describe,
  type IndexQueryOptions,
  type IndexValue,
  type IndexWaitOptions,
  indexField,
  indexQueryOptions,
  indexValue,
  indexWaitOptions,
  type Page,
  type PageQuery,
  pageQueryJson,
  type ScanOptions,
  scanOptions,
  tableName,
  type WriteOptions,
  writeOptions,
} from './options.ts';
import { type IndexInfo, indexInfos, type WriteResult } from './results.ts';

/** A JSON document. `any` values, as MongoDB's driver does, so interfaces are assignable to it. */
// biome-ignore lint/suspicious/noExplicitAny: `unknown` values would make every interface type unassignable to Document
export type Document = Record<string, any>;

export class Table<Doc extends object = Document> {
  readonly name: string;
  readonly #handle: Handle;

  /** @internal Use `db.table(name)`. */
  constructor(handle: Handle, name: string) {
    this.#handle = handle;
    this.name = name;
  }

  /**
   * Inserts one document or an array of them. A bad document (not an object, a bad key, a
   * duplicate key with `conflict: 'error'`) is reported in `document_errors`; the rest are written.
   */
  insert(docs: Doc | readonly Doc[], options?: WriteOptions): Promise<WriteResult> {
    // Not `async`: that would add a promise and two turns of the microtask queue to every small
    // write, the path 64 concurrent writers saturate the JS thread on. Errors still reject.
    try {
      const { durability, conflict, waitForIndexes } = writeOptions(options, this.#handle.durability);
      // One JSON text per call: an array goes as a JSON array, a single document as one NDJSON
      // line (JSON.stringify never emits a raw newline), so the engine parses it without a copy.
      // Small single documents made in one tick go together (`Handle.insertOne`).
      if (Array.isArray(docs)) return this.#insert(stringifyArray(docs), 'json', durability, conflict, waitForIndexes);
      const doc = stringifyOne(docs);
      return doc.length > INSERT_BATCH_CHARS
        ? this.#insert(doc, 'ndjson', durability, conflict, waitForIndexes)
        : this.#handle.insertOne(this.name, doc, durability, conflict, waitForIndexes);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Bulk path: NDJSON (one document per line) parsed in Rust. `document_errors` index lines. */
  async insertNdjson(data: Buffer | Uint8Array | string, options?: WriteOptions): Promise<WriteResult> {
    const { durability, conflict, waitForIndexes } = writeOptions(options, this.#handle.durability);
    return this.#insert(bulkData(data), 'ndjson', durability, conflict, waitForIndexes);
  }

  /** Bulk path: one JSON array of documents parsed in Rust. */
  async insertJsonArray(data: Buffer | Uint8Array | string, options?: WriteOptions): Promise<WriteResult> {
    const { durability, conflict, waitForIndexes } = writeOptions(options, this.#handle.durability);
    return this.#insert(bulkData(data), 'json', durability, conflict, waitForIndexes);
  }

  /**
   * The document with this key, or null. Answered on the calling thread when the answer is in
   * memory (memtables, block cache, OS page cache), without a trip to the thread pool; a read
   * that would wait on the disk goes to the pool.
   */
  async get(key: Key): Promise<Doc | null> {
    const k = checkKey(key);
    const text = this.#handle.call((native) => native.getFromMemory(this.name, k));
    if (text !== null) return JSON.parse(text) as Doc | null;
    return this.#handle.read((native) => native.get(this.name, k));
  }

  /** The documents with these keys, in the same order, null where absent (in memory as `get`). */
  async getMany(keys: readonly Key[]): Promise<(Doc | null)[]> {
    const ks = checkKeys(keys);
    const text = this.#handle.call((native) => native.getManyFromMemory(this.name, ks));
    if (text !== null) return JSON.parse(text) as (Doc | null)[];
    return this.#handle.read((native) => native.getMany(this.name, ks));
  }

  /**
   * Deletes by key; absent keys count as `skipped`. An array is a list of keys: to delete the
   * document whose key is an array, pass it in a list (`delete([[1, 'a']])`).
   */
  async delete(keys: Key | readonly Key[], options?: DeleteOptions): Promise<WriteResult> {
    const ks = Array.isArray(keys) ? checkKeys(keys) : [checkKey(keys, 'keys')];
    const durability = deleteOptions(options, this.#handle.durability);
    return this.#handle.request(
      (native, id) => native.delete(id, this.name, ks, DURABILITY_CODE[durability]),
      durability === 'hard',
    );
  }

  /** Documents in key order (numbers before strings), optionally bounded, limited and reversed. */
  async scan(options?: ScanOptions): Promise<Doc[]> {
    const r = scanOptions(options);
    return this.#handle.read((native) =>
      native.scan(this.name, r.lower, r.lowerInclusive, r.upper, r.upperInclusive, r.limit, r.reverse),
    );
  }

  /**
   * Subscribes to this table's changes from now on (see `ChangeFeed`). `queueSize` (default
   * 100000, RethinkDB's `changefeed_queue_size`) bounds the changes waiting to be read.
   */
  changes(options?: ChangesOptions): ChangeFeed<Doc> {
    const { queueSize } = changesOptions(options);
    return new ChangeFeed<Doc>((onReady) =>
      this.#handle.call((native) => native.changes(this.name, queueSize, onReady)),
    );
  }

  async count(): Promise<number> {
    return this.#handle.read((native) => native.count(this.name));
  }

  /**
   * Creates a secondary index on `field` (a field name or dotted path). Resolves once the
   * creation is durable; the index is then built in the background (see `indexWait`) and kept
   * up to date in batches, off the write path. Documents without the field are not indexed;
   * with `multi`, each element of an array value is.
   */
  async createIndex(name: string, field: string, options?: CreateIndexOptions): Promise<void> {
    const index = tableName(name, 'name');
    const path = indexField(field);
    const { multi } = createIndexOptions(options);
    await this.#handle.request((native, id) => native.createIndex(id, this.name, index, path, multi));
  }

  async dropIndex(name: string): Promise<void> {
    const index = tableName(name, 'name');
    await this.#handle.request((native, id) => native.dropIndex(id, this.name, index));
  }

  async listIndexes(): Promise<IndexInfo[]> {
    return indexInfos(await this.#handle.read((native) => native.listIndexes(this.name)));
  }

  /** Resolves once the indexes (default: all) are built and reflect every write acknowledged before the call. */
  async indexWait(names?: readonly string[], options?: IndexWaitOptions): Promise<IndexInfo[]> {
    const list = (names ?? []).map((n, i) => tableName(n, `names[${i}]`));
    const timeoutMs = indexWaitOptions(options);
    return indexInfos(await this.#handle.wait((native) => native.indexWait(this.name, list, timeoutMs)));
  }

  /** Documents whose indexed field equals one of `values` (once per matching value). */
  async getAll(index: string, values: readonly IndexValue[], options?: IndexQueryOptions): Promise<Doc[]> {
    const name = tableName(index, 'index');
    if (!Array.isArray(values))
      throw invalidArgument(`values must be an array of index values; got ${describe(values)}`);
    const json = JSON.stringify(values.map((v, i) => indexValue(v, `values[${i}]`)));
    const { fresh } = indexQueryOptions(options);
    return this.#handle.read((native) => native.getAll(this.name, name, json, fresh));
  }

  /** Documents whose indexed field lies between the bounds (null: unbounded), in index order. */
  async between(index: string, lower: IndexValue, upper: IndexValue, options?: BetweenOptions): Promise<Doc[]> {
    const name = tableName(index, 'index');
    const lo = lower === null ? undefined : JSON.stringify(indexValue(lower, 'lower'));
    const hi = upper === null ? undefined : JSON.stringify(indexValue(upper, 'upper'));
    const o = betweenOptions(options);
    return this.#handle.read((native) =>
      native.between(this.name, name, lo, o.lowerClosed, hi, o.upperClosed, o.limit, o.reverse, o.fresh),
    );
  }

  /**
   * One page of a lazy read: documents of a primary-key range, or of index ranges one after the
   * other, in key or index order, optionally filtered in the engine. Call again with the page's
   * `after` for the next page, until it is null. A page stops at `limit` documents or after
   * reading `examine` (so a filter that keeps few still answers in bounded time).
   */
  async readPage(query: PageQuery): Promise<Page<Doc>> {
    const json = pageQueryJson(query);
    return this.#handle.read((native) => native.readPage(this.name, json));
  }

  #insert(
    data: string | Buffer,
    format: DocFormat,
    durability: Durability,
    conflict: Conflict,
    waitForIndexes: boolean,
  ): Promise<WriteResult> {
    return this.#handle.request((native, id) => {
      // A large batch is parsed on the libuv pool; its promise never rejects (the answer comes
      // through the completion callback), so it is not awaited.
      void native.insert(
        id,
        this.name,
        data,
        FORMAT_CODE[format],
        DURABILITY_CODE[durability],
        CONFLICT_CODE[conflict],
        waitForIndexes,
      );
    }, durability === 'hard');
  }
}

function stringifyOne(doc: unknown): string {
  const text = stringify(doc, 'docs');
  if (text === undefined) {
    throw invalidArgument(`docs must be a document (an object) or an array of documents; got ${describe(doc)}`);
  }
  return text;
}

function stringifyArray(docs: readonly unknown[]): string {
  try {
    return JSON.stringify(docs);
  } catch {
    // Find the document at fault, for the message.
    for (const [i, doc] of docs.entries()) stringify(doc, `docs[${i}]`);
    throw invalidArgument('docs cannot be serialized as JSON');
  }
}

function stringify(doc: unknown, argument: string): string | undefined {
  try {
    return JSON.stringify(doc);
  } catch (error) {
    throw invalidArgument(`${argument} cannot be serialized as JSON: ${(error as Error).message}`);
  }
}
