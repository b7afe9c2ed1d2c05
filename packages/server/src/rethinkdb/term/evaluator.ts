/**
 * AST → values, against the engine. One Evaluator per query (it holds the query's `now`, its
 * default database and durability). Reads stream from the engine in pages; writes are in
 * writes.ts. Never touches a socket: the connection gets a QueryResult (an atom, or a row
 * source for a cursor).
 */
import { createHash, randomUUID } from 'node:crypto';
import type { BetweenOptions, Database, Durability, IndexInfo, IndexValue, Key, ScanOptions } from '@wharf/engine';
import { errorCatalogue } from '@wharf/wire';
import { engineCodeOf, engineErrorNames } from '../../errors.js';
import { continueAfter } from '../../scan-pages.js';
import {
  internalError,
  nonExistence,
  opFailed,
  queryLogic,
  ReqlError,
  ReqlRuntimeError,
  resourceLimit,
} from '../errors.js';
import { ErrorType } from '../protocol.js';
import { type Catalog, checkName, DEFAULT_DB, nameUuid, SYSTEM_DB } from './catalog.js';
import { compile, type Node, type TermNode } from './compiler.js';
import {
  compareDatums,
  type Datum,
  type DatumObject,
  datumsEqual,
  datumTypeName,
  field,
  isBinary,
  isObject,
  isPlainObject,
  isTime,
  MAX_DOCUMENT_DEPTH,
  makeTime,
  nestingDepth,
  newObject,
  parseIso8601,
  type TimeDatum,
  timeFromParts,
  tooDeepMessage,
  truthy,
  validateTime,
} from './datum.js';
import { checkIndexName, indexFieldPath, indexStatus, indexValue, selectIndexes } from './indexes.js';
import { T, termName } from './names.js';
import { buildSelector, deepMerge, getField, hasFields, matchesObject, pluck, without } from './objects.js';
import { runSingleInsert, singleInsertOf } from './single-insert.js';
import {
  Bound,
  DbRef,
  Env,
  Func,
  isDatumValue,
  Seq,
  SingleSelection,
  TableRef,
  typeName,
  type Value,
} from './values.js';
import { deleteRows, insert, replaceRows, updateRows } from './writes.js';

export interface EvaluatorDeps {
  db: Database;
  catalog: Catalog;
  serverName: string;
  serverId: string;
  arrayLimit: number;
  /** Wraps every engine write so shutdown can wait for it. */
  trackWrite<R>(p: Promise<R>): Promise<R>;
  /** The engine's default durability (what a write without a durability option gets). */
  defaultDurability: Durability;
}

/** What a START produced: one datum, or rows for a cursor. */
export type QueryResult = { kind: 'atom'; value: unknown } | { kind: 'stream'; source: AsyncIterator<unknown> };

const SCAN_PAGE = 1000;
const UUID_NAMESPACE = Buffer.from('91461c99f89d49d2af96d8e2e14e9b58', 'hex');

/** Attach the failing term's backtrace to errors that don't have one yet. */
const LOCATED = Symbol('located');
function locate(err: unknown, node: { bt: (number | string)[] }): unknown {
  if (err instanceof ReqlError && !(err as unknown as Record<symbol, boolean>)[LOCATED]) {
    err.backtrace = node.bt;
    (err as unknown as Record<symbol, boolean>)[LOCATED] = true;
  }
  return err;
}

export function expectType(v: Value, want: string): never {
  throw queryLogic(`Expected type ${want} but found ${typeName(v)}.`);
}

export class Evaluator {
  readonly deps: EvaluatorDeps;
  readonly now: TimeDatum;
  readonly defaultDb: string;
  readonly durability: Durability | undefined;

  constructor(deps: EvaluatorDeps, opts: { defaultDb: string; durability?: Durability }) {
    this.deps = deps;
    this.now = makeTime(Date.now() / 1000);
    this.defaultDb = opts.defaultDb;
    this.durability = opts.durability;
  }

  // ---- evaluation ----

  async eval(node: Node, env: Env | null): Promise<Value> {
    switch (node.kind) {
      case 'datum':
        return node.value;
      case 'var': {
        const v = env?.lookup(node.id);
        if (v === undefined) throw new ReqlRuntimeError('Variable name not found.', ErrorType.QUERY_LOGIC, node.bt);
        return v;
      }
      case 'func':
        return new Func(node.params, node.body, env);
      case 'array': {
        const out: Datum[] = [];
        for (const item of node.items) out.push(await this.datum(await this.eval(item, env)));
        return out;
      }
      case 'obj': {
        const out = newObject();
        for (const [k, n] of Object.entries(node.fields)) out[k] = await this.datum(await this.eval(n, env));
        if (field(out, '$reql_type$') === 'TIME') return validateTime(out);
        return out;
      }
      case 'term':
        try {
          return await this.term(node, env);
        } catch (err) {
          throw locate(err, node);
        }
    }
  }

  /** Evaluate to a datum (selections are read, streams materialized up to the array limit). */
  async evalDatum(node: Node, env: Env | null): Promise<Datum> {
    return this.datum(await this.eval(node, env));
  }

  async datum(v: Value): Promise<Datum> {
    if (isDatumValue(v)) return v;
    if (v instanceof SingleSelection) return v.row;
    if (v instanceof Seq) return v.array ?? (await this.materialize(v));
    if (v instanceof TableRef) return this.materialize(this.tableSeq(v));
    throw queryLogic(`Expected type DATUM but found ${typeName(v)}.`);
  }

  async string(node: Node, env: Env | null): Promise<string> {
    const v = await this.evalDatum(node, env);
    if (typeof v !== 'string') throw queryLogic(`Expected type STRING but found ${datumTypeName(v)}.`);
    return v;
  }

  async number(node: Node, env: Env | null): Promise<number> {
    const v = await this.evalDatum(node, env);
    if (typeof v !== 'number') throw queryLogic(`Expected type NUMBER but found ${datumTypeName(v)}.`);
    return v;
  }

