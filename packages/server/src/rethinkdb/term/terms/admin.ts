/**
 * Databases, tables, indexes and selections by key (RethinkDB's db_table.cc, sindex.cc): db,
 * table, get, get_all, between, db_create/drop/list, table_create/drop/list, index_*, config,
 * status, wait.
 */
import type { IndexInfo, Key, ScanOptions } from '@wharf/engine';
import { isHiddenTable } from '../../../names.js';
import { nonExistence, opFailed, queryLogic } from '../../errors.js';
import { checkName, nameUuid, SYSTEM_DB } from '../catalog.js';
import { compile, type Node, type TermNode } from '../compiler.js';
import {
  compareDatums,
  type Datum,
  type DatumObject,
  datumsEqual,
  field,
  isBinary,
  isObject,
  pretty,
  typeError,
} from '../datum.js';
import { isDeterministic } from '../determinism.js';
import type { Evaluator } from '../evaluator.js';
import { type FunctionIndexDef, sortEntries } from '../function-indexes.js';
import { checkIndexName, indexFieldPath, indexStatus, indexValue, selectIndexes } from '../indexes.js';
import { T } from '../names.js';
import { INF, type TermDef, type TermFamily } from '../registry.js';
import { publishDbChange, publishTableChange, SYSTEM_TABLES, tableConfigOf, tableStatusOf } from '../system-tables.js';
import { Bound, DbRef, type Env, expectType, Func, Seq, SingleSelection, TableRef, type Value } from '../values.js';

const tableAdminTerm = (min: number, max: number, optargs?: readonly string[]): TermDef => ({
  min,
  max,
  ...(optargs ? { optargs } : {}),
  eval: tableAdmin,
});
const indexAdminTerm = (min: number, max: number, optargs?: readonly string[]): TermDef => ({
  min,
  max,
  ...(optargs ? { optargs } : {}),
  eval: indexAdmin,
});

