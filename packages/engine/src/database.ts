/**
 * An open Wharf database: a directory holding one journal shared by all its tables.
 *
 * Durability, worded the same everywhere: a `soft` write resolves once it is visible to reads;
 * a `hard` write and `sync()` resolve once it is durable (after the fdatasync of the group that
 * holds it).
 */
import { Handle } from './handle.ts';
import {
  type CreateTableOptions,
  checkDir,
  createTableOptions,
  type OpenOptions,
  openOptions,
  tableName,
} from './options.ts';
import { type EngineStats, statsFromJson, type TableInfo, tableInfosFromJson } from './results.ts';
import { type Document, Table } from './table.ts';

export class Database {
  readonly dir: string;
  readonly #handle: Handle;

  private constructor(dir: string, handle: Handle) {
    this.dir = dir;
    this.#handle = handle;
  }

  /** Opens the database in `dir` (created if absent), recovering it from its journal. */
  static async open(dir: string, options?: OpenOptions): Promise<Database> {
    const path = checkDir(dir);
    const { native, handle } = openOptions(options);
    return new Database(path, await Handle.open(path, native, handle));
  }

  /** Creates a table; `WHARF_ERR_TABLE_EXISTS` if it exists. The table is durable when this resolves. */
  async createTable(name: string, options?: CreateTableOptions): Promise<void> {
    const table = tableName(name);
    const { primaryKey } = createTableOptions(options);
    await this.#handle.request((native, id) => native.createTable(id, table, primaryKey));
  }

  /** Drops a table and its documents; `WHARF_ERR_TABLE_NOT_FOUND` if absent. */
  async dropTable(name: string): Promise<void> {
    const table = tableName(name);
    await this.#handle.request((native, id) => native.dropTable(id, table));
  }

  listTables(): TableInfo[] {
    return tableInfosFromJson(this.#handle.call((native) => native.listTables()));
  }

  /** A table handle. No I/O: a missing table surfaces as `WHARF_ERR_TABLE_NOT_FOUND` on use. */
  table<Doc extends object = Document>(name: string): Table<Doc> {
    return new Table<Doc>(this.#handle, tableName(name));
  }

  /** Resolves once everything acknowledged before the call is durable. */
  async sync(): Promise<void> {
    await this.#handle.request((native, id) => native.sync(id), true);
  }

  /**
   * A snapshot of the engine's counters. After `close()` resolved: the counters as the close
   * left them, its final checkpoint included (what a load wrote in all); while it runs, a
   * `WHARF_ERR_CLOSED` error.
   */
  stats(): EngineStats {
    return { ...statsFromJson(this.#handle.statsJson()), ...this.#handle.answerCounts() };
  }

  /** What the open did differently from what it was asked (see `EngineStats.openNotes`). */
  get openNotes(): string[] {
    return this.stats().openNotes ?? [];
  }

  /** True once `close()` was called. */
  get closed(): boolean {
    return this.#handle.closed;
  }

  /**
   * Answers every write already sent, syncs, and releases the directory. Idempotent; every later
   * call fails with `WHARF_ERR_CLOSED`.
   */
  close(): Promise<void> {
    return this.#handle.close();
  }
}