  async bool(node: Node, env: Env | null): Promise<boolean> {
    const v = await this.evalDatum(node, env);
    if (typeof v !== 'boolean') throw queryLogic(`Expected type BOOL but found ${datumTypeName(v)}.`);
    return v;
  }

  async optDatum(node: TermNode, name: string, env: Env | null): Promise<Datum | undefined> {
    const n = node.optargs[name];
    return n === undefined ? undefined : this.evalDatum(n, env);
  }

  /** Call a function value; a non-function acts as a constant function. */
  async call(f: Value, args: Datum[]): Promise<Value> {
    if (!(f instanceof Func)) return f;
    if (f.params.length !== args.length && !(f.params.length === 0)) {
      throw queryLogic(
        `Expected function with ${args.length} argument${args.length === 1 ? '' : 's'} but found function with ${f.params.length} argument${f.params.length === 1 ? '' : 's'}.`,
      );
    }
    return this.eval(f.body, new Env(f.env, f.params, args));
  }

  async callDatum(f: Value, args: Datum[]): Promise<Datum> {
    return this.datum(await this.call(f, args));
  }

  // ---- sequences ----

  seq(v: Value): Seq {
    if (v instanceof Seq) return v;
    if (v instanceof TableRef) return this.tableSeq(v);
    if (Array.isArray(v)) return Seq.fromArray(v);
    throw queryLogic(`Cannot convert ${typeName(v)} to SEQUENCE`);
  }

  tableSeq(ref: TableRef, bounds: ScanOptions = {}): Seq {
    return Seq.fromStream(() => this.scan(ref, bounds), ref);
  }

  async *scan(ref: TableRef, bounds: ScanOptions): AsyncGenerator<Datum> {
    const opts: ScanOptions = { ...bounds };
    for (;;) {
      let rows: object[];
      try {
        rows = await ref.engine.scan({ ...opts, limit: SCAN_PAGE });
      } catch (err) {
        throw this.engineError(err, ref);
      }
      for (const r of rows) yield r as Datum;
      if (rows.length < SCAN_PAGE) return;
      continueAfter(opts, field(rows[rows.length - 1] as DatumObject, ref.primaryKey) as Key);
    }
  }

  async materialize(seq: Seq): Promise<Datum[]> {
    if (seq.array) return seq.array;
    const out: Datum[] = [];
    const it = seq.open();
    try {
      for (;;) {
        const r = await it.next();
        if (r.done) break;
        if (out.length >= this.deps.arrayLimit)
          throw resourceLimit(`Array over size limit \`${this.deps.arrayLimit}\`.`);
        out.push(r.value);
      }
    } finally {
      await it.return?.();
    }
    return out;
  }

  /** Map a sequence lazily (arrays stay arrays). `keepTable`: rows stay whole documents. */
  async mapSeq(seq: Seq, fn: (row: Datum) => Promise<Datum | undefined>, keepTable = false): Promise<Seq> {
    const table = keepTable ? seq.table : null;
    if (seq.array) {
      const out: Datum[] = [];
      for (const row of seq.array) {
        const v = await fn(row);
        if (v !== undefined) out.push(v);
      }
      return Seq.fromArray(out, table);
    }
    const open = seq.open;
    return Seq.fromStream(async function* () {
      const it = open();
      try {
        for (;;) {
          const r = await it.next();
          if (r.done) return;
          const v = await fn(r.value);
          if (v !== undefined) yield v;
        }
      } finally {
        await it.return?.();
      }
    }, table);
  }

  // ---- tables and engine errors ----

  tableRef(db: string, name: string): TableRef {
    checkName('Table', name);
    const engineName = this.deps.catalog.engineName(db, name);
    const info = db === SYSTEM_DB ? undefined : this.deps.catalog.tableInfo(engineName);
    if (!info) {
      this.deps.catalog.requireDb(db);
      throw opFailed(`Table \`${db}.${name}\` does not exist.`);
    }
    return new TableRef(db, name, engineName, info.primaryKey, this.deps.db.table(engineName));
  }

  /**
   * Map an engine failure to a ReQL error naming the table (RethinkDB's wording), of the ReQL
   * error type the catalogue gives the code. The index name is the engine error's own field.
   */
  engineError(err: unknown, ref?: { fullName: string }, index?: string): ReqlError {
    if (err instanceof ReqlError) return err;
    const code = engineCodeOf(err);
    const message = err instanceof Error ? err.message : String(err);
    if (code === undefined) return internalError(message);
    const indexName = engineErrorNames(err, { index }).index ?? '?';
    const table = ref?.fullName ?? '?';
    const errorType = ErrorType[errorCatalogue[code].reql];
    switch (code) {
      case 'WHARF_ERR_INDEX_NOT_FOUND':
        return new ReqlRuntimeError(`Index \`${indexName}\` was not found on table \`${table}\`.`, errorType);
      case 'WHARF_ERR_INDEX_EXISTS':
        return new ReqlRuntimeError(`Index \`${indexName}\` already exists on table \`${table}\`.`, errorType);
      case 'WHARF_ERR_INDEX_NOT_READY':
        return new ReqlRuntimeError(
          `Index \`${indexName}\` on table \`${table}\` was accessed before its construction was finished.`,
          errorType,
        );
      case 'WHARF_ERR_TABLE_NOT_FOUND':
        this.deps.catalog.invalidate();
        return new ReqlRuntimeError(`Table \`${table}\` does not exist.`, errorType);
      case 'WHARF_ERR_TABLE_EXISTS':
        return new ReqlRuntimeError(`Table \`${table}\` already exists.`, errorType);
      case 'WHARF_ERR_INVALID_ARGUMENT':
        return new ReqlRuntimeError(message, errorType);
      default:
        return new ReqlRuntimeError(`${code}: ${message}`, errorType);
    }
  }