export const adminTerms: TermFamily = {
  [T.DB]: {
    min: 1,
    max: 1,
    eval: async (ev, node, env) => new DbRef(checkName('Database', await ev.evalDatum(node.args[0] as Node, env))),
  },
  [T.TABLE]: {
    min: 1,
    max: 2,
    optargs: ['read_mode', 'identifier_format', 'use_outdated'],
    eval: async (ev, node, env) => {
      const a = node.args;
      let db = ev.defaultDb;
      let nameNode = a[0] as Node;
      if (a.length === 2) {
        const d = await ev.eval(a[0] as Node, env);
        if (!(d instanceof DbRef)) expectType(d, 'DATABASE');
        db = d.name;
        nameNode = a[1] as Node;
      }
      const format = (await ev.optDatum(node, 'identifier_format', env)) ?? 'name';
      if (typeof format !== 'string') throw typeError('STRING', format);
      if (format !== 'name' && format !== 'uuid')
        throw queryLogic(`Identifier format \`${format}\` unrecognized (options are "name" and "uuid").`);
      const readMode = await ev.optDatum(node, 'read_mode', env);
      if (readMode !== undefined) {
        if (typeof readMode !== 'string') throw typeError('STRING', readMode);
        if (!['single', 'majority', 'outdated', '_debug_direct'].includes(readMode))
          throw queryLogic(
            `Read mode \`${readMode}\` unrecognized (options are "majority", "single", and "outdated").`,
          );
      }
      return ev.tableRef(db, checkName('Table', await ev.evalDatum(nameNode, env)), format);
    },
  },
  [T.GET]: {
    min: 2,
    max: 2,
    eval: async (ev, node, env) => {
      const t = await ev.eval(node.args[0] as Node, env);
      if (!(t instanceof TableRef)) expectType(t, 'TABLE');
      const key = ev.primaryKeyOf(await ev.evalDatum(node.args[1] as Node, env));
      let row: object | null;
      try {
        row = await t.engine.get(key);
      } catch (err) {
        throw ev.engineError(err, t);
      }
      return new SingleSelection(t, key, row as DatumObject | null);
    },
  },
  [T.GET_ALL]: { min: 1, max: INF, optargs: ['index'], eval: getAll },
  [T.BETWEEN]: { min: 3, max: 3, optargs: ['index', 'left_bound', 'right_bound'], eval: between },
  [T.DB_CREATE]: {
    min: 1,
    max: 1,
    eval: async (ev, node, env) => {
      const name = checkName('Database', await ev.evalDatum(node.args[0] as Node, env));
      ev.deps.access?.require('config');
      ev.deps.catalog.createDb(name);
      publishDbChange(ev, null, { id: nameUuid(`db:${name}`), name });
      return { config_changes: [{ new_val: { id: nameUuid(`db:${name}`), name }, old_val: null }], dbs_created: 1 };
    },
  },
  [T.DB_DROP]: {
    min: 1,
    max: 1,
    eval: async (ev, node, env) => {
      const name = checkName('Database', await ev.evalDatum(node.args[0] as Node, env));
      let tables: number;
      const access = ev.deps.access;
      if (access !== undefined && name !== SYSTEM_DB && ev.deps.catalog.dbExists(name)) {
        access.require('config', name);
        for (const t of ev.deps.catalog.listTables(name)) access.require('config', name, t);
      }
      try {
        tables = await ev.deps.catalog.dropDb(name);
        await ev.deps.system?.users.forget(name);
      } catch (err) {
        throw ev.engineError(err);
      }
      publishDbChange(ev, { id: nameUuid(`db:${name}`), name }, null);
      return {
        config_changes: [{ new_val: null, old_val: { id: nameUuid(`db:${name}`), name } }],
        dbs_dropped: 1,
        tables_dropped: tables,
      };
    },
  },
  [T.DB_LIST]: { min: 0, max: 0, eval: async (ev) => ev.deps.catalog.listDbs() },
  [T.TABLE_CREATE]: tableAdminTerm(1, 2, [
    'primary_key',
    'shards',
    'replicas',
    'primary_replica_tag',
    'nonvoting_replica_tags',
    'durability',
  ]),
  [T.TABLE_DROP]: tableAdminTerm(1, 2),
  [T.TABLE_LIST]: tableAdminTerm(0, 1),
  [T.INDEX_LIST]: indexAdminTerm(1, 1),
  [T.INDEX_CREATE]: indexAdminTerm(2, 3, ['multi', 'geo']),
  [T.INDEX_DROP]: indexAdminTerm(2, 2),
  [T.INDEX_STATUS]: indexAdminTerm(1, INF),
  [T.INDEX_WAIT]: indexAdminTerm(1, INF),
  [T.INDEX_RENAME]: indexAdminTerm(3, 3, ['overwrite']),
  [T.CONFIG]: {
    min: 1,
    max: 1,
    eval: async (ev, node, env) => {
      const t = await ev.eval(node.args[0] as Node, env);
      if (t instanceof DbRef) {
        ev.deps.catalog.requireDb(t.name);
        if (t.name === SYSTEM_DB) throw opFailed(`Database \`${SYSTEM_DB}\` is special; you can't configure it.`);
        ev.deps.access?.require('config', t.name);
        return { id: nameUuid(`db:${t.name}`), name: t.name };
      }
      if (!(t instanceof TableRef)) expectType(t, 'TABLE');
      notSystem(t, "you can't configure the tables in it.");
      ev.deps.access?.require('config', t.db, t.name);
      return tableConfigOf(ev, t);
    },
  },
  [T.RECONFIGURE]: {
    min: 1,
    max: 1,
    optargs: ['shards', 'replicas', 'primary_replica_tag', 'nonvoting_replica_tags', 'dry_run', 'emergency_repair'],
    eval: reconfigure,
  },
  [T.REBALANCE]: {
    min: 1,
    max: 1,
    eval: async (ev, node, env) => {
      const tables = await tablesOf(ev, await ev.eval(node.args[0] as Node, env));
      for (const t of tables) {
        notSystem(t, "you can't rebalance the tables in it.");
        ev.deps.access?.require('config', t.db, t.name);
      }
      return {
        rebalanced: tables.length,
        status_changes: tables.map((t) => ({ old_val: tableStatus(ev, t), new_val: tableStatus(ev, t) })),
      };
    },
  },
  [T.STATUS]: {
    min: 1,
    max: 1,
    eval: async (ev, node, env) => {
      const t = await ev.eval(node.args[0] as Node, env);
      if (!(t instanceof TableRef)) expectType(t, 'TABLE');
      notSystem(t, "the system tables in it don't have meaningful status information.");
      return tableStatusOf(ev, t);
    },
  },
  [T.WAIT]: {
    min: 0,
    max: 1,
    optargs: ['wait_for', 'timeout'],
    eval: async (ev, node, env) => {
      if (node.args.length === 0) return { ready: ev.deps.catalog.tables().size };
      const t = await ev.eval(node.args[0] as Node, env);
      if (t instanceof DbRef) {
        ev.deps.catalog.requireDb(t.name);
        return { ready: ev.deps.catalog.listTables(t.name).length };
      }
      if (!(t instanceof TableRef)) expectType(t, 'TABLE');
      notSystem(t, "the system tables in it are always available and don't need to be waited on.");
      return { ready: 1 };
    },
  },
};

