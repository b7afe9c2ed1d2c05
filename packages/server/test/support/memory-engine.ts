/**
 * An in-memory stand-in for @wharf/engine's Database (docs/CONTRACTS.md §1), so the term
 * evaluator and the HTTP layer can be tested without the native addon. Key order: numbers
 * before strings, as in the engine.
 */
import { randomUUID } from 'node:crypto';
import type { EngineDatabase, EngineTable, Key, ScanOptions, TableInfo, WriteOptions, WriteResult } from '../../src/engine-types.js';

class EngineError extends Error {
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

function cmp(a: Key, b: Key): number {
  if (typeof a !== typeof b) return typeof a === 'number' ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

function emptyResult(): WriteResult {
  return { inserted: 0, replaced: 0, unchanged: 0, deleted: 0, skipped: 0, errors: 0 };
}

function merge(base: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const out = { ...base };
  for (const [k, v] of Object.entries(patch)) {
    const cur = out[k];
    out[k] = cur && typeof cur === 'object' && !Array.isArray(cur) && v && typeof v === 'object' && !Array.isArray(v)
      ? merge(cur as Record<string, unknown>, v as Record<string, unknown>) : v;
  }
  return out;
}

class MemoryTable implements EngineTable {
  constructor(readonly db: MemoryDatabase, readonly name: string) {}

  #state(): { pk: string; rows: Map<Key, Record<string, unknown>> } {
    const t = this.db.tables.get(this.name);
    if (!t) throw new EngineError('WHARF_TABLE_NOT_FOUND', `table \`${this.name}\` does not exist`);
    return t;
  }

  async insert(docs: object | object[], opts: WriteOptions = {}): Promise<WriteResult> {
    const { pk, rows } = this.#state();
    const list = Array.isArray(docs) ? docs : [docs];
    const r = emptyResult();
    const errors: { index: number; message: string }[] = [];
    list.forEach((raw, index) => {
      if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
        errors.push({ index, message: 'document must be a JSON object' });
        return;
      }
      const doc = JSON.parse(JSON.stringify(raw)) as Record<string, unknown>;
      if (doc[pk] === undefined) {
        doc[pk] = randomUUID();
        (r.generated_keys ??= []).push(doc[pk] as string);
      }
      const key = doc[pk] as Key;
      const old = rows.get(key);
      if (old) {
        const conflict = opts.conflict ?? 'error';
        if (conflict === 'error') {
          errors.push({ index, message: `Duplicate primary key \`${pk}\`: ${JSON.stringify(key)}` });
          return;
        }
        const next = conflict === 'update' ? merge(old, doc) : doc;
        if (JSON.stringify(next) === JSON.stringify(old)) r.unchanged++;
        else r.replaced++;
        rows.set(key, next);
      } else {
        rows.set(key, doc);
        r.inserted++;
      }
    });
    if (errors.length > 0) {
      r.errors = errors.length;
      r.first_error = errors[0]?.message;
      r.document_errors = errors;
    }
    this.db.writes++;
    return r;
  }

  async insertNdjson(buf: Buffer | string, opts?: WriteOptions): Promise<WriteResult> {
    const docs = String(buf).split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as object);
    return this.insert(docs, opts);
  }

  async insertJsonArray(buf: Buffer | string, opts?: WriteOptions): Promise<WriteResult> {
    let docs: unknown;
    try {
      docs = JSON.parse(String(buf));
    } catch (err) {
      throw new EngineError('WHARF_INVALID_ARGUMENT', `invalid JSON array: ${(err as Error).message}`);
    }
    return this.insert(docs as object[], opts);
  }

  async get(key: Key): Promise<object | null> {
    return structuredClone(this.#state().rows.get(key) ?? null);
  }

  async getMany(keys: Key[]): Promise<(object | null)[]> {
    const { rows } = this.#state();
    return keys.map((k) => structuredClone(rows.get(k) ?? null));
  }

  async delete(key: Key | Key[]): Promise<WriteResult> {
    const { rows } = this.#state();
    const r = emptyResult();
    for (const k of Array.isArray(key) ? key : [key]) {
      if (rows.delete(k)) r.deleted++;
      else r.skipped++;
    }
    return r;
  }

  async scan(opts: ScanOptions = {}): Promise<object[]> {
    const { rows } = this.#state();
    let keys = [...rows.keys()].sort(cmp);
    if (opts.gt !== undefined) keys = keys.filter((k) => cmp(k, opts.gt as Key) > 0);
    if (opts.gte !== undefined) keys = keys.filter((k) => cmp(k, opts.gte as Key) >= 0);
    if (opts.lt !== undefined) keys = keys.filter((k) => cmp(k, opts.lt as Key) < 0);
    if (opts.lte !== undefined) keys = keys.filter((k) => cmp(k, opts.lte as Key) <= 0);
    if (opts.reverse) keys.reverse();
    if (opts.limit !== undefined) keys = keys.slice(0, opts.limit);
    return keys.map((k) => structuredClone(rows.get(k) as object));
  }

  async count(): Promise<number> {
    return this.#state().rows.size;
  }
}

export class MemoryDatabase implements EngineDatabase {
  readonly tables = new Map<string, { pk: string; rows: Map<Key, Record<string, unknown>> }>();
  writes = 0;
  syncs = 0;
  closed = false;

  async createTable(name: string, opts: { primaryKey?: string } = {}): Promise<void> {
    if (!/^[A-Za-z0-9_.-]{1,127}$/.test(name)) throw new EngineError('WHARF_INVALID_ARGUMENT', `bad table name ${name}`);
    if (this.tables.has(name)) throw new EngineError('WHARF_TABLE_EXISTS', `table \`${name}\` already exists`);
    this.tables.set(name, { pk: opts.primaryKey ?? 'id', rows: new Map() });
  }

  async dropTable(name: string): Promise<void> {
    if (!this.tables.delete(name)) throw new EngineError('WHARF_TABLE_NOT_FOUND', `table \`${name}\` does not exist`);
  }

  listTables(): TableInfo[] {
    return [...this.tables].map(([name, t]) => ({ name, primaryKey: t.pk, documents: t.rows.size, bytes: 0 }));
  }

  table(name: string): EngineTable {
    return new MemoryTable(this, name);
  }

  async sync(): Promise<void> {
    this.syncs++;
  }

  stats(): Record<string, number | boolean | number[]> {
    return { fdatasyncs: this.syncs, documentsWritten: this.writes, groupOpsHistogram: [1, 0], poisoned: false };
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