  primaryKeyOf(v: Datum): Key {
    if (typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v))) return v;
    throw queryLogic(`Wharf primary keys must be strings or numbers (got type ${datumTypeName(v)}).`);
  }

  // ---- terms ----

  async term(node: TermNode, env: Env | null): Promise<Value> {
    const a = node.args;
    switch (node.type) {
      case T.ERROR: {
        const msg = a.length === 0 ? 'Error.' : await this.string(a[0] as Node, env);
        throw new ReqlRuntimeError(msg, ErrorType.USER);
      }
      case T.DB: {
        const name = checkName('Database', await this.evalDatum(a[0] as Node, env));
        return new DbRef(name);
      }
      case T.TABLE: {
        let db = this.defaultDb;
        let nameNode = a[0] as Node;
        if (a.length === 2) {
          const d = await this.eval(a[0] as Node, env);
          if (!(d instanceof DbRef)) expectType(d, 'DATABASE');
          db = d.name;
          nameNode = a[1] as Node;
        }
        return this.tableRef(db, checkName('Table', await this.evalDatum(nameNode, env)));
      }
      case T.GET: {
        const t = await this.eval(a[0] as Node, env);
        if (!(t instanceof TableRef)) expectType(t, 'TABLE');
        const key = this.primaryKeyOf(await this.evalDatum(a[1] as Node, env));
        let row: object | null;
        try {
          row = await t.engine.get(key);
        } catch (err) {
          throw this.engineError(err, t);
        }
        return new SingleSelection(t, key, row as DatumObject | null);
      }
      case T.GET_ALL: {
        const t = await this.eval(a[0] as Node, env);
        if (!(t instanceof TableRef)) expectType(t, 'TABLE');
        const index = await this.secondaryIndex(node, t, env);
        const evaluator = this;
        if (index !== null) {
          const api = t.engine;
          const values: IndexValue[] = [];
          for (const n of a.slice(1)) values.push(indexValue(await this.evalDatum(n, env)));
          return Seq.fromStream(async function* () {
            if (values.length === 0) return;
            let rows: object[];
            try {
              rows = await api.getAll(index, values);
            } catch (err) {
              throw evaluator.engineError(err, t, index);
            }
            for (const r of rows) yield r as Datum;
          }, t);
        }
        const keys: Key[] = [];
        for (const n of a.slice(1)) keys.push(this.primaryKeyOf(await this.evalDatum(n, env)));
        return Seq.fromStream(async function* () {
          if (keys.length === 0) return;
          let rows: (object | null)[];
          try {
            rows = await t.engine.getMany(keys);
          } catch (err) {
            throw evaluator.engineError(err, t);
          }
          for (const r of rows) if (r !== null) yield r as Datum;
        }, t);
      }
      case T.EQ:
      case T.NE:
      case T.LT:
      case T.LE:
      case T.GT:
      case T.GE: {
        const vals: Datum[] = [];
        for (const n of a) vals.push(await this.evalDatum(n, env));
        return compareChain(node.type, vals);
      }
      case T.NOT:
        return !truthy(await this.evalDatum(a[0] as Node, env));
      case T.ADD:
      case T.SUB:
      case T.MUL:
      case T.DIV:
      case T.MOD: {
        const vals: Datum[] = [];
        for (const n of a) vals.push(await this.evalDatum(n, env));
        return arithmetic(node.type, vals);
      }
      case T.GET_FIELD:
      case T.BRACKET: {
        const target = await this.eval(a[0] as Node, env);
        const key = await this.evalDatum(a[1] as Node, env);
        return this.bracket(target, key, node.type === T.GET_FIELD);
      }
      case T.HAS_FIELDS: {
        const target = await this.eval(a[0] as Node, env);
        const paths: Datum[] = [];
        for (const n of a.slice(1)) paths.push(await this.evalDatum(n, env));
        const sel = buildSelector(paths);
        if (target instanceof TableRef || target instanceof Seq) {
          return this.mapSeq(this.seq(target), async (row) => (hasFields(row, sel) ? row : undefined), true);
        }
        return hasFields(await this.datum(target), sel);
      }
      case T.PLUCK:
      case T.WITHOUT: {
        const target = await this.eval(a[0] as Node, env);
        const paths: Datum[] = [];
        for (const n of a.slice(1)) paths.push(await this.evalDatum(n, env));
        const sel = buildSelector(paths);
        const op = node.type === T.PLUCK ? pluck : without;
        if (target instanceof TableRef || target instanceof Seq)
          return this.mapSeq(this.seq(target), async (row) => op(row, sel));
        const d = await this.datum(target);
        if (Array.isArray(d)) return d.map((row) => op(row, sel));
        return op(d, sel);
      }
      case T.MERGE: {
        const target = await this.eval(a[0] as Node, env);
        const patches: Value[] = [];
        for (const n of a.slice(1)) patches.push(await this.eval(n, env));
        const merge = async (row: Datum): Promise<Datum> => {
          let out = row;
          for (const p of patches) out = deepMerge(out, await this.callDatum(p, [out]));
          return out;
        };
        if (target instanceof TableRef || target instanceof Seq) return this.mapSeq(this.seq(target), merge);
        const d = await this.datum(target);
        if (Array.isArray(d)) return Promise.all(d.map(merge));
        return merge(d);
      }
      case T.KEYS: {
        const d = await this.evalDatum(a[0] as Node, env);
        if (!isObject(d)) throw queryLogic(`Expected type OBJECT but found ${datumTypeName(d)}.`);
        return Object.keys(d).sort();
      }
      case T.OBJECT: {
        if (a.length % 2 !== 0) throw queryLogic(`OBJECT expects an even number of arguments (but found ${a.length}).`);
        const out = newObject();
        for (let i = 0; i < a.length; i += 2) {
          const key = await this.string(a[i] as Node, env);
          const value = await this.evalDatum(a[i + 1] as Node, env);
          const existing = field(out, key);
          if (existing !== undefined) {
            throw queryLogic(
              `Duplicate key ${JSON.stringify(key)} in object.  (got ${JSON.stringify(existing)} and ${JSON.stringify(value)} as values)`,
            );
          }
          out[key] = value;
        }
        return out;
      }
      case T.MAP: {
        const s = this.seq(await this.eval(a[0] as Node, env));
        const f = await this.eval(a[1] as Node, env);
        return this.mapSeq(s, (row) => this.callDatum(f, [row]));
      }
      case T.FILTER:
        return this.filter(node, env);
      case T.ORDER_BY:
        return this.orderBy(node, env);
      case T.COUNT: {
        const target = await this.eval(a[0] as Node, env);
        if (a.length === 1) {
          if (target instanceof TableRef) {
            try {
              return await target.engine.count();
            } catch (err) {
              throw this.engineError(err, target);
            }
          }
          if (typeof target === 'string') return [...target].length;
          if (isPlainObject(target as Datum)) return Object.keys(target as DatumObject).length;
        }
        const s = this.seq(target);
        const pred = a.length === 2 ? await this.eval(a[1] as Node, env) : undefined;
        let n = 0;
        const it = s.open();
        try {
          for (;;) {
            const r = await it.next();
            if (r.done) break;
            if (pred === undefined) n++;
            else if (
              pred instanceof Func
                ? truthy(await this.callDatum(pred, [r.value]))
                : datumsEqual(await this.datum(pred), r.value)
            )
              n++;
          }
        } finally {
          await it.return?.();
        }
        return n;
      }
      case T.IS_EMPTY: {
        const s = this.seq(await this.eval(a[0] as Node, env));
        if (s.array) return s.array.length === 0;
        const it = s.open();
        try {
          return (await it.next()).done === true;
        } finally {
          await it.return?.();
        }
      }
      case T.NTH: {
        const target = await this.eval(a[0] as Node, env);
        const i = await this.number(a[1] as Node, env);
        return this.nth(target, i);
      }
      case T.SKIP:
      case T.LIMIT: {
        const s = this.seq(await this.eval(a[0] as Node, env));
        const n = await this.number(a[1] as Node, env);
        if (!Number.isInteger(n)) throw queryLogic(`Number not an integer: ${n}`);
        if (n < 0)
          throw queryLogic(`${node.type === T.LIMIT ? 'LIMIT' : 'SKIP'} takes a non-negative argument (got ${n})`);
        return node.type === T.LIMIT ? limitSeq(s, n) : skipSeq(s, n);
      }
      case T.TYPE_OF:
        return typeName(await this.eval(a[0] as Node, env));
      case T.INSERT:
        return insert(this, node, env);
      case T.UPDATE:
        return updateRows(this, node, env);
      case T.REPLACE:
        return replaceRows(this, node, env);
      case T.DELETE:
        return deleteRows(this, node, env);
      case T.DB_CREATE: {
        const name = checkName('Database', await this.evalDatum(a[0] as Node, env));
        this.deps.catalog.createDb(name);
        return { config_changes: [{ new_val: { id: nameUuid(`db:${name}`), name }, old_val: null }], dbs_created: 1 };
      }
      case T.DB_DROP: {
        const name = checkName('Database', await this.evalDatum(a[0] as Node, env));
        let tables: number;
        try {
          tables = await this.deps.catalog.dropDb(name);
        } catch (err) {
          throw this.engineError(err);
        }
        return {
          config_changes: [{ new_val: null, old_val: { id: nameUuid(`db:${name}`), name } }],
          dbs_dropped: 1,
          tables_dropped: tables,
        };
      }
      case T.DB_LIST:
        return this.deps.catalog.listDbs();
      case T.TABLE_CREATE:
      case T.TABLE_DROP:
      case T.TABLE_LIST:
        return this.tableAdmin(node, env);
      case T.INDEX_LIST:
      case T.INDEX_CREATE:
      case T.INDEX_DROP:
      case T.INDEX_STATUS:
      case T.INDEX_WAIT:
        return this.indexAdmin(node, env);
      case T.CONFIG: {
        const t = await this.eval(a[0] as Node, env);
        if (t instanceof DbRef) {
          this.deps.catalog.requireDb(t.name);
          return { id: nameUuid(`db:${t.name}`), name: t.name };
        }
        if (!(t instanceof TableRef)) expectType(t, 'TABLE');
        const config = this.tableConfig(t);
        try {
          config.indexes = (await t.engine.listIndexes()).map((i) => i.name).sort();
        } catch (err) {
          throw this.engineError(err, t);
        }
        return config;
      }
      case T.STATUS: {
        const t = await this.eval(a[0] as Node, env);
        if (!(t instanceof TableRef)) expectType(t, 'TABLE');
        const server = this.deps.serverName;
        return {
          db: t.db,
          id: nameUuid(t.engineName),
          name: t.name,
          raft_leader: server,
          shards: [{ primary_replicas: [server], replicas: [{ server, state: 'ready' }] }],
          status: {
            all_replicas_ready: true,
            ready_for_outdated_reads: true,
            ready_for_reads: true,
            ready_for_writes: true,
          },
        };
      }
      case T.WAIT: {
        if (a.length === 0) return { ready: this.deps.catalog.tables().size };
        const t = await this.eval(a[0] as Node, env);
        if (t instanceof DbRef) {
          this.deps.catalog.requireDb(t.name);
          return { ready: this.deps.catalog.listTables(t.name).length };
        }
        if (!(t instanceof TableRef)) expectType(t, 'TABLE');
        return { ready: 1 };
      }
      case T.SYNC: {
        const t = await this.eval(a[0] as Node, env);
        if (!(t instanceof TableRef)) expectType(t, 'TABLE');
        try {
          await this.deps.trackWrite(this.deps.db.sync());
        } catch (err) {
          throw this.engineError(err, t);
        }
        return { synced: 1 };
      }
      case T.FUNCALL: {
        const f = await this.eval(a[0] as Node, env);
        const args: Datum[] = [];
        for (const n of a.slice(1)) args.push(await this.evalDatum(n, env));
        if (!(f instanceof Func)) expectType(f, 'FUNCTION');
        return this.call(f, args);
      }
      case T.BRANCH: {
        if (a.length % 2 === 0) throw queryLogic('Cannot call `branch` term with an even number of arguments.');
        for (let i = 0; i + 1 < a.length; i += 2) {
          if (truthy(await this.evalDatum(a[i] as Node, env))) return this.eval(a[i + 1] as Node, env);
        }
        return this.eval(a[a.length - 1] as Node, env);
      }
      case T.OR: {
        let last: Datum = false;
        for (const n of a) {
          last = await this.evalDatum(n, env);
          if (truthy(last)) return last;
        }
        return last;
      }
      case T.AND: {
        let last: Datum = true;
        for (const n of a) {
          last = await this.evalDatum(n, env);
          if (!truthy(last)) return last;
        }
        return last;
      }
      case T.DEFAULT: {
        try {
          const v = await this.eval(a[0] as Node, env);
          if (v !== null) return v;
        } catch (err) {
          if (!(err instanceof ReqlRuntimeError) || err.errorType !== ErrorType.NON_EXISTENCE) throw err;
          const d = await this.eval(a[1] as Node, env);
          return d instanceof Func ? this.call(d, [err.message]) : d;
        }
        const d = await this.eval(a[1] as Node, env);
        return d instanceof Func ? this.call(d, [null]) : d;
      }
      case T.JSON: {
        const text = await this.string(a[0] as Node, env);
        let parsed: Datum;
        try {
          parsed = JSON.parse(text) as Datum; // iterative in V8: no depth overflows it
        } catch (err) {
          throw queryLogic(
            `Failed to parse "${text.length > 200 ? `${text.slice(0, 200)}...` : text}" as JSON: ${(err as Error).message}`,
          );
        }
        if (nestingDepth(parsed, MAX_DOCUMENT_DEPTH) > MAX_DOCUMENT_DEPTH)
          throw resourceLimit(tooDeepMessage('The JSON text given to r.json'));
        return parsed;
      }
      case T.COERCE_TO: {
        // Only to 'string' from a string or BINARY (its bytes as UTF-8): what a loader sends as
        // r.json(r.binary(BYTES).coerceTo('string')). Other conversions are not supported.
        const v = await this.evalDatum(a[0] as Node, env);
        const to = await this.evalDatum(a[1] as Node, env);
        if (typeof to !== 'string') throw queryLogic(`Expected type STRING but found ${datumTypeName(to)}.`);
        if (to.toLowerCase() === 'string') {
          if (typeof v === 'string') return v;
          if (isBinary(v)) return Buffer.from(v.data, 'base64').toString('utf8');
        }
        throw queryLogic(`Wharf does not support COERCE_TO from ${datumTypeName(v)} to ${to.toUpperCase()}.`);
      }
      case T.ISO8601: {
        const text = await this.string(a[0] as Node, env);
        const tz = await this.optDatum(node, 'default_timezone', env);
        return parseIso8601(text, typeof tz === 'string' ? tz : undefined);
      }
      case T.EPOCH_TIME:
        return makeTime(await this.number(a[0] as Node, env));
      case T.TO_EPOCH_TIME: {
        const t = await this.evalDatum(a[0] as Node, env);
        if (!isTime(t)) throw queryLogic(`Expected type PTYPE<TIME> but found ${datumTypeName(t)}.`);
        return t.epoch_time;
      }
      case T.NOW:
        return this.now;
      case T.TIME: {
        if (a.length !== 4 && a.length !== 7) throw queryLogic(`Expected 4 or 7 arguments but found ${a.length}.`);
        const parts: number[] = [];
        for (const n of a.slice(0, -1)) parts.push(await this.number(n, env));
        return timeFromParts(parts, await this.string(a[a.length - 1] as Node, env));
      }
      case T.UUID: {
        if (a.length === 0) return randomUUID();
        const name = await this.string(a[0] as Node, env);
        const h = createHash('sha1').update(UUID_NAMESPACE).update(name).digest();
        h[6] = ((h[6] as number) & 0x0f) | 0x50;
        h[8] = ((h[8] as number) & 0x3f) | 0x80;
        const x = h.subarray(0, 16).toString('hex');
        return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
      }
      case T.MINVAL:
        return Bound.MIN;
      case T.MAXVAL:
        return Bound.MAX;
      case T.BETWEEN:
        return this.between(node, env);
      case T.ASC:
      case T.DESC:
        throw queryLogic(`${termName(node.type)} may only be used as an argument to ORDER_BY or UNION.`);
    }
    throw queryLogic(`Wharf does not support the term ${termName(node.type)} (${node.type}).`);
  }

  /** The `index` optarg when it names a secondary index; null for the primary key or none. */
  async secondaryIndex(node: TermNode, t: TableRef, env: Env | null): Promise<string | null> {
    const index = await this.optDatum(node, 'index', env);
    if (index === undefined || index === t.primaryKey) return null;
    if (typeof index !== 'string') throw queryLogic(`Expected type STRING but found ${datumTypeName(index)}.`);
    return index;
  }

  /** INDEX_CREATE, INDEX_DROP, INDEX_LIST, INDEX_STATUS, INDEX_WAIT. */
  async indexAdmin(node: TermNode, env: Env | null): Promise<Value> {
    const a = node.args;
    const t = await this.eval(a[0] as Node, env);
    if (!(t instanceof TableRef)) expectType(t, 'TABLE');
    const api = t.engine;
    switch (node.type) {
      case T.INDEX_CREATE: {
        const name = checkIndexName(await this.evalDatum(a[1] as Node, env));
        const field = indexFieldPath(a[2], name);
        const multi = (await this.optDatum(node, 'multi', env)) ?? false;
        if (typeof multi !== 'boolean') throw queryLogic(`Expected type BOOL but found ${datumTypeName(multi)}.`);
        const geo = (await this.optDatum(node, 'geo', env)) ?? false;
        if (geo !== false) throw queryLogic('Wharf does not support geospatial indexes (geo: true).');
        try {
          await this.deps.trackWrite(api.createIndex(name, field, { multi }));
        } catch (err) {
          throw this.engineError(err, t, name);
        }
        return { created: 1 };
      }
      case T.INDEX_DROP: {
        const name = checkIndexName(await this.evalDatum(a[1] as Node, env));
        try {
          await this.deps.trackWrite(api.dropIndex(name));
        } catch (err) {
          throw this.engineError(err, t, name);
        }
        return { dropped: 1 };
      }
    }
    const names: string[] = [];
    for (const n of a.slice(1)) {
      const v = await this.evalDatum(n, env);
      for (const x of Array.isArray(v) ? v : [v]) {
        if (typeof x !== 'string') throw queryLogic(`Expected type STRING but found ${datumTypeName(x)}.`);
        names.push(x);
      }
    }
    let all: IndexInfo[];
    try {
      all = await api.listIndexes();
    } catch (err) {
      throw this.engineError(err, t);
    }
    if (node.type === T.INDEX_LIST) return all.map((i) => i.name).sort();
    let selected = selectIndexes(all, names, t);
    if (node.type === T.INDEX_WAIT && selected.length > 0) {
      try {
        const waited = await api.indexWait(selected.map((i) => i.name));
        selected = selected.map((i) => waited.find((w) => w.name === i.name) ?? { ...i, ready: true });
      } catch (err) {
        throw this.engineError(err, t);
      }
    }
    const documents = this.deps.catalog.tableInfo(t.engineName)?.documents;
    return selected.map((i) => indexStatus(i, documents));
  }

  tableConfig(t: TableRef): DatumObject {
    const server = this.deps.serverName;
    return {
      db: t.db,
      durability: 'hard',
      id: nameUuid(t.engineName),
      indexes: [],
      name: t.name,
      primary_key: t.primaryKey,
      shards: [{ nonvoting_replicas: [], primary_replica: server, replicas: [server] }],
      write_acks: 'majority',
      write_hook: null,
    };
  }

  async tableAdmin(node: TermNode, env: Env | null): Promise<Value> {
    const a = node.args;
    let db = this.defaultDb;
    let rest = a;
    if (a.length > 0) {
      const first = await this.eval(a[0] as Node, env);
      if (first instanceof DbRef) {
        db = first.name;
        rest = a.slice(1);
      } else if (node.type === T.TABLE_LIST) {
        expectType(first, 'DATABASE');
      }
    }
    const catalog = this.deps.catalog;
    if (node.type === T.TABLE_LIST) {
      catalog.requireDb(db);
      return catalog.listTables(db);
    }
    if (rest.length !== 1) throw queryLogic(`Expected 1 argument but found ${rest.length}.`);
    const name = checkName('Table', await this.evalDatum(rest[0] as Node, env));
    catalog.requireDb(db);
    if (db === SYSTEM_DB)
      throw opFailed(`Database \`${SYSTEM_DB}\` is special; you can't create or drop tables in it.`);
    const engineName = catalog.engineName(db, name);
    const full = { fullName: `${db}.${name}` };
    if (node.type === T.TABLE_CREATE) {
      const pk = (await this.optDatum(node, 'primary_key', env)) ?? 'id';
      if (typeof pk !== 'string' || pk.length === 0) throw queryLogic('primary_key must be a non-empty string.');
      try {
        await this.deps.db.createTable(engineName, { primaryKey: pk });
      } catch (err) {
        throw this.engineError(err, full);
      } finally {
        catalog.afterCreateOrDrop(db);
      }
      const ref = new TableRef(db, name, engineName, pk, this.deps.db.table(engineName));
      return { config_changes: [{ new_val: this.tableConfig(ref), old_val: null }], tables_created: 1 };
    }
    const info = catalog.tableInfo(engineName);
    if (!info) throw opFailed(`Table \`${db}.${name}\` does not exist.`);
    const ref = new TableRef(db, name, engineName, info.primaryKey, this.deps.db.table(engineName));
    try {
      await this.deps.db.dropTable(engineName);
    } catch (err) {
      throw this.engineError(err, full);
    } finally {
      catalog.invalidate();
    }
    return { config_changes: [{ new_val: null, old_val: this.tableConfig(ref) }], tables_dropped: 1 };
  }

  async bracket(target: Value, key: Datum, strictField: boolean): Promise<Value> {
    if (typeof key === 'number' && !strictField) return this.nth(target, key);
    if (typeof key !== 'string') throw queryLogic(`Expected type STRING but found ${datumTypeName(key)}.`);
    if (target instanceof TableRef || target instanceof Seq) {
      return this.mapSeq(this.seq(target), async (row) => {
        if (!isPlainObject(row))
          throw queryLogic(`Cannot perform get_field on a non-object non-sequence \`${JSON.stringify(row)}\`.`);
        return field(row, key);
      });
    }
    const d = await this.datum(target);
    if (Array.isArray(d)) {
      const out: Datum[] = [];
      for (const row of d) {
        if (!isPlainObject(row))
          throw queryLogic(`Cannot perform get_field on a non-object non-sequence \`${JSON.stringify(row)}\`.`);
        const v = field(row, key);
        if (v !== undefined) out.push(v);
      }
      return out;
    }
    return getField(d, key);
  }

  async nth(target: Value, i: number): Promise<Value> {
    if (!Number.isInteger(i)) throw queryLogic(`Number not an integer: ${i}`);
    const s = this.seq(target instanceof SingleSelection ? await this.datum(target) : target);
    const items = s.array ?? (i < 0 ? await this.materialize(s) : null);
    if (items) {
      const v = items[i < 0 ? items.length + i : i];
      if (v === undefined) throw nonExistence(`Index out of bounds: ${i}`);
      return v;
    }
    const it = s.open();
    try {
      for (let n = 0; ; n++) {
        const r = await it.next();
        if (r.done) throw nonExistence(`Index out of bounds: ${i}`);
        if (n === i) return r.value;
      }
    } finally {
      await it.return?.();
    }
  }

  async filter(node: TermNode, env: Env | null): Promise<Value> {
    const a = node.args;
    const s = this.seq(await this.eval(a[0] as Node, env));
    const pred = await this.eval(a[1] as Node, env);
    const defaultNode = node.optargs.default;
    const test = async (row: Datum): Promise<boolean> => {
      try {
        if (pred instanceof Func) return truthy(await this.callDatum(pred, [row]));
        const p = await this.datum(pred);
        if (isPlainObject(p)) return matchesObject(p, row);
        return truthy(p);
      } catch (err) {
        if (!(err instanceof ReqlRuntimeError) || err.errorType !== ErrorType.NON_EXISTENCE) throw err;
        if (defaultNode === undefined) return false;
        const d = await this.eval(defaultNode, env);
        return truthy(d instanceof Func ? await this.callDatum(d, [err.message]) : await this.datum(d));
      }
    };
    return this.mapSeq(s, async (row) => ((await test(row)) ? row : undefined), true);
  }

  async orderBy(node: TermNode, env: Env | null): Promise<Value> {
    const a = node.args;
    const input = await this.eval(a[0] as Node, env);
    type Key = { by: string | Func; desc: boolean };
    const keys: Key[] = [];
    const readKey = async (n: Node): Promise<Key> => {
      if (n.kind === 'term' && (n.type === T.ASC || n.type === T.DESC)) {
        const inner = await this.eval(n.args[0] as Node, env);
        if (typeof inner !== 'string' && !(inner instanceof Func)) expectType(inner, 'STRING');
        return { by: inner, desc: n.type === T.DESC };
      }
      const v = await this.eval(n, env);
      if (typeof v !== 'string' && !(v instanceof Func)) expectType(v, 'STRING');
      return { by: v, desc: false };
    };
    for (const n of a.slice(1)) keys.push(await readKey(n));
    const indexNode = node.optargs.index;
    let seq: Seq;
    if (indexNode !== undefined) {
      if (!(input instanceof TableRef))
        throw queryLogic(`Indexed order_by can only be performed on a TABLE or TABLE_SLICE.`);
      const index = await readKey(indexNode);
      if (typeof index.by !== 'string')
        throw opFailed(`Index \`function\` was not found on table \`${input.fullName}\`.`);
      if (index.by === input.primaryKey) seq = this.tableSeq(input, { reverse: index.desc });
      else seq = this.indexSeq(input, index.by, null, null, { reverse: index.desc });
      if (keys.length === 0) return seq;
    } else {
      if (keys.length === 0) throw queryLogic('Expected 2 or more arguments but found 1.');
      seq = this.seq(input);
    }
    const rows = await this.materialize(seq);
    const sortKeys: Datum[][] = [];
    for (const row of rows) {
      const ks: Datum[] = [];
      for (const k of keys) {
        if (typeof k.by === 'string') ks.push(isPlainObject(row) ? (field(row, k.by) ?? null) : null);
        else {
          try {
            ks.push(await this.callDatum(k.by, [row]));
          } catch (err) {
            if (err instanceof ReqlRuntimeError && err.errorType === ErrorType.NON_EXISTENCE) ks.push(null);
            else throw err;
          }
        }
      }
      sortKeys.push(ks);
    }
    const order = rows.map((_, i) => i);
    order.sort((x, y) => {
      const kx = sortKeys[x] as Datum[];
      const ky = sortKeys[y] as Datum[];
      for (let i = 0; i < keys.length; i++) {
        const c = compareDatums(kx[i] as Datum, ky[i] as Datum);
        if (c !== 0) return (keys[i] as Key).desc ? -c : c;
      }
      return x - y;
    });
    return Seq.fromArray(
      order.map((i) => rows[i] as Datum),
      seq.table,
    );
  }

  /** Rows of a secondary index between two values (null: unbounded), in index order. */
  indexSeq(t: TableRef, index: string, lower: IndexValue | null, upper: IndexValue | null, opts: BetweenOptions): Seq {
    const api = t.engine;
    const evaluator = this;
    return Seq.fromStream(async function* () {
      let rows: object[];
      try {
        rows = await api.between(index, lower, upper, opts);
      } catch (err) {
        throw evaluator.engineError(err, t, index);
      }
      for (const r of rows) yield r as Datum;
    }, t);
  }

  async between(node: TermNode, env: Env | null): Promise<Value> {
    const a = node.args;
    const t = await this.eval(a[0] as Node, env);
    if (!(t instanceof TableRef)) expectType(t, 'TABLE_SLICE');
    const index = await this.secondaryIndex(node, t, env);
    const lower = await this.eval(a[1] as Node, env);
    const upper = await this.eval(a[2] as Node, env);
    const leftBound = (await this.optDatum(node, 'left_bound', env)) ?? 'closed';
    const rightBound = (await this.optDatum(node, 'right_bound', env)) ?? 'open';
    for (const [name, v] of [
      ['left_bound', leftBound],
      ['right_bound', rightBound],
    ] as const) {
      if (v !== 'open' && v !== 'closed')
        throw queryLogic(`Expected \`open\` or \`closed\` for optarg \`${name}\` (got \`${JSON.stringify(v)}\`).`);
    }
    if (index !== null) {
      if (lower === Bound.MAX || upper === Bound.MIN) return Seq.fromArray([], t);
      const lo = lower === Bound.MIN ? null : indexValue(await this.datum(lower));
      const hi = upper === Bound.MAX ? null : indexValue(await this.datum(upper));
      return this.indexSeq(t, index, lo, hi, {
        leftBound: leftBound as 'open' | 'closed',
        rightBound: rightBound as 'open' | 'closed',
      });
    }
    const bounds: ScanOptions = {};
    if (lower !== Bound.MIN) {
      if (lower === Bound.MAX) return Seq.fromArray([], t);
      const k = this.primaryKeyOf(await this.datum(lower));
      if (leftBound === 'closed') bounds.gte = k;
      else bounds.gt = k;
    }
    if (upper !== Bound.MAX) {
      if (upper === Bound.MIN) return Seq.fromArray([], t);
      const k = this.primaryKeyOf(await this.datum(upper));
      if (rightBound === 'closed') bounds.lte = k;
      else bounds.lt = k;
    }
    return this.tableSeq(t, bounds);
  }
}