/** A GET_ALL key as RethinkDB checks it first (get_all_term_t::get_key_arg). */
function getAllKey(k: Datum): Datum {
  if (isObject(k) && field(k, '$reql_type$') === 'GEOMETRY')
    throw queryLogic('Cannot use a geospatial index with `get_all`. Use `get_intersecting` instead.');
  if (k === null) throw nonExistence('Keys cannot be NULL.');
  return k;
}

async function getAll(ev: Evaluator, node: TermNode, env: Env | null): Promise<Value> {
  const a = node.args;
  const t = await ev.eval(a[0] as Node, env);
  if (!(t instanceof TableRef)) expectType(t, 'TABLE');
  const index = await ev.secondaryIndex(node, t, env);
  if (index !== null) {
    const src = await ev.indexSource(t, index);
    const wanted: Datum[] = [];
    for (const n of a.slice(1)) wanted.push(await ev.evalDatum(n, env));
    for (const w of wanted) getAllKey(w);
    if (src.kind === 'function' || !wanted.every(isScalar)) {
      if (wanted.length === 0) return Seq.fromArray([], t);
      const entries = await ev.indexEntries(t, src);
      const rows: Datum[] = [];
      for (const w of wanted) for (const e of entries) if (datumsEqual(e.value, w)) rows.push(e.row);
      return Seq.fromArray(rows, t);
    }
    return ev.indexValuesSeq(
      t,
      index,
      wanted.map((w) => indexValue(w)),
    );
  }
  const keys: Key[] = [];
  for (const n of a.slice(1)) {
    keys.push(ev.primaryKeyOf(getAllKey(await ev.evalDatum(n, env))));
  }
  return Seq.fromStream(async function* () {
    if (keys.length === 0) return;
    let rows: (object | null)[];
    try {
      rows = await t.engine.getMany(keys);
    } catch (err) {
      throw ev.engineError(err, t);
    }
    for (const r of rows) if (r !== null) yield r as Datum;
  }, t);
}

/** INDEX_CREATE, INDEX_DROP, INDEX_LIST, INDEX_STATUS, INDEX_WAIT. */
/** A compiled node back in the wire form (to persist an index function). */
export function toWire(n: Node): unknown {
  switch (n.kind) {
    case 'datum':
      return datumWire(n.value);
    case 'term': {
      const out: unknown[] = [n.type, n.args.map(toWire)];
      const opt = Object.entries(n.optargs);
      if (opt.length > 0) out.push(Object.fromEntries(opt.map(([k, v]) => [k, toWire(v)])));
      return out;
    }
    case 'func':
      return [T.FUNC, [[T.MAKE_ARRAY, n.params], toWire(n.body)]];
    case 'var':
      return [T.VAR, [n.id]];
    case 'obj':
      return Object.fromEntries(Object.entries(n.fields).map(([k, v]) => [k, toWire(v)]));
    case 'array':
      return [T.MAKE_ARRAY, n.items.map(toWire)];
    case 'value':
      return datumWire(n.value as Datum);
  }
}

function datumWire(v: Datum): unknown {
  if (Array.isArray(v)) return [T.MAKE_ARRAY, v.map(datumWire)];
  if (v !== null && typeof v === 'object')
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, datumWire(x)]));
  return v;
}

const binaryOf = (text: string): DatumObject => ({ $reql_type$: 'BINARY', data: Buffer.from(text).toString('base64') });

function fieldFunctionWire(path: string): unknown {
  let body: unknown = [T.VAR, [1]];
  for (const part of path.split('.')) body = [T.BRACKET, [body, part]];
  return [T.FUNC, [[T.MAKE_ARRAY, [1]], body]];
}

async function allIndexes(ev: Evaluator, t: TableRef): Promise<{ engine: IndexInfo[]; functions: FunctionIndexDef[] }> {
  let engine: IndexInfo[];
  try {
    engine = await t.engine.listIndexes();
  } catch (err) {
    throw ev.engineError(err, t);
  }
  return { engine, functions: await ev.deps.catalog.functionIndexes.forTable(t.engineName) };
}

