/**
 * Databases over the engine's flat table namespace. RethinkDB database `test` maps to engine
 * tables with plain names (so tables made over HTTP or ws are `test.<name>` in ReQL); any other
 * database `d` maps to engine tables named `d.<table>`. A database exists while it has a table,
 * or once DB_CREATE made it in this server process; an empty database is not persisted across
 * restarts. `rethinkdb` is listed (as the reference server does); its tables are not engine
 * tables but computed (system-tables.ts). Wharf's own engine tables (names.ts, isHiddenTable)
 * are in no database.
 */
import { createHash } from 'node:crypto';
import type { Database, TableInfo } from '@wharf/engine';
import { isHiddenTable } from '../../names.js';
import { opFailed, queryLogic } from '../errors.js';
import { FunctionIndexes } from './function-indexes.js';
import { WriteHooks } from './write-hooks.js';

export const DEFAULT_DB = 'test';
export const SYSTEM_DB = 'rethinkdb';
export const DB_SEPARATOR = '.';

const NAME = /^[A-Za-z0-9_-]+$/;

export function checkName(kind: 'Database' | 'Table', name: unknown): string {
  if (typeof name !== 'string')
    throw queryLogic(
      `Expected type STRING but found ${name === null ? 'NULL' : typeof name === 'number' ? 'NUMBER' : typeof name === 'boolean' ? 'BOOL' : Array.isArray(name) ? 'ARRAY' : 'OBJECT'}.`,
    );
  if (!NAME.test(name)) throw queryLogic(`${kind} name \`${name}\` invalid (Use A-Z, a-z, 0-9, _ and - only).`);
  return name;
}

/** Stable UUID (v5-shaped) for a name, used as the id of db and table configs. */
export function nameUuid(name: string): string {
  const h = createHash('sha1').update(`wharf:${name}`).digest();
  h[6] = ((h[6] as number) & 0x0f) | 0x50;
  h[8] = ((h[8] as number) & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
}

export interface TableLocation {
  db: string;
  name: string;
  engineName: string;
}

export class Catalog {
  readonly #db: Database;
  /** Databases created with DB_CREATE in this process (they may have no tables yet). */
  readonly #createdDbs = new Set<string>([DEFAULT_DB]);

  /** Index functions the engine cannot hold (function-indexes.ts). */
  readonly functionIndexes: FunctionIndexes;
  /** Tables' write hooks (write-hooks.ts). */
  readonly writeHooks: WriteHooks;

  constructor(db: Database) {
    this.#db = db;
    this.functionIndexes = new FunctionIndexes(db);
    this.writeHooks = new WriteHooks(db);
    this.writeHooks.preload();
  }

  engineName(db: string, table: string): string {
    return db === DEFAULT_DB ? table : `${db}${DB_SEPARATOR}${table}`;
  }

  locate(engineName: string): TableLocation {
    const i = engineName.indexOf(DB_SEPARATOR);
    return i === -1
      ? { db: DEFAULT_DB, name: engineName, engineName }
      : { db: engineName.slice(0, i), name: engineName.slice(i + 1), engineName };
  }

  /**
   * Table infos by engine name, read from the engine each time (a few µs): tables created or
   * dropped over HTTP or ws are seen at once, with their primary keys.
   */
  tables(): Map<string, TableInfo> {
    return new Map(
      this.#db
        .listTables()
        .filter((t) => !isHiddenTable(t.name))
        .map((t) => [t.name, t]),
    );
  }

  tableInfo(engineName: string): TableInfo | undefined {
    if (isHiddenTable(engineName)) return undefined;
    return this.#db.listTables().find((t) => t.name === engineName);
  }

  /** Kept for callers that changed the table set; there is no cache to drop. */
  invalidate(): void {}

  dbExists(name: string): boolean {
    if (this.#createdDbs.has(name) || name === SYSTEM_DB) return true;
    for (const t of this.tables().keys()) if (this.locate(t).db === name) return true;
    return false;
  }

  listDbs(): string[] {
    const dbs = new Set(this.#createdDbs);
    dbs.add(SYSTEM_DB);
    for (const t of this.tables().keys()) dbs.add(this.locate(t).db);
    return [...dbs].sort();
  }

  listTables(db: string): string[] {
    const out: string[] = [];
    for (const t of this.tables().keys()) {
      const loc = this.locate(t);
      if (loc.db === db) out.push(loc.name);
    }
    return out.sort();
  }

  requireDb(name: string): void {
    if (!this.dbExists(name)) throw opFailed(`Database \`${name}\` does not exist.`);
  }

  createDb(name: string): void {
    checkName('Database', name);
    if (this.dbExists(name)) throw opFailed(`Database \`${name}\` already exists.`);
    this.#createdDbs.add(name);
  }

  async dropDb(name: string): Promise<number> {
    checkName('Database', name);
    if (name === SYSTEM_DB) throw queryLogic("Database `rethinkdb` is special; you can't delete it.");
    if (!this.dbExists(name)) throw opFailed(`Database \`${name}\` does not exist.`);
    const tables = this.listTables(name);
    for (const t of tables) {
      await this.#db.dropTable(this.engineName(name, t));
      await this.functionIndexes.dropTable(this.engineName(name, t));
      await this.writeHooks.dropTable(this.engineName(name, t));
    }
    this.#createdDbs.delete(name);
    this.invalidate();
    return tables.length;
  }

  afterCreateOrDrop(db: string): void {
    if (db !== SYSTEM_DB) this.#createdDbs.add(db);
    this.invalidate();
  }
}
