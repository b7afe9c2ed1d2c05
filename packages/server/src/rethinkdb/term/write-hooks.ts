/**
 * Write hooks (RethinkDB's `set_write_hook`, btree.cc's apply_write_hook): a function
 * `(context, old, new)` a table applies to every document written through the driver port, whose
 * result is what is stored. Definitions (the function's wire form) persist in the engine table
 * WRITE_HOOK_TABLE, which ReQL does not list, one document per table; they are read once and kept
 * in memory, so the single-insert and bulk-frame fast paths can tell at once that a table has
 * none (those paths then stay fast) or has one (then the query takes the general path, which
 * applies it).
 */
import type { Database } from '@wharf/engine';
import { opFailed, ReqlRuntimeError } from '../errors.js';
import { compile } from './compiler.js';
import { type Datum, type DatumObject, field, newObject } from './datum.js';
import type { Evaluator } from './evaluator.js';
import type { Func, TableRef } from './values.js';

/** The engine table holding write-hook definitions (hidden from ReQL's table lists). */
export const WRITE_HOOK_TABLE = '_wharf_reql_write_hooks';

export interface WriteHookDef {
  /** The engine name of the table the hook belongs to. */
  id: string;
  /** The hook function as the driver sent it (a FUNC term). */
  fn: Datum;
}

export class WriteHooks {
  readonly #db: Database;
  #defs: Map<string, WriteHookDef> | null = null;
  #loading: Promise<Map<string, WriteHookDef>> | null = null;

  constructor(db: Database) {
    this.#db = db;
  }

  #load(): Promise<Map<string, WriteHookDef>> {
    this.#loading ??= (async () => {
      const out = new Map<string, WriteHookDef>();
      if (this.#db.listTables().some((t) => t.name === WRITE_HOOK_TABLE))
        for (const doc of (await this.#db.table(WRITE_HOOK_TABLE).scan({ limit: 1_000_000 })) as WriteHookDef[])
          out.set(doc.id, doc);
      this.#defs = out;
      return out;
    })();
    // A failed read is retried by the next caller.
    this.#loading.catch(() => {
      this.#loading = null;
    });
    return this.#loading;
  }

  /** Start reading the definitions (the fast paths know about hooks once this is done). */
  preload(): void {
    this.#load().catch(() => {});
  }

  /** Whether a table has a hook: known without waiting once loaded; undefined until then. */
  peek(table: string): boolean | undefined {
    return this.#defs === null ? undefined : this.#defs.has(table);
  }

  /** The hook as last read, without waiting (undefined also until the first read is done). */
  current(table: string): WriteHookDef | undefined {
    return this.#defs?.get(table);
  }

  async get(table: string): Promise<WriteHookDef | undefined> {
    return (await this.#load()).get(table);
  }

  /** Store or remove (fn null) a table's hook; says whether one existed before. */
  async set(table: string, fn: Datum | null): Promise<boolean> {
    const defs = await this.#load();
    const existed = defs.has(table);
    if (fn === null) {
      if (existed) {
        await this.#db.table(WRITE_HOOK_TABLE).delete(table);
        defs.delete(table);
      }
      return existed;
    }
    if (!this.#db.listTables().some((t) => t.name === WRITE_HOOK_TABLE))
      await this.#db.createTable(WRITE_HOOK_TABLE, { primaryKey: 'id' }).catch(() => {});
    const def: WriteHookDef = { id: table, fn };
    await this.#db.table(WRITE_HOOK_TABLE).insert(def as unknown as DatumObject, { conflict: 'replace' });
    defs.set(table, def);
    return existed;
  }

  /** Forget a dropped table's hook. */
  async dropTable(table: string): Promise<void> {
    if ((await this.#load()).has(table)) await this.set(table, null);
  }
}

/** A table's hook as a function of the evaluator, or null (none, or `ignore_write_hook`). */
export async function writeHookOf(ev: Evaluator, t: TableRef, ignore: boolean): Promise<Func | null> {
  if (ignore) return null;
  const def = await ev.deps.catalog.writeHooks.get(t.engineName);
  if (def === undefined) return null;
  return (await ev.eval(compile(def.fn), null)) as Func;
}

/**
 * The document to store for one row write, as RethinkDB's apply_write_hook: the hook gets
 * `{primary_key, timestamp}`, the old document (null for an insert) and the new one (null for a
 * deletion). Its errors, and a result that turns a write into a deletion or back, fail the row
 * (the caller counts it in `errors`).
 */
export async function applyWriteHook(
  ev: Evaluator,
  hook: Func,
  primaryKey: string,
  oldVal: DatumObject | null,
  newVal: Datum,
): Promise<Datum> {
  let key: Datum | undefined;
  if (newVal !== null && typeof newVal === 'object' && !Array.isArray(newVal)) key = field(newVal, primaryKey);
  else if (oldVal !== null) key = field(oldVal, primaryKey);
  const context = newObject();
  context.primary_key = key ?? null;
  context.timestamp = ev.now;
  let modified: Datum;
  try {
    modified = await ev.callDatum(hook, [context, oldVal, newVal]);
  } catch (err) {
    if (err instanceof ReqlRuntimeError)
      throw new ReqlRuntimeError(`Error in write hook: ${err.message}`, err.errorType);
    throw err;
  }
  if (newVal === null && modified !== null)
    throw opFailed('A write hook function must not turn a deletion into a replace/insert.');
  if (newVal !== null && modified === null)
    throw opFailed('A write hook function must not turn a replace/insert into a deletion.');
  return modified;
}