function compareChain(type: number, vals: Datum[]): boolean {
  if (type === T.NE) {
    for (let i = 0; i + 1 < vals.length; i++) if (!datumsEqual(vals[i] as Datum, vals[i + 1] as Datum)) return true;
    return false;
  }
  for (let i = 0; i + 1 < vals.length; i++) {
    const x = vals[i] as Datum;
    const y = vals[i + 1] as Datum;
    let ok: boolean;
    switch (type) {
      case T.EQ:
        ok = datumsEqual(x, y);
        break;
      case T.LT:
        ok = compareDatums(x, y) < 0;
        break;
      case T.LE:
        ok = compareDatums(x, y) <= 0;
        break;
      case T.GT:
        ok = compareDatums(x, y) > 0;
        break;
      default:
        ok = compareDatums(x, y) >= 0;
    }
    if (!ok) return false;
  }
  return true;
}

function arithmetic(type: number, vals: Datum[]): Datum {
  const first = vals[0] as Datum;
  if (type === T.ADD && typeof first === 'string') {
    return vals
      .map((v) => {
        if (typeof v !== 'string') throw queryLogic(`Expected type STRING but found ${datumTypeName(v)}.`);
        return v;
      })
      .join('');
  }
  if (type === T.ADD && Array.isArray(first)) {
    return vals.flatMap((v) => {
      if (!Array.isArray(v)) throw queryLogic(`Expected type ARRAY but found ${datumTypeName(v)}.`);
      return v;
    });
  }
  if (type === T.ADD && isTime(first)) {
    const secs = vals.slice(1).reduce<number>((s, v) => s + (typeof v === 'number' ? v : 0), 0);
    return makeTime(first.epoch_time + secs, first.timezone);
  }
  const nums = vals.map((v) => {
    if (typeof v !== 'number') throw queryLogic(`Expected type NUMBER but found ${datumTypeName(v)}.`);
    return v;
  });
  let acc = nums[0] as number;
  for (const n of nums.slice(1)) {
    switch (type) {
      case T.ADD:
        acc += n;
        break;
      case T.SUB:
        acc -= n;
        break;
      case T.MUL:
        acc *= n;
        break;
      case T.DIV:
        if (n === 0) throw queryLogic('Cannot divide by zero.');
        acc /= n;
        break;
      default:
        if (n === 0) throw queryLogic('Cannot take a number modulo 0.');
        if (!Number.isInteger(acc) || !Number.isInteger(n)) throw queryLogic('Number not an integer.');
        acc %= n;
    }
  }
  return acc;
}