function statusOf(entry: IndexInfo | FunctionIndexDef, documents: number | undefined): DatumObject {
  if ('field' in entry) {
    const out = indexStatus(entry, documents);
    out.function = binaryOf(JSON.stringify(fieldFunctionWire(entry.field)));
    out.query = `indexCreate(${JSON.stringify(entry.name)}, function(doc) { return doc(${entry.field
      .split('.')
      .map((p) => JSON.stringify(p))
      .join(')(')}); }${entry.multi ? ', {multi: true}' : ''})`;
    return out;
  }
  return {
    index: entry.name,
    ready: true,
    multi: entry.multi,
    geo: entry.geo,
    outdated: false,
    function: binaryOf(JSON.stringify(entry.fn)),
    query: `indexCreate(${JSON.stringify(entry.name)}, ${JSON.stringify(entry.fn)})`,
  };
}

async function indexAdmin(ev: Evaluator, node: TermNode, env: Env | null): Promise<Value> {
  const a = node.args;
  const t = await ev.eval(a[0] as Node, env);
  if (!(t instanceof TableRef)) expectType(t, 'TABLE');
  const api = t.engine;
  const store = ev.deps.catalog.functionIndexes;
  const exists = async (name: string): Promise<boolean> => {
    const { engine, functions } = await allIndexes(ev, t);
    return engine.some((i) => i.name === name) || functions.some((f) => f.name === name);
  };
  if (node.type === T.INDEX_CREATE) notSystem(t, "you can't create secondary indexes on the tables in it.");
  if (node.type === T.INDEX_CREATE || node.type === T.INDEX_DROP || node.type === T.INDEX_RENAME) {
    if (t.db === SYSTEM_DB) {
      const name = await ev.evalDatum(a[1] as Node, env);
      throw opFailed(
        `Index \`${typeof name === 'string' ? name : pretty(name)}\` does not exist on table \`${t.fullName}\`.`,
      );
    }
    // Function indexes live outside the engine table: the check can't be left to its guard.
    ev.deps.access?.require('config', t.db, t.name);
  }
  const primaryConflict = (name: string): void => {
    if (name === t.primaryKey) throw queryLogic(`Index name conflict: \`${name}\` is the name of the primary key.`);
  };
  switch (node.type) {
    case T.INDEX_CREATE: {
      const name = checkIndexName(await ev.evalDatum(a[1] as Node, env));
      primaryConflict(name);
      const multi = (await ev.optDatum(node, 'multi', env)) ?? false;
      if (typeof multi !== 'boolean') throw typeError('BOOL', multi);
      const geo = (await ev.optDatum(node, 'geo', env)) ?? false;
      if (typeof geo !== 'boolean') throw typeError('BOOL', geo);
      // An index function must give the same value every time (r.now() included), checked first.
      // (A function given as index_status's binary was checked when that index was made.)
      if (a[2]?.kind === 'func' && !isDeterministic(a[2], false))
        throw queryLogic('Could not prove function deterministic.  Index functions must be deterministic.');
      if (await exists(name)) throw opFailed(`Index \`${name}\` already exists on table \`${t.fullName}\`.`);
      let field: string | null = null;
      let fn: unknown;
      const fnNode = a[2];
      if (!geo) {
        try {
          field = indexFieldPath(fnNode, name);
        } catch {
          field = null;
        }
      }
      if (field !== null) {
        try {
          await ev.deps.trackWrite(api.createIndex(name, field, { multi }));
        } catch (err) {
          throw ev.engineError(err, t, name);
        }
        return { created: 1 };
      }
      if (fnNode === undefined) fn = fieldFunctionWire(name);
      else if (fnNode.kind === 'func') fn = toWire(fnNode);
      else {
        const v = await ev.eval(fnNode, env);
        if (v instanceof Func) fn = toWire({ kind: 'func', params: v.params, body: v.body, bt: node.bt });
        else {
          const d = await ev.datum(v);
          if (!isBinary(d)) throw typeError('FUNCTION', d);
          try {
            fn = JSON.parse(Buffer.from(d.data, 'base64').toString('utf8'));
            compile(fn);
          } catch (err) {
            throw queryLogic(
              `Binary blob passed to index create could not be interpreted as a reql_index_function (${(err as Error).message}).`,
            );
          }
        }
      }
      await ev.deps.trackWrite(store.add({ table: t.engineName, name, fn: fn as Datum, multi, geo }));
      return { created: 1 };
    }
    case T.INDEX_DROP: {
      const name = checkIndexName(await ev.evalDatum(a[1] as Node, env));
      if (await ev.deps.trackWrite(store.drop(t.engineName, name))) return { dropped: 1 };
      if (!(await exists(name))) throw opFailed(`Index \`${name}\` does not exist on table \`${t.fullName}\`.`);
      try {
        await ev.deps.trackWrite(api.dropIndex(name));
      } catch (err) {
        throw ev.engineError(err, t, name);
      }
      return { dropped: 1 };
    }
    case T.INDEX_RENAME: {
      const from = await ev.string(a[1] as Node, env);
      const to = await ev.string(a[2] as Node, env);
      primaryConflict(from);
      primaryConflict(to);
      checkIndexName(to);
      const overwrite = (await ev.optDatum(node, 'overwrite', env)) ?? false;
      if (typeof overwrite !== 'boolean') throw typeError('BOOL', overwrite);
      const { engine, functions } = await allIndexes(ev, t);
      const fromEngine = engine.find((i) => i.name === from);
      const fromFn = functions.find((f) => f.name === from);
      const renameFailed = () =>
        opFailed(`Index \`${from}\` does not exist or index \`${to}\` already exists on table \`${t.fullName}\`.`);
      if (!fromEngine && !fromFn) throw renameFailed();
      if (from === to) return { renamed: 0 };
      const toExists = engine.some((i) => i.name === to) || functions.some((f) => f.name === to);
      if (toExists && !overwrite) throw renameFailed();
      if (toExists) {
        if (!(await store.drop(t.engineName, to))) await ev.deps.trackWrite(api.dropIndex(to));
      }
      if (fromFn) {
        await store.add({ table: t.engineName, name: to, fn: fromFn.fn, multi: fromFn.multi, geo: fromFn.geo });
        await store.drop(t.engineName, from);
      } else if (fromEngine) {
        try {
          await ev.deps.trackWrite(api.createIndex(to, fromEngine.field, { multi: fromEngine.multi }));
          await ev.deps.trackWrite(api.dropIndex(from));
        } catch (err) {
          throw ev.engineError(err, t, to);
        }
      }
      return { renamed: 1 };
    }
  }
  const names: string[] = [];
  for (const n of a.slice(1)) {
    const v = await ev.evalDatum(n, env);
    for (const x of Array.isArray(v) ? v : [v]) {
      if (typeof x !== 'string') throw typeError('STRING', x);
      names.push(x);
    }
  }
  const { engine: all, functions } = await allIndexes(ev, t);
  if (node.type === T.INDEX_LIST) return [...all.map((i) => i.name), ...functions.map((f) => f.name)].sort();
  const selectedFns = names.length === 0 ? functions : functions.filter((f) => names.includes(f.name));
  const engineNames = names.filter((n) => !functions.some((f) => f.name === n));
  let selected = names.length > 0 && engineNames.length === 0 ? [] : selectIndexes(all, engineNames, t);
  if (node.type === T.INDEX_WAIT && selected.length > 0) {
    try {
      const waited = await api.indexWait(selected.map((i) => i.name));
      selected = selected.map((i) => waited.find((w) => w.name === i.name) ?? { ...i, ready: true });
    } catch (err) {
      throw ev.engineError(err, t);
    }
  }
  const documents = ev.deps.catalog.tableInfo(t.engineName)?.documents;
  const statuses = [...selected.map((i) => statusOf(i, documents)), ...selectedFns.map((f) => statusOf(f, documents))];
  if (names.length > 0) return names.map((n) => statuses.find((x) => x.index === n) as DatumObject);
  return statuses.sort((x, y) => ((x.index as string) < (y.index as string) ? -1 : 1));
}

