/**
 * Databases, tables, indexes and selections by key (RethinkDB's db_table.cc, sindex.cc): db,
 * table, get, get_all, between, db_create/drop/list, table_create/drop/list, index_*, config,
 * status, wait.
 */
import type { IndexInfo, IndexValue, Key, ScanOptions } from '@wharf/engine';
import { opFailed, queryLogic } from '../../errors.js';
import { checkName, nameUuid, SYSTEM_DB } from '../catalog.js';
import type { Node, TermNode } from '../compiler.js';
import { type Datum, type DatumObject, datumTypeName } from '../datum.js';
import type { Evaluator } from '../evaluator.js';
import { checkIndexName, indexFieldPath, indexStatus, indexValue, selectIndexes } from '../indexes.js';
import { T } from '../names.js';
import { INF, type TermDef, type TermFamily } from '../registry.js';
import { Bound, DbRef, type Env, expectType, Seq, SingleSelection, TableRef, type Value } from '../values.js';

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
      return ev.tableRef(db, checkName('Table', await ev.evalDatum(nameNode, env)));
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
      ev.deps.catalog.createDb(name);
      return { config_changes: [{ new_val: { id: nameUuid(`db:${name}`), name }, old_val: null }], dbs_created: 1 };
    },
  },
  [T.DB_DROP]: {
    min: 1,
    max: 1,
    eval: async (ev, node, env) => {
      const name = checkName('Database', await ev.evalDatum(node.args[0] as Node, env));
      let tables: number;
      try {
        tables = await ev.deps.catalog.dropDb(name);
      } catch (err) {
        throw ev.engineError(err);
      }
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
  [T.CONFIG]: {
    min: 1,
    max: 1,
    eval: async (ev, node, env) => {
      const t = await ev.eval(node.args[0] as Node, env);
      if (t instanceof DbRef) {
        ev.deps.catalog.requireDb(t.name);
        return { id: nameUuid(`db:${t.name}`), name: t.name };
      }
      if (!(t instanceof TableRef)) expectType(t, 'TABLE');
      const config = ev.tableConfig(t);
      try {
        config.indexes = (await t.engine.listIndexes()).map((i) => i.name).sort();
      } catch (err) {
        throw ev.engineError(err, t);
      }
      return config;
    },
  },
  [T.STATUS]: {
    min: 1,
    max: 1,
    eval: async (ev, node, env) => {
      const t = await ev.eval(node.args[0] as Node, env);
      if (!(t instanceof TableRef)) expectType(t, 'TABLE');
      const server = ev.deps.serverName;
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
      return { ready: 1 };
    },
  },
};

async function getAll(ev: Evaluator, node: TermNode, env: Env | null): Promise<Value> {
  const a = node.args;
  const t = await ev.eval(a[0] as Node, env);
  if (!(t instanceof TableRef)) expectType(t, 'TABLE');
  const index = await ev.secondaryIndex(node, t, env);
  if (index !== null) {
    const api = t.engine;
    const values: IndexValue[] = [];
    for (const n of a.slice(1)) values.push(indexValue(await ev.evalDatum(n, env)));
    return Seq.fromStream(async function* () {
      if (values.length === 0) return;
      let rows: object[];
      try {
        rows = await api.getAll(index, values);
      } catch (err) {
        throw ev.engineError(err, t, index);
      }
      for (const r of rows) yield r as Datum;
    }, t);
  }
  const keys: Key[] = [];
  for (const n of a.slice(1)) keys.push(ev.primaryKeyOf(await ev.evalDatum(n, env)));
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
async function indexAdmin(ev: Evaluator, node: TermNode, env: Env | null): Promise<Value> {
  const a = node.args;
  const t = await ev.eval(a[0] as Node, env);
  if (!(t instanceof TableRef)) expectType(t, 'TABLE');
  const api = t.engine;
  switch (node.type) {
    case T.INDEX_CREATE: {
      const name = checkIndexName(await ev.evalDatum(a[1] as Node, env));
      const field = indexFieldPath(a[2], name);
      const multi = (await ev.optDatum(node, 'multi', env)) ?? false;
      if (typeof multi !== 'boolean') throw queryLogic(`Expected type BOOL but found ${datumTypeName(multi)}.`);
      const geo = (await ev.optDatum(node, 'geo', env)) ?? false;
      if (geo !== false) throw queryLogic('Wharf does not support geospatial indexes (geo: true).');
      try {
        await ev.deps.trackWrite(api.createIndex(name, field, { multi }));
      } catch (err) {
        throw ev.engineError(err, t, name);
      }
      return { created: 1 };
    }
    case T.INDEX_DROP: {
      const name = checkIndexName(await ev.evalDatum(a[1] as Node, env));
      try {
        await ev.deps.trackWrite(api.dropIndex(name));
      } catch (err) {
        throw ev.engineError(err, t, name);
      }
      return { dropped: 1 };
    }
  }
  const names: string[] = [];
  for (const n of a.slice(1)) {
    const v = await ev.evalDatum(n, env);
    for (const x of Array.isArray(v) ? v : [v]) {
      if (typeof x !== 'string') throw queryLogic(`Expected type STRING but found ${datumTypeName(x)}.`);
      names.push(x);
    }
  }
  let all: IndexInfo[];
  try {
    all = await api.listIndexes();
  } catch (err) {
    throw ev.engineError(err, t);
  }
  if (node.type === T.INDEX_LIST) return all.map((i) => i.name).sort();
  let selected = selectIndexes(all, names, t);
  if (node.type === T.INDEX_WAIT && selected.length > 0) {
    try {
      const waited = await api.indexWait(selected.map((i) => i.name));
      selected = selected.map((i) => waited.find((w) => w.name === i.name) ?? { ...i, ready: true });
    } catch (err) {
      throw ev.engineError(err, t);
    }
  }
  const documents = ev.deps.catalog.tableInfo(t.engineName)?.documents;
  return selected.map((i) => indexStatus(i, documents));
}

async function tableAdmin(ev: Evaluator, node: TermNode, env: Env | null): Promise<Value> {
  const a = node.args;
  let db = ev.defaultDb;
  let rest = a;
  if (a.length > 0) {
    const first = await ev.eval(a[0] as Node, env);
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
    return catalog.listTables(db);
  }
  if (rest.length !== 1) throw queryLogic(`Expected 1 argument but found ${rest.length}.`);
  const name = checkName('Table', await ev.evalDatum(rest[0] as Node, env));
  catalog.requireDb(db);
  if (db === SYSTEM_DB) throw opFailed(`Database \`${SYSTEM_DB}\` is special; you can't create or drop tables in it.`);
  const engineName = catalog.engineName(db, name);
  const full = { fullName: `${db}.${name}` };
  if (node.type === T.TABLE_CREATE) {
    const pk = (await ev.optDatum(node, 'primary_key', env)) ?? 'id';
    if (typeof pk !== 'string' || pk.length === 0) throw queryLogic('primary_key must be a non-empty string.');
    try {
      await ev.deps.db.createTable(engineName, { primaryKey: pk });
    } catch (err) {
      throw ev.engineError(err, full);
    } finally {
      catalog.afterCreateOrDrop(db);
    }
    const ref = new TableRef(db, name, engineName, pk, ev.deps.db.table(engineName));
    return { config_changes: [{ new_val: ev.tableConfig(ref), old_val: null }], tables_created: 1 };
  }
  const info = catalog.tableInfo(engineName);
  if (!info) throw opFailed(`Table \`${db}.${name}\` does not exist.`);
  const ref = new TableRef(db, name, engineName, info.primaryKey, ev.deps.db.table(engineName));
  try {
    await ev.deps.db.dropTable(engineName);
  } catch (err) {
    throw ev.engineError(err, full);
  } finally {
    catalog.invalidate();
  }
  return { config_changes: [{ new_val: null, old_val: ev.tableConfig(ref) }], tables_dropped: 1 };
}

async function between(ev: Evaluator, node: TermNode, env: Env | null): Promise<Value> {
  const a = node.args;
  const t = await ev.eval(a[0] as Node, env);
  if (!(t instanceof TableRef)) expectType(t, 'TABLE_SLICE');
  const index = await ev.secondaryIndex(node, t, env);
  const lower = await ev.eval(a[1] as Node, env);
  const upper = await ev.eval(a[2] as Node, env);
  const leftBound = (await ev.optDatum(node, 'left_bound', env)) ?? 'closed';
  const rightBound = (await ev.optDatum(node, 'right_bound', env)) ?? 'open';
  for (const [name, v] of [
    ['left_bound', leftBound],
    ['right_bound', rightBound],
  ] as const) {
    if (v !== 'open' && v !== 'closed')
      throw queryLogic(`Expected \`open\` or \`closed\` for optarg \`${name}\` (got \`${JSON.stringify(v)}\`).`);
  }
  if (index !== null) {
    if (lower === Bound.MAX || upper === Bound.MIN) return Seq.fromArray([], t);
    const lo = lower === Bound.MIN ? null : indexValue(await ev.datum(lower));
    const hi = upper === Bound.MAX ? null : indexValue(await ev.datum(upper));
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