function limitSeq(s: Seq, n: number): Seq {
  if (s.array) return Seq.fromArray(s.array.slice(0, n), s.table);
  const open = s.open;
  return Seq.fromStream(async function* () {
    if (n === 0) return;
    const it = open();
    let taken = 0;
    try {
      for (;;) {
        const r = await it.next();
        if (r.done) return;
        yield r.value;
        if (++taken >= n) return;
      }
    } finally {
      await it.return?.();
    }
  }, s.table);
}

function skipSeq(s: Seq, n: number): Seq {
  if (s.array) return Seq.fromArray(s.array.slice(n), s.table);
  const open = s.open;
  return Seq.fromStream(async function* () {
    const it = open();
    let skipped = 0;
    try {
      for (;;) {
        const r = await it.next();
        if (r.done) return;
        if (skipped < n) skipped++;
        else yield r.value;
      }
    } finally {
      await it.return?.();
    }
  }, s.table);
}

/** Read a literal boolean global optarg (a JSON bool, or `[1, bool]`). */
function literalBool(v: unknown): boolean {
  if (v === true) return true;
  if (Array.isArray(v) && v[0] === T.DATUM && v[1] === true) return true;
  return false;
}

export interface StartOptions {
  noreply: boolean;
  profile: boolean;
}

export function readStartOptions(globalOptargs: Record<string, unknown>): StartOptions {
  return {
    noreply: literalBool(ownOptarg(globalOptargs, 'noreply')),
    profile: literalBool(ownOptarg(globalOptargs, 'profile')),
  };
}