async function tableAdmin(ev: Evaluator, node: TermNode, env: Env | null): Promise<Value> {
  const a = node.args;
  let db = ev.defaultDb;
  let rest = a;
  if (a.length > 0) {
    const first = await ev.eval(a[0] as Node, env);
    // One argument is the name (RethinkDB reads it as a datum): `db.tableDrop()` is a type error.
    if (first instanceof DbRef && a.length === 1 && node.type !== T.TABLE_LIST) expectType(first, 'DATUM');
    if (first instanceof DbRef) {
      db = first.name;
      rest = a.slice(1);
    } else if (node.type === T.TABLE_LIST) {
      expectType(first, 'DATABASE');
    }
  }
  const catalog = ev.deps.catalog;
  if (node.type === T.TABLE_LIST) {
    catalog.requireDb(db);
    // As RethinkDB: system tables whose names start with `_` are there but not listed.
    if (db === SYSTEM_DB) return SYSTEM_TABLES.filter((n) => !n.startsWith('_'));
    return catalog.listTables(db);
  }
  if (rest.length !== 1) throw queryLogic(`Expected 1 argument but found ${rest.length}.`);
  const name = checkName('Table', await ev.evalDatum(rest[0] as Node, env));
  catalog.requireDb(db);
  if (db === SYSTEM_DB)
    throw opFailed(
      node.type === T.TABLE_CREATE
        ? `Database \`${SYSTEM_DB}\` is special; you can't create new tables in it.`
        : `Database \`${SYSTEM_DB}\` is special; you can't drop tables in it.`,
    );
  const engineName = catalog.engineName(db, name);
  if (isHiddenTable(engineName))
    throw queryLogic(`Table name \`${name}\` invalid (names starting with \`_wharf_\` are Wharf's own).`);
  const full = { fullName: `${db}.${name}` };
  if (node.type === T.TABLE_CREATE) {
    const pk = (await ev.optDatum(node, 'primary_key', env)) ?? 'id';
    const durability = await ev.optDatum(node, 'durability', env);
    if (durability !== undefined && durability !== 'hard' && durability !== 'soft')
      throw queryLogic(
        `Durability option \`${typeof durability === 'string' ? durability : JSON.stringify(durability)}\` unrecognized (options are "hard" and "soft").`,
      );
    if (typeof pk !== 'string' || pk.length === 0) throw queryLogic('primary_key must be a non-empty string.');
    ev.deps.access?.require('config', db);
    try {
      await ev.deps.db.createTable(engineName, { primaryKey: pk });
    } catch (err) {
      throw ev.engineError(err, full);
    } finally {
      catalog.afterCreateOrDrop(db);
    }
    const ref = new TableRef(db, name, engineName, pk, ev.deps.db.table(engineName));
    await publishTableChange(ev, null, { config: ev.tableConfig(ref), status: tableStatusOf(ev, ref) });
    return { config_changes: [{ new_val: ev.tableConfig(ref), old_val: null }], tables_created: 1 };
  }
  const info = catalog.tableInfo(engineName);
  if (!info) throw opFailed(`Table \`${db}.${name}\` does not exist.`);
  const ref = new TableRef(db, name, engineName, info.primaryKey, ev.deps.db.table(engineName));
  ev.deps.access?.require('config', db, name);
  try {
    await ev.deps.db.dropTable(engineName);
    await ev.deps.catalog.functionIndexes.dropTable(engineName);
    await ev.deps.system?.users.forget(db, name);
    await ev.deps.catalog.writeHooks.dropTable(engineName);
  } catch (err) {
    throw ev.engineError(err, full);
  } finally {
    catalog.invalidate();
  }
  await publishTableChange(ev, { config: ev.tableConfig(ref), status: tableStatusOf(ev, ref) }, null);
  return { config_changes: [{ new_val: null, old_val: ev.tableConfig(ref) }], tables_dropped: 1 };
}

