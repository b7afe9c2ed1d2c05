import type {
  BetweenOptions,
  Database,
  Durability,
  FilterSpec,
  IndexInfo,
  IndexValue,
  Key,
  PageRange,
  PageResume,
  ScanOptions,
} from '@wharf/engine';
import { errorCatalogue } from '@wharf/wire';
import { engineCodeOf, engineErrorNames } from '../../errors.js';
import { continueAfter } from '../../scan-pages.js';
import {
  arrayOverLimit,
  internalError,
  nonExistence,
  opFailed,
  queryLogic,
  ReqlError,
  ReqlRuntimeError,
} from '../errors.js';
import { ErrorType } from '../protocol.js';
import { type Access, guardTable } from '../users.js';
import { type Catalog, checkName, DEFAULT_DB, nameUuid, SYSTEM_DB } from './catalog.js';
import { compile, type Node, type TermNode } from './compiler.js';
import {
  checkInteger,
  compareDatums,
  type Datum,
  type DatumObject,
  datumTypeName,
  field,
  isPlainObject,
  makeTime,
  newObject,
  type TimeDatum,
  typeError,
  validateTime,
} from './datum.js';
import { entriesOf, type FunctionIndexDef, fieldPathValue, type IndexEntry } from './function-indexes.js';
import type { JsPool } from './js-pool.js';
import { T, termName } from './names.js';
import { getField } from './objects.js';
import { primaryKeyError } from './primary-keys.js';
import { arityText, type TermDef } from './registry.js';
import { runSingleInsert, singleInsertOf } from './single-insert.js';
import { type SystemInfo, systemTableRef } from './system-tables.js';
import type { FeedDeps } from './terms/changefeeds.js';
import { TERMS } from './terms/index.js';
import { JsFunc } from './terms/javascript.js';
import { writeHookDatum } from './terms/write-hooks.js';
import {
  Bound,
  DbRef,
  Env,
  expectType,
  Func,
  Grouped,
  isDatumValue,
  Seq,
  SingleSelection,
  TableRef,
  typeName,
  type Value,
} from './values.js';

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
  /** Changefeed limits, and who to tell of a feed (terms/changefeeds.ts). */
  feeds?: FeedDeps;
  /** Who runs the query when it is not `admin` (every table access is then checked; users.ts). */
  access?: Access;
  /** What the `rethinkdb` system tables read (system-tables.ts); without it they don't exist. */
  system?: SystemInfo;
  /** The threads r.js runs in (terms/javascript.ts; a shared default pool when absent). */
  js?: JsPool;
  /**
   * Reads of tables and indexes go to the engine page by page, with `limit`, simple `filter`s
   * and `count` pushed into the read (default). False: whole ranges are read and everything
   * after is evaluated in JS (the reference the pushed-down path is tested against).
   */
  pushDown?: boolean;
}

/** What a START produced: one datum, or rows for a cursor. */
export type QueryResult = { kind: 'atom'; value: unknown } | { kind: 'stream'; source: AsyncIterator<unknown> };

const SCAN_PAGE = 1000;

const REDUCTIONS: ReadonlySet<number> = new Set([T.SUM, T.AVG, T.MIN, T.MAX]);

/** Attach the failing term's backtrace to errors that don't have one yet. */
const LOCATED = Symbol('located');
function locate(err: unknown, node: { bt: (number | string)[] }): unknown {
  if (err instanceof ReqlError && !(err as unknown as Record<symbol, boolean>)[LOCATED]) {
    err.backtrace = node.bt;
    (err as unknown as Record<symbol, boolean>)[LOCATED] = true;
  }
  return err;
}

