/**
 * Secondary indexes the engine cannot hold: any index function that is not a plain field path
 * (compound `[row('a'), row('b')]`, computed values, `r.minval`, …), and reads whose values the
 * engine's scalar indexes cannot answer (arrays, objects, times). Their definitions (the wire
 * form of the function, and `multi`) persist in the engine table FUNCTION_INDEX_TABLE, which
 * ReQL does not list; their reads evaluate the function over a scan of the table, in ReQL's
 * order of values. Field-path indexes on scalar values stay in the engine.
 */
import type { Database, IndexInfo } from '@wharf/engine';
import { compareDatums, type Datum, type DatumObject, datumsEqual, field, isPlainObject } from './datum.js';

/** The engine table holding function-index definitions (hidden from ReQL's table lists). */
export const FUNCTION_INDEX_TABLE = '_wharf_reql_indexes';

export interface FunctionIndexDef {
  /** `<engine table>/<index name>` */
  id: string;
  table: string;
  name: string;
  /** The index function as the driver sent it (a FUNC term). */
  fn: Datum;
  multi: boolean;
  geo: boolean;
}

export class FunctionIndexes {
  readonly #db: Database;
  #defs: Promise<Map<string, FunctionIndexDef>> | null = null;

  constructor(db: Database) {
    this.#db = db;
  }

  #load(): Promise<Map<string, FunctionIndexDef>> {
    this.#defs ??= (async () => {
      const out = new Map<string, FunctionIndexDef>();
      if (!this.#db.listTables().some((t) => t.name === FUNCTION_INDEX_TABLE)) return out;
      for (const doc of (await this.#db.table(FUNCTION_INDEX_TABLE).scan({ limit: 1_000_000 })) as FunctionIndexDef[])
        out.set(doc.id, doc);
      return out;
    })();
    return this.#defs;
  }

  async forTable(table: string): Promise<FunctionIndexDef[]> {
    return [...(await this.#load()).values()]
      .filter((d) => d.table === table)
      .sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  async get(table: string, name: string): Promise<FunctionIndexDef | undefined> {
    return (await this.#load()).get(`${table}/${name}`);
  }

  async add(def: Omit<FunctionIndexDef, 'id'>): Promise<void> {
    const defs = await this.#load();
    if (!this.#db.listTables().some((t) => t.name === FUNCTION_INDEX_TABLE))
      await this.#db.createTable(FUNCTION_INDEX_TABLE, { primaryKey: 'id' }).catch(() => {});
    const full: FunctionIndexDef = { id: `${def.table}/${def.name}`, ...def };
    await this.#db.table(FUNCTION_INDEX_TABLE).insert(full as unknown as DatumObject, { conflict: 'replace' });
    defs.set(full.id, full);
  }

  async drop(table: string, name: string): Promise<boolean> {
    const defs = await this.#load();
    const id = `${table}/${name}`;
    if (!defs.has(id)) return false;
    await this.#db.table(FUNCTION_INDEX_TABLE).delete(id);
    defs.delete(id);
    return true;
  }

  /** Forget a dropped table's indexes. */
  async dropTable(table: string): Promise<void> {
    for (const d of await this.forTable(table)) await this.drop(table, d.name);
  }
}

/** An index entry: one value a row is indexed under. */
export interface IndexEntry {
  value: Datum;
  row: Datum;
}

/** A multi index's values are the array's distinct elements; otherwise the value itself. */
export function entriesOf(value: Datum, row: Datum, multi: boolean, out: IndexEntry[]): void {
  if (multi && Array.isArray(value)) {
    const seen: Datum[] = [];
    for (const v of value) {
      if (seen.some((s) => datumsEqual(s, v))) continue;
      seen.push(v);
      out.push({ value: v, row });
    }
  } else out.push({ value, row });
}

/** The value at a dotted field path of an engine index, or undefined (the row is not indexed). */
export function fieldPathValue(row: Datum, info: IndexInfo): Datum | undefined {
  let v: Datum | undefined = row;
  for (const part of info.field.split('.')) {
    if (!isPlainObject(v as Datum)) return undefined;
    v = field(v as DatumObject, part);
    if (v === undefined) return undefined;
  }
  return v;
}

export function sortEntries(entries: IndexEntry[], reverse: boolean): IndexEntry[] {
  return entries.sort((a, b) => (reverse ? -1 : 1) * compareDatums(a.value, b.value));
}