/** BETWEEN's `left_bound` and `right_bound` (default closed, open), checked; also read by changefeeds. */
export async function betweenBoundOptargs(
  ev: Evaluator,
  node: TermNode,
  env: Env | null,
): Promise<{ leftBound: 'open' | 'closed'; rightBound: 'open' | 'closed' }> {
  const leftBound = (await ev.optDatum(node, 'left_bound', env)) ?? 'closed';
  const rightBound = (await ev.optDatum(node, 'right_bound', env)) ?? 'open';
  for (const [name, v] of [
    ['left_bound', leftBound],
    ['right_bound', rightBound],
  ] as const) {
    if (v !== 'open' && v !== 'closed')
      throw queryLogic(`Expected \`open\` or \`closed\` for optarg \`${name}\` (got \`${JSON.stringify(v)}\`).`);
  }
  return { leftBound: leftBound as 'open' | 'closed', rightBound: rightBound as 'open' | 'closed' };
}

/** The slices BETWEEN made (a second BETWEEN on one is RethinkDB's error). */
const BETWEEN_SLICES = new WeakSet<Seq>();

async function between(ev: Evaluator, node: TermNode, env: Env | null): Promise<Value> {
  const out = await betweenRows(ev, node, env);
  if (out instanceof Seq) {
    out.slice = true;
    BETWEEN_SLICES.add(out);
  }
  return out;
}

