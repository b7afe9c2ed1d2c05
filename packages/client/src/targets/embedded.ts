/**
 * `embedded:DIR`: the engine in this process. @wharf/engine (and its native addon) is imported
 * lazily, here and nowhere else, so users of remote targets never load it.
 * Batches go to the engine's bulk path, `table.insertNdjson`, parsed in Rust.
 */
import { errorCode, LoaderError } from '../errors.js';
import type { IndexSpec, TargetStats, WriteResult } from '../types.js';
import type { InsertOptions, Payload, Target } from './target.js';

/**
 * The part of @wharf/engine's API this target uses (docs/CONTRACTS.md §1), declared here rather
 * than imported: @wharf/engine is an optional peer, and a remote-only install must typecheck
 * without it. `Database` of @wharf/engine is assignable to it.
 */
export interface EngineTable {
  insertNdjson(buf: Buffer | string, opts: InsertOptions): Promise<WriteResult>;
  createIndex(name: string, field: string, options?: { multi?: boolean }): Promise<void>;
  indexWait(names?: string[], options?: { timeoutMs?: number }): Promise<unknown>;
}
export interface EngineDatabase {
  createTable(name: string, opts?: { primaryKey?: string }): Promise<unknown>;
  table(name: string): EngineTable;
  sync(): Promise<unknown>;
  stats(): object;
  close(): Promise<unknown>;
}
interface EngineModule {
  Database: { open(dir: string, options?: Record<string, unknown>): Promise<EngineDatabase> };
}

const ENGINE_PACKAGE = '@wharf/engine';

/** Loads @wharf/engine, or explains how to get it. */
export async function loadEngine(): Promise<EngineModule> {
  try {
    return (await import(ENGINE_PACKAGE)) as EngineModule;
  } catch (err) {
    const missing =
      errorCode(err) === 'ERR_MODULE_NOT_FOUND' && String((err as Error).message).includes(ENGINE_PACKAGE);
    throw new LoaderError(
      'WHARF_ERR_ENGINE_MISSING',
      missing
        ? 'the embedded: target needs the optional package @wharf/engine (npm install @wharf/engine), ' +
            'or use a remote target (wharf://host:port, rethinkdb://host/db)'
        : `could not load @wharf/engine: ${(err as Error).message}`,
      { cause: err },
    );
  }
}

export class EmbeddedTarget implements Target {
  readonly kind = 'embedded' as const;
  readonly payloadFormat = 'ndjson' as const;
  readonly url: string;
  #dir: string | null;
  #db: EngineDatabase | null;
  /** The database this target opened and closed: its counters stay readable. */
  #closed: EngineDatabase | null = null;
  #owned: boolean;
  readonly #options: Record<string, unknown> | undefined;

  /**
   * A directory to open (and close at the end) with the engine's `Database.open` options (e.g.
   * `memoryBudget`), or a Database the caller opened and keeps.
   */
  constructor(dirOrDb: string | EngineDatabase, options?: Record<string, unknown>) {
    this.#options = options;
    if (typeof dirOrDb === 'string') {
      this.#dir = dirOrDb;
      this.#db = null;
      this.#owned = true;
      this.url = `embedded:${dirOrDb}`;
    } else {
      this.#dir = null;
      this.#db = dirOrDb;
      this.#owned = false;
      this.url = 'embedded:(open database)';
    }
  }

  #handle(): EngineDatabase {
    if (!this.#db) throw new LoaderError('WHARF_ERR_LOADER_CLOSED', 'embedded target is not open');
    return this.#db;
  }

  async open(): Promise<void> {
    if (this.#db) return;
    const { Database } = await loadEngine();
    this.#db = await Database.open(this.#dir!, this.#options);
  }

  async ensureTable(table: string, primaryKey: string): Promise<void> {
    try {
      await this.#handle().createTable(table, { primaryKey });
    } catch (err) {
      if (errorCode(err) !== 'WHARF_ERR_TABLE_EXISTS') throw err;
    }
  }

  insert(table: string, payload: Payload, opts: InsertOptions): Promise<WriteResult> {
    return this.#handle().table(table).insertNdjson(payload.bytes, opts);
  }

  async sync(): Promise<void> {
    await this.#handle().sync();
  }

  async createIndex(table: string, spec: IndexSpec): Promise<{ existed: boolean }> {
    const t = this.#handle().table(table);
    try {
      await t.createIndex(spec.name, spec.field, { multi: spec.multi === true });
      return { existed: false };
    } catch (err) {
      if (errorCode(err) === 'WHARF_ERR_INDEX_EXISTS') return { existed: true };
      throw err;
    }
  }

  async waitIndex(table: string, name: string): Promise<void> {
    await this.#handle().table(table).indexWait([name]);
  }

  /** The engine's counters; after `close`, as the close left them (its final checkpoint included). */
  async stats(): Promise<TargetStats | null> {
    const db = this.#db ?? this.#closed;
    if (!db) return null;
    const out: TargetStats = {};
    for (const [k, v] of Object.entries(db.stats())) {
      if (typeof v === 'number' || typeof v === 'boolean' || Array.isArray(v)) out[k] = v as TargetStats[string];
    }
    return out;
  }

  /** The in-process engine has no transient failures: an I/O error poisons the handle. */
  isTransient(): boolean {
    return false;
  }

  async close(): Promise<void> {
    const db = this.#db;
    if (!db || !this.#owned) return;
    this.#db = null;
    this.#closed = db;
    await db.close();
  }
}