/** A global optarg the client sent (never an inherited property of the parsed object). */
function ownOptarg(globalOptargs: Record<string, unknown>, name: string): unknown {
  return Object.hasOwn(globalOptargs, name) ? globalOptargs[name] : undefined;
}

/**
 * The entry point used by the connection: compile a START's term and global optargs, evaluate,
 * and say how to answer (atom or stream).
 */
export async function runQuery(
  deps: EvaluatorDeps,
  term: unknown,
  globalOptargs: Record<string, unknown>,
): Promise<QueryResult> {
  const root = compile(term);
  const single = singleInsertOf(root, globalOptargs);
  if (single !== undefined) {
    const value = await runSingleInsert(deps.db, single, deps.defaultDurability, deps.trackWrite);
    if (value !== undefined) return { kind: 'atom', value };
  }
  let defaultDb = DEFAULT_DB;
  let durability: Durability | undefined;
  const bootstrap = new Evaluator(deps, { defaultDb });
  const dbOptarg = ownOptarg(globalOptargs, 'db');
  const durabilityOptarg = ownOptarg(globalOptargs, 'durability');
  if (dbOptarg !== undefined) {
    const dbValue = await bootstrap.eval(compile(dbOptarg), null);
    if (dbValue instanceof DbRef) defaultDb = dbValue.name;
    else if (typeof dbValue === 'string') defaultDb = checkName('Database', dbValue);
    else expectType(dbValue, 'DATABASE');
  }
  if (durabilityOptarg !== undefined) {
    const d = await bootstrap.evalDatum(compile(durabilityOptarg), null);
    if (d !== 'hard' && d !== 'soft')
      throw queryLogic(`Durability option \`${JSON.stringify(d)}\` unrecognized (options are "hard" and "soft").`);
    durability = d;
  }
  const evaluator = new Evaluator(deps, { defaultDb, ...(durability ? { durability } : {}) });
  const value = await evaluator.eval(root, null);
  if (value instanceof TableRef) return { kind: 'stream', source: evaluator.tableSeq(value).open() };
  if (value instanceof Seq) {
    if (value.array) return { kind: 'atom', value: value.array };
    return { kind: 'stream', source: value.open() };
  }
  if (value instanceof SingleSelection) return { kind: 'atom', value: value.row };
  if (isDatumValue(value)) return { kind: 'atom', value };
  throw queryLogic(`Query result must be of type DATUM, GROUPED_DATA, or STREAM (got ${typeName(value)}).`);
}

export { validateTime };