async function betweenRows(ev: Evaluator, node: TermNode, env: Env | null): Promise<Value> {
  const a = node.args;
  const t = await ev.eval(a[0] as Node, env);
  if (t instanceof Seq && BETWEEN_SLICES.has(t))
    throw queryLogic('Cannot perform multiple BETWEENs on the same table.');
  if (!(t instanceof TableRef)) expectType(t, 'TABLE_SLICE');
  const index = await ev.secondaryIndex(node, t, env);
  const lower = await ev.eval(a[1] as Node, env);
  const upper = await ev.eval(a[2] as Node, env);
  if (lower === null || upper === null)
    throw queryLogic('Cannot use `null` in BETWEEN, use `r.minval` or `r.maxval` to denote unboundedness.');
  const { leftBound, rightBound } = await betweenBoundOptargs(ev, node, env);
  if (index !== null) {
    const src = await ev.indexSource(t, index);
    if (lower === Bound.MAX || upper === Bound.MIN) return Seq.fromArray([], t);
    const loD = lower === Bound.MIN ? null : await ev.datum(lower);
    const hiD = upper === Bound.MAX ? null : await ev.datum(upper);
    if ((loD === null && lower !== Bound.MIN) || (hiD === null && upper !== Bound.MAX))
      throw queryLogic('Cannot use `null` in BETWEEN, use `r.minval` or `r.maxval` to denote unboundedness.');
    if (src.kind === 'function' || !isScalar(loD) || !isScalar(hiD)) {
      const entries = (await ev.indexEntries(t, src)).filter((e) => {
        if (loD !== null) {
          const c = compareDatums(e.value, loD);
          if (c < 0 || (c === 0 && leftBound === 'open')) return false;
        }
        if (hiD !== null) {
          const c = compareDatums(e.value, hiD);
          if (c > 0 || (c === 0 && rightBound === 'open')) return false;
        }
        return true;
      });
      return Seq.fromArray(
        sortEntries(entries, false).map((e) => e.row),
        t,
      );
    }
    const lo = loD === null ? null : indexValue(loD);
    const hi = hiD === null ? null : indexValue(hiD);
    return ev.indexSeq(t, index, lo, hi, {
      leftBound: leftBound as 'open' | 'closed',
      rightBound: rightBound as 'open' | 'closed',
    });
  }
  const bounds: ScanOptions = {};
  if (lower !== Bound.MIN) {
    if (lower === Bound.MAX) return Seq.fromArray([], t);
    const k = ev.primaryKeyOf(await ev.datum(lower));
    if (leftBound === 'closed') bounds.gte = k;
    else bounds.gt = k;
  }
  if (upper !== Bound.MAX) {
    if (upper === Bound.MIN) return Seq.fromArray([], t);
    const k = ev.primaryKeyOf(await ev.datum(upper));
    if (rightBound === 'closed') bounds.lte = k;
    else bounds.lt = k;
  }
  return ev.tableSeq(t, bounds);
}

/** Values the engine's indexes hold (anything else is answered by function-indexes.ts). */
function isScalar(v: Datum): boolean {
  return v === null || typeof v === 'string' || typeof v === 'boolean' || typeof v === 'number';
}

/** A table, or every table of a database (for reconfigure and rebalance). */
async function tablesOf(ev: Evaluator, v: Value): Promise<TableRef[]> {
  if (v instanceof TableRef) return [v];
  if (v instanceof DbRef) {
    ev.deps.catalog.requireDb(v.name);
    return ev.deps.catalog.listTables(v.name).map((name) => ev.tableRef(v.name, name));
  }
  return expectType(v, 'TABLE');
}

const tableStatus = tableStatusOf;

/** RethinkDB's refusal of configuration terms on the system tables. */
function notSystem(t: TableRef, what: string): void {
  if (t.db === SYSTEM_DB) throw opFailed(`Database \`${SYSTEM_DB}\` is special; ${what}`);
}

/**
 * RECONFIGURE on a server of one: the arguments are checked as RethinkDB checks them (its
 * texts), and only a layout this server can hold (one replica on the `default` tag) is
 * accepted; the table's data does not move, so the answer reports the configuration as is.
 */