export class Evaluator {
  readonly deps: EvaluatorDeps;
  readonly now: TimeDatum;
  readonly defaultDb: string;
  readonly durability: Durability | undefined;
  /** While a reduction (sum, avg, min, max) runs on one group: an empty group is dropped. */
  reducingGroup = false;

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
        if (Array.isArray(node.value) && node.value.length > this.deps.arrayLimit)
          throw arrayOverLimit(this.deps.arrayLimit);
        return node.value;
      case 'value':
        return node.value as Value;
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
    if (v instanceof Grouped) return groupedDatum(v);
    if (v instanceof Bound) return { $reql_type$: v.which === 'min' ? 'MINVAL' : 'MAXVAL' };
    expectType(v, 'DATUM');
  }

  async string(node: Node, env: Env | null): Promise<string> {
    const v = await this.evalDatum(node, env);
    if (typeof v !== 'string') throw typeError('STRING', v);
    return v;
  }

  async number(node: Node, env: Env | null): Promise<number> {
    const v = await this.evalDatum(node, env);
    if (typeof v !== 'number') throw typeError('NUMBER', v);
    return v;
  }

  async integer(node: Node, env: Env | null): Promise<number> {
    return checkInteger(await this.number(node, env));
  }

  async array(node: Node, env: Env | null): Promise<Datum[]> {
    const v = await this.evalDatum(node, env);
    if (!Array.isArray(v)) throw typeError('ARRAY', v);
    return v;
  }

  /** A sequence (table, stream or array) read into an array, up to the array limit. */
  async seqArray(node: Node, env: Env | null): Promise<Datum[]> {
    return this.materialize(this.seq(await this.eval(node, env)));
  }

  async bool(node: Node, env: Env | null): Promise<boolean> {
    const v = await this.evalDatum(node, env);
    if (typeof v !== 'boolean') throw typeError('BOOL', v);
    return v;
  }

  async optDatum(node: TermNode, name: string, env: Env | null): Promise<Datum | undefined> {
    const n = node.optargs[name];
    return n === undefined ? undefined : this.evalDatum(n, env);
  }

  /** Call a function value; a non-function acts as a constant function. */
  async call(f: Value, args: Datum[]): Promise<Value> {
    if (!(f instanceof Func)) return f;
    if (f instanceof JsFunc) return f.invoke(this, args);
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

  /** Whether reads of `ref` page through the engine (`EngineRead`): not the system tables, computed in JS. */
  readsInEngine(ref: TableRef): boolean {
    return this.deps.pushDown !== false && ref.db !== SYSTEM_DB;
  }

  tableSeq(ref: TableRef, bounds: ScanOptions = {}): Seq {
    if (!this.readsInEngine(ref)) return Seq.fromStream(() => this.scan(ref, bounds), ref);
    const range: PageRange = {
      lower: bounds.gte ?? bounds.gt ?? null,
      lowerClosed: bounds.gt === undefined,
      upper: bounds.lte ?? bounds.lt ?? null,
      upperClosed: bounds.lt === undefined,
    };
    return new EngineRead(this, ref, null, [range], bounds.reverse === true).seq();
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
    if (seq.feed)
      throw queryLogic(
        'Cannot call a terminal (`reduce`, `count`, etc.) on an infinite stream (such as a changefeed).',
      );
    if (seq.infinite)
      throw queryLogic(
        'Cannot use an infinite stream with an aggregation function (`reduce`, `count`, etc.) or coerce it to an array.',
      );
    const out: Datum[] = [];
    const it = seq.open();
    try {
      for (;;) {
        const r = await it.next();
        if (r.done) break;
        if (out.length >= this.deps.arrayLimit) throw arrayOverLimit(this.deps.arrayLimit);
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
    return Seq.fromStream(
      async function* () {
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
      },
      table,
      seq.infinite,
    );
  }

  // ---- tables and engine errors ----

  tableRef(db: string, name: string, identifierFormat: 'name' | 'uuid' = 'name'): TableRef {
    checkName('Table', name);
    const engineName = this.deps.catalog.engineName(db, name);
    const info = db === SYSTEM_DB ? undefined : this.deps.catalog.tableInfo(engineName);
    const system = db === SYSTEM_DB ? systemTableRef(this, name, identifierFormat) : undefined;
    if (!info && !system) {
      this.deps.catalog.requireDb(db);
      throw opFailed(`Table \`${db}.${name}\` does not exist.`);
    }
    const ref = system ?? new TableRef(db, name, engineName, info?.primaryKey ?? 'id', this.deps.db.table(engineName));
    const access = this.deps.access;
    if (access === undefined) return ref;
    return new TableRef(ref.db, ref.name, ref.engineName, ref.primaryKey, guardTable(ref.engine, access, db, name));
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
    if (typeof v === 'number') return v;
    const error = primaryKeyError(v);
    if (error !== null) throw queryLogic(error);
    return v as Key;
  }

  // ---- terms ----

  /** Evaluate a term through its family's entry in the registry (terms/index.ts). */
  term(node: TermNode, env: Env | null): Promise<Value> {
    const def = TERMS.get(node.type);
    if (def === undefined) throw queryLogic(`Wharf does not support the term ${termName(node.type)} (${node.type}).`);
    if (node.args.some((n) => n.kind === 'term' && n.type === T.ARGS)) return this.splicedTerm(def, node, env);
    if (def.grouped && node.args.length > 0) return this.groupedTerm(def, node, env);
    return def.eval(this, node, env);
  }

  /** A term with r.args(array) among its arguments: splice the arrays in, then check arity. */
  private async splicedTerm(def: TermDef, node: TermNode, env: Env | null): Promise<Value> {
    const args: Node[] = [];
    for (const n of node.args) {
      if (n.kind === 'term' && n.type === T.ARGS) {
        const items = await this.evalDatum(n.args[0] as Node, env);
        if (!Array.isArray(items)) throw typeError('ARRAY', items);
        for (const v of items) args.push({ kind: 'value', value: v, bt: n.bt });
      } else args.push(n);
    }
    if (args.length < def.min || args.length > def.max)
      throw queryLogic(`Expected ${arityText(def)} but found ${args.length}.`);
    const spliced: TermNode = { ...node, args };
    if (def.grouped && args.length > 0) return this.groupedTerm(def, spliced, env);
    return def.eval(this, spliced, env);
  }

  /** A group-aware term: evaluate the first argument once; on GROUPED_DATA, apply per group. */
  private async groupedTerm(def: TermDef, node: TermNode, env: Env | null): Promise<Value> {
    const first = node.args[0] as Node;
    const input = await this.eval(first, env);
    const withFirst = (value: Value): TermNode => ({
      ...node,
      args: [{ kind: 'value', value, bt: first.kind === 'datum' ? node.bt : first.bt }, ...node.args.slice(1)],
    });
    if (!(input instanceof Grouped)) return def.eval(this, withFirst(input), env);
    const out = new Map<string, { key: Datum; value: Value }>();
    const reduction = REDUCTIONS.has(node.type);
    let sequences = node.type !== T.COERCE_TO;
    for (const [k, g] of input.groups) {
      let v: Value;
      try {
        this.reducingGroup = reduction;
        v = await def.eval(this, withFirst(g.value), env);
      } catch (err) {
        // A group a reduction finds nothing in has no entry (RethinkDB drops it).
        if (reduction && err instanceof ReqlRuntimeError && err.errorType === ErrorType.NON_EXISTENCE) continue;
        throw err;
      } finally {
        this.reducingGroup = false;
      }
      if (!(v instanceof Seq)) sequences = false;
      const value = v instanceof Seq ? await this.datum(v) : v;
      // Groups exist only through their rows: one a filter leaves empty (of a stream), or that
      // count's predicate finds nothing in, is gone, as RethinkDB groups rows as they stream.
      if (
        (input.stream && Array.isArray(value) && value.length === 0) ||
        (node.type === T.COUNT && node.args.length > 1 && value === 0)
      )
        continue;
      out.set(k, { key: g.key, value });
    }
    // Groups of a stream stay a GROUPED_STREAM while each is a sequence (not reduced or coerced).
    return new Grouped(out, input.stream && sequences);
  }

  /** The `index` optarg when it names a secondary index; null for the primary key or none. */
  async secondaryIndex(node: TermNode, t: TableRef, env: Env | null): Promise<string | null> {
    const index = await this.optDatum(node, 'index', env);
    if (index === undefined || index === t.primaryKey) return null;
    if (typeof index !== 'string') throw typeError('STRING', index);
    return index;
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
      write_hook: hookDatum(this.deps.catalog.writeHooks.current(t.engineName)?.fn),
    };
  }

  async bracket(target: Value, key: Datum, strictField: boolean): Promise<Value> {
    if (typeof key === 'number' && !strictField) return this.nth(target, key);
    const op = strictField ? 'get_field' : 'bracket';
    if (typeof key !== 'string') {
      if (strictField) throw typeError('STRING', key);
      throw queryLogic(`Expected NUMBER or STRING as second argument to \`bracket\` but found ${datumTypeName(key)}.`);
    }
    if (target instanceof TableRef || target instanceof Seq) {
      return this.mapSeq(this.seq(target), async (row) => {
        if (!isPlainObject(row))
          throw queryLogic(`Cannot perform ${op} on a non-object non-sequence \`${JSON.stringify(row)}\`.`);
        return field(row, key);
      });
    }
    const d = await this.datum(target);
    if (Array.isArray(d)) {
      const out: Datum[] = [];
      for (const row of d) {
        if (!isPlainObject(row))
          throw queryLogic(`Cannot perform ${op} on a non-object non-sequence \`${JSON.stringify(row)}\`.`);
        const v = field(row, key);
        if (v !== undefined) out.push(v);
      }
      return out;
    }
    if (!isPlainObject(d)) {
      const message = `Cannot perform ${op} on a non-object non-sequence \`${JSON.stringify(d)}\`.`;
      throw d === null ? nonExistence(message) : queryLogic(message);
    }
    return getField(d, key);
  }

  async nth(target: Value, i: number): Promise<Value> {
    if (!Number.isInteger(i)) throw queryLogic(`Number not an integer: ${i}`);
    const s = this.seq(target instanceof SingleSelection ? await this.datum(target) : target);
    // A row of a selection stays a selection of that row (SELECTION<OBJECT>: writes may follow).
    const row = (v: Datum): Value => {
      const key = s.table !== null && isPlainObject(v) ? field(v, s.table.primaryKey) : undefined;
      return s.table !== null && key !== undefined ? new SingleSelection(s.table, key as Key, v as DatumObject) : v;
    };
    const items = s.array ?? (i < 0 ? await this.materialize(s) : null);
    if (items) {
      const v = items[i < 0 ? items.length + i : i];
      if (v === undefined) throw nonExistence(`Index out of bounds: ${i}`);
      return row(v);
    }
    const it = s.open();
    try {
      for (let n = 0; ; n++) {
        const r = await it.next();
        if (r.done) throw nonExistence(`Index out of bounds: ${i}`);
        if (n === i) return row(r.value);
      }
    } finally {
      await it.return?.();
    }
  }

  /** Where a secondary index lives: the engine (a field path) or the function-index store. */
  async indexSource(
    t: TableRef,
    name: string,
    geo = false,
  ): Promise<{ kind: 'engine'; info: IndexInfo } | { kind: 'function'; def: FunctionIndexDef }> {
    const def = await this.deps.catalog.functionIndexes.get(t.engineName, name);
    if (def?.geo && !geo)
      throw queryLogic(
        `Index \`${name}\` is a geospatial index.  Only get_nearest and get_intersecting can use a geospatial index.`,
      );
    if (def) return { kind: 'function', def };
    let infos: IndexInfo[];
    try {
      infos = await t.engine.listIndexes();
    } catch (err) {
      throw this.engineError(err, t);
    }
    const info = infos.find((i) => i.name === name);
    if (!info) throw opFailed(`Index \`${name}\` was not found on table \`${t.fullName}\`.`);
    return { kind: 'engine', info };
  }

  /** Every (value, row) entry of a secondary index, evaluated over a scan of the table. */
  async indexEntries(
    t: TableRef,
    src: { kind: 'engine'; info: IndexInfo } | { kind: 'function'; def: FunctionIndexDef },
    only?: Datum[],
  ): Promise<IndexEntry[]> {
    const rows = only ?? (await this.materializeAll(this.tableSeq(t)));
    const out: IndexEntry[] = [];
    if (src.kind === 'engine') {
      for (const row of rows) {
        const v = fieldPathValue(row, src.info);
        if (v !== undefined && v !== null) entriesOf(v, row, src.info.multi, out);
      }
      return out;
    }
    const fn = await this.eval(compile(src.def.fn), null);
    for (const row of rows) {
      let v: Datum;
      try {
        v = await this.callDatum(fn, [row]);
      } catch (err) {
        if (err instanceof ReqlRuntimeError) continue; // a row the function fails on is not indexed
        throw err;
      }
      if (v === null || isBoundSentinel(v)) continue; // r.minval/r.maxval index nothing
      entriesOf(v, row, src.def.multi, out);
    }
    return out;
  }

  /** A whole sequence in memory (index evaluation over a table: no array limit). */
  async materializeAll(seq: Seq): Promise<Datum[]> {
    if (seq.array) return seq.array;
    const out: Datum[] = [];
    const it = seq.open();
    try {
      for (;;) {
        const r = await it.next();
        if (r.done) break;
        out.push(r.value);
      }
    } finally {
      await it.return?.();
    }
    return out;
  }

  /** Rows of a secondary index equal to one of `values`, value after value (getAll). */
  indexValuesSeq(t: TableRef, index: string, values: IndexValue[]): Seq {
    if (this.readsInEngine(t)) {
      const ranges = values.map((v) => ({ lower: v, lowerClosed: true, upper: v, upperClosed: true }));
      return new EngineRead(this, t, index, ranges, false).seq();
    }
    const evaluator = this;
    return Seq.fromStream(async function* () {
      if (values.length === 0) return;
      let rows: object[];
      try {
        rows = await t.engine.getAll(index, values);
      } catch (err) {
        throw evaluator.engineError(err, t, index);
      }
      for (const r of rows) yield r as Datum;
    }, t);
  }

  /** Rows of a secondary index between two values (null: unbounded), in index order. */
  indexSeq(t: TableRef, index: string, lower: IndexValue | null, upper: IndexValue | null, opts: BetweenOptions): Seq {
    if (this.readsInEngine(t)) {
      const range: PageRange = {
        lower,
        lowerClosed: opts.leftBound !== 'open',
        upper,
        upperClosed: opts.rightBound === 'closed',
      };
      return new EngineRead(this, t, index, [range], opts.reverse === true).seq();
    }
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
}

/** Rows per page of an engine read with no limit (as the driver's cursor takes them). */
const READ_PAGE = 1000;

/** A row a pushed-down filter left to JS: true when the JS predicate keeps it. */
export type RowTest = (row: Datum) => Promise<boolean>;

/**
 * A read the engine does lazily, page by page (`table.readPage`): a primary-key range or index
 * ranges, in key or index order, with what follows it pushed into the read when it can be: a
 * `limit` (a page asks for what is still wanted, so `.limit(n)` reads about n documents), a
 * simple `filter` (evaluated on the stored JSON; rows the engine defers are decided by `test`,
 * the JS predicate, so results equal the JS path's) and `count` (counted in the engine).
 */
export class EngineRead {
  constructor(
    readonly ev: Evaluator,
    readonly ref: TableRef,
    readonly index: string | null,
    readonly ranges: PageRange[],
    readonly reverse: boolean,
    readonly filter: { spec: FilterSpec; test: RowTest } | null = null,
    readonly limit: number | null = null,
  ) {}

  seq(): Seq {
    const s = Seq.fromStream(() => this.rows(), this.ref);
    s.engineRead = this;
    return s;
  }

  /** The same read, filtered (null when it has a filter or a limit already: JS filters it then). */
  filtered(spec: FilterSpec, test: RowTest): EngineRead | null {
    if (this.filter !== null || this.limit !== null) return null;
    return new EngineRead(this.ev, this.ref, this.index, this.ranges, this.reverse, { spec, test });
  }

  limited(n: number): EngineRead {
    const limit = this.limit === null ? n : Math.min(n, this.limit);
    return new EngineRead(this.ev, this.ref, this.index, this.ranges, this.reverse, this.filter, limit);
  }

  private async page(after: PageResume | null, limit: number, count: boolean) {
    try {
      return await this.ref.engine.readPage({
        ...(this.index === null ? {} : { index: this.index }),
        ranges: this.ranges,
        after,
        limit,
        reverse: this.reverse,
        count,
        ...(this.filter === null ? {} : { filter: this.filter.spec }),
      });
    } catch (err) {
      throw this.ev.engineError(err, this.ref, this.index ?? undefined);
    }
  }

  async *rows(): AsyncGenerator<Datum> {
    let remaining = this.limit ?? Number.POSITIVE_INFINITY;
    let after: PageResume | null = null;
    while (remaining > 0) {
      const page = await this.page(after, Math.min(remaining, READ_PAGE), false);
      const deferred = new Set(page.deferred);
      for (const [i, row] of page.rows.entries()) {
        if (deferred.has(i) && !(await (this.filter as { test: RowTest }).test(row as Datum))) continue;
        yield row as Datum;
        if (--remaining === 0) return;
      }
      if (page.after === null) return;
      after = page.after;
    }
  }

  /** The rows' number, counted in the engine (deferred rows decided in JS). */
  async count(): Promise<number> {
    if (this.limit !== null) {
      let n = 0;
      for await (const _ of this.rows()) n++;
      return n;
    }
    let n = 0;
    let after: PageResume | null = null;
    for (;;) {
      const page = await this.page(after, READ_PAGE, true);
      n += page.counted;
      for (const row of page.rows) if (await (this.filter as { test: RowTest }).test(row as Datum)) n++;
      if (page.after === null) return n;
      after = page.after;
    }
  }
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
  // The fast path skips the table lookup and its permission checks (admin connections only), and
  // a table with a write hook (or hooks not read yet) takes the general path, which applies it.
  if (single !== undefined && deps.access === undefined && deps.catalog.writeHooks.peek(single.table) === false) {
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
      throw queryLogic(
        `Durability option \`${typeof d === 'string' ? d : JSON.stringify(d)}\` unrecognized (options are "hard" and "soft").`,
      );
    durability = d;
  }
  const arrayLimitOptarg = ownOptarg(globalOptargs, 'array_limit');
  let queryDeps = deps;
  if (arrayLimitOptarg !== undefined) {
    const n = await bootstrap.evalDatum(compile(arrayLimitOptarg), null);
    if (typeof n !== 'number') throw typeError('NUMBER', n);
    if (n < 1) throw queryLogic(`Illegal array size limit \`${n}\`.  (Must be >= 1.)`);
    queryDeps = { ...deps, arrayLimit: Math.floor(n) };
  }
  const evaluator = new Evaluator(queryDeps, { defaultDb, ...(durability ? { durability } : {}) });
  const value = await evaluator.eval(root, null);
  if (value instanceof TableRef) return { kind: 'stream', source: evaluator.tableSeq(value).open() };
  if (value instanceof Seq) {
    if (value.array) return { kind: 'atom', value: value.array };
    return { kind: 'stream', source: value.open() };
  }
  if (value instanceof SingleSelection) return { kind: 'atom', value: value.row };
  if (value instanceof Grouped) return { kind: 'atom', value: groupedDatum(value) };
  if (value instanceof Bound) throw queryLogic(`Cannot convert \`r.${value.which}val\` to JSON.`);
  if (isDatumValue(value)) return { kind: 'atom', value };
  throw queryLogic(`Query result must be of type DATUM, GROUPED_DATA, or STREAM (got ${typeName(value)}).`);
}

export { expectType, validateTime };

function hookDatum(fn: Datum | undefined): Datum {
  return fn === undefined ? null : writeHookDatum(fn);
}

function isBoundSentinel(v: Datum): boolean {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const rt = field(v, '$reql_type$');
  return rt === 'MINVAL' || rt === 'MAXVAL';
}

/** GROUPED_DATA as the pseudo-type the drivers read: `[key, value]` pairs, in key order. */
export function groupedDatum(g: Grouped): Datum {
  const data = [...g.groups.values()].sort((x, y) => compareDatums(x.key, y.key)).map((e) => [e.key, e.value as Datum]);
  return { $reql_type$: 'GROUPED_DATA', data };
}