async function reconfigure(ev: Evaluator, node: TermNode, env: Env | null): Promise<Value> {
  const target = await ev.eval(node.args[0] as Node, env);
  const opt = async (name: string): Promise<Datum | undefined> => ev.optDatum(node, name, env);
  const repair = await opt('emergency_repair');
  const layoutGiven = ['shards', 'replicas', 'primary_replica_tag', 'nonvoting_replica_tags'].some(
    (k) => node.optargs[k] !== undefined,
  );
  const dryRun = (await opt('dry_run')) ?? false;
  if (typeof dryRun !== 'boolean') throw typeError('BOOL', dryRun);
  if (repair !== undefined && repair !== null) {
    if (target instanceof DbRef)
      throw queryLogic(
        "Can't emergency repair an entire database at once; instead you should run `reconfigure()` on each table individually.",
      );
    if (repair !== 'unsafe_rollback' && repair !== 'unsafe_rollback_or_erase')
      throw queryLogic('`emergency_repair` should be "unsafe_rollback" or "unsafe_rollback_or_erase"');
    if (layoutGiven) throw queryLogic("In emergency repair mode, you can't specify shards, replicas, etc.");
    await tablesOf(ev, target);
    throw opFailed("This table doesn't need to be repaired.");
  }
  const shards = await opt('shards');
  if (shards === undefined) throw queryLogic('Missing required argument `shards`.');
  if (typeof shards !== 'number') throw typeError('NUMBER', shards);
  if (shards < 1) throw queryLogic('Every table must have at least one shard.');
  const replicas = await opt('replicas');
  if (replicas === undefined) throw queryLogic('Missing required argument `replicas`.');
  const primaryTag = await opt('primary_replica_tag');
  const nonvoting = await opt('nonvoting_replica_tags');
  const counts = new Map<string, number>();
  if (typeof replicas === 'number') {
    if (primaryTag !== undefined)
      throw queryLogic('`replicas` must be an OBJECT if `primary_replica_tag` is specified.');
    if (nonvoting !== undefined)
      throw queryLogic('`replicas` must be an OBJECT if `nonvoting_replica_tags` is specified.');
    counts.set('default', replicas);
  } else if (replicas !== null && typeof replicas === 'object' && !Array.isArray(replicas)) {
    if (primaryTag === undefined)
      throw queryLogic('`primary_replica_tag` must be specified when `replicas` is an OBJECT.');
    for (const [tag, n] of Object.entries(replicas)) {
      if (typeof n !== 'number') throw typeError('NUMBER', n as Datum);
      if (n < 0) throw queryLogic("Can't have a negative number of replicas");
      counts.set(tag, n);
    }
    if (typeof primaryTag !== 'string') throw typeError('STRING', primaryTag);
    if (!counts.has(primaryTag))
      throw opFailed(
        `Can't use server tag \`${primaryTag}\` for primary replicas because you specified no replicas in server tag \`${primaryTag}\`.`,
      );
    for (const tag of Array.isArray(nonvoting) ? nonvoting : []) {
      if (typeof tag === 'string' && !counts.has(tag))
        throw opFailed(
          `You specified that the replicas in server tag \`${tag}\` should be non-voting, but you didn't specify a number of replicas in server tag \`${tag}\`.`,
        );
    }
  } else throw typeError('NUMBER', replicas);
  let total = 0;
  for (const n of counts.values()) total += n;
  if (total < 1)
    throw opFailed(
      'You must set `replicas` to at least one. `replicas` includes the primary replica; if there are zero replicas, there is nowhere to put the data.',
    );
  for (const [tag, n] of counts) {
    const servers = tag === 'default' ? 1 : 0;
    if (n > servers)
      throw opFailed(
        `Can't put ${n} replicas on servers with the tag \`${tag}\` because there are only ${servers} servers with the tag \`${tag}\`. It's impossible to have more replicas of the data than there are servers.`,
      );
  }
  const tables = await tablesOf(ev, target);
  for (const t of tables) {
    notSystem(t, "you can't configure the tables in it.");
    ev.deps.access?.require('config', t.db, t.name);
  }
  if (!dryRun) {
    for (const t of tables) {
      const now = { config: await tableConfigOf(ev, t), status: tableStatusOf(ev, t) };
      await publishTableChange(ev, now, now);
    }
  }
  return {
    reconfigured: dryRun ? 0 : tables.length,
    config_changes: tables.map((t) => ({ old_val: ev.tableConfig(t), new_val: ev.tableConfig(t) })),
    status_changes: tables.map((t) => ({ old_val: tableStatus(ev, t), new_val: tableStatus(ev, t) })),
  };
}
