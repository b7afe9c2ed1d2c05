/**
 * The tables of the `rethinkdb` database (RethinkDB's artificial tables,
 * `src/clustering/administration/**`), as far as they mean something for one Wharf server.
 * Each is computed when read from the catalog, the user store and the server's counters; none
 * is stored as such. A SystemTable stands where an engine Table would (TableRef.engine), so
 * every term reads and writes it as any table; a write goes row by row through the table's
 * `write` (RethinkDB's write_row), whose refusal is that row's error in the write result.
 * Changefeeds on them see the writes made through them (SystemFeeds).
 *
 *   users            {id, password: bool}; insert/update sets a password, delete removes a user
 *   permissions      {id: [user, db?, table?], user, database?, table?, permissions}; writable
 *   db_config        {id, name}; insert creates a database, delete drops one
 *   table_config     table.config(); insert creates a table, delete drops one, no other change
 *   table_status     table.status(); read-only
 *   server_config    {id, name, cache_size_mb, tags}; read-only (the options decide)
 *   server_status    {id, name, network, process}; read-only
 *   cluster_config   {id: 'heartbeat', heartbeat_timeout_secs}; read-only (no cluster)
 *   stats            cluster and server query counters; read-only
 *   jobs             the driver-port queries running (cursors and feeds until done), index builds; read-only
 *   current_issues, logs   empty; read-only
 *   _debug_scratch   any documents, in memory, admin only
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { ChangeFeed, type Key, type ScanOptions, type WriteResult } from '@wharf/engine';
import { opFailed } from '../errors.js';
import { ADMIN, type Permissions, permissionsDatum, type UserStore } from '../users.js';
import { checkName, nameUuid, SYSTEM_DB } from './catalog.js';
import { compareDatums, type Datum, type DatumObject, datumsEqual, isPlainObject, makeTime, pretty } from './datum.js';
import type { Evaluator } from './evaluator.js';
import { deepMerge } from './objects.js';
import { TableRef } from './values.js';

/** What the system tables read besides the evaluator: counters and process facts. */
export interface SystemInfo {
  users: UserStore;
  /** `_debug_scratch`'s documents (in memory: RethinkDB's is too). */
  scratch: Map<string, DatumObject>;
  /** Changefeeds on system tables. */
  feeds: SystemFeeds;
  startedAt: number;
  ports(): { http: number | null; driver: number | null };
  /**
   * Driver connections now; driver-port queries and documents written (every port) since start,
   * and their rates over the last second.
   */
  counters(): { connections: number; queries: number; queriesPerSec: number; written: number; writtenPerSec: number };
  /** The driver-port queries running now (one answered by a stream: until it is done or closed). */
  queries(): RunningQuery[];
}

export interface RunningQuery {
  id: string;
  startedAt: number;
  address: string;
  port: number;
  user: string;
  /** The query's term as the driver sent it (serialized only when `jobs` is read). */
  term: unknown;
}

export const SYSTEM_TABLES = [
  '_debug_scratch',
  'cluster_config',
  'current_issues',
  'db_config',
  'jobs',
  'logs',
  'permissions',
  'server_config',
  'server_status',
  'stats',
  'table_config',
  'table_status',
  'users',
] as const;

type IdentifierFormat = 'name' | 'uuid';

/** A row write refused: the message is that row's error in the write result. */
class RowError extends Error {}

interface Spec {
  rows(): Promise<DatumObject[]>;
  /** Write one row (new null: delete it). `generated`: the key was made up by the insert. */
  write?(key: Datum, old: DatumObject | null, next: DatumObject | null, generated: boolean): Promise<void>;
  /** RethinkDB's text when a table takes no writes at all. */
  readOnly?: string;
  adminOnly?: boolean;
}

/** The TableRef of system table `name`, or undefined when `rethinkdb` has no such table. */
export function systemTableRef(ev: Evaluator, name: string, format: IdentifierFormat = 'name'): TableRef | undefined {
  const info = ev.deps.system;
  if (info === undefined || !(SYSTEM_TABLES as readonly string[]).includes(name)) return undefined;
  const spec = specOf(ev, info, name, format);
  const table = new SystemTable(name, spec, ev);
  return new TableRef(SYSTEM_DB, name, `${SYSTEM_DB}.${name}`, 'id', table as never);
}

/** A row key as `_debug_scratch` keys its map (ids are strings, numbers or arrays). */
const keyText = (k: Datum): string => JSON.stringify(k);

/**
 * A system table behind the engine Table API the evaluator uses (get, getMany, scan, count,
 * insert, delete, listIndexes…): rows in primary-key order, computed on each read.
 */
class SystemTable {
  readonly #name: string;
  readonly #spec: Spec;
  readonly #ev: Evaluator;

  constructor(name: string, spec: Spec, ev: Evaluator) {
    this.#name = name;
    this.#spec = spec;
    this.#ev = ev;
  }

  get #fullName(): string {
    return `${SYSTEM_DB}.${this.#name}`;
  }

  #guard(): void {
    if (this.#spec.adminOnly) this.#ev.deps.access?.requireAdmin();
  }

  async #rows(): Promise<DatumObject[]> {
    this.#guard();
    const rows = await this.#spec.rows();
    return rows.sort((a, b) => compareDatums(a.id as Datum, b.id as Datum));
  }

  async get(key: Key): Promise<DatumObject | null> {
    return (await this.#rows()).find((r) => datumsEqual(r.id as Datum, key as Datum)) ?? null;
  }

  async getMany(keys: readonly Key[]): Promise<(DatumObject | null)[]> {
    const rows = await this.#rows();
    return keys.map((k) => rows.find((r) => datumsEqual(r.id as Datum, k as Datum)) ?? null);
  }

  async scan(opts: ScanOptions = {}): Promise<DatumObject[]> {
    let rows = (await this.#rows()).filter((r) => {
      const id = r.id as Datum;
      if (opts.gt !== undefined && compareDatums(id, opts.gt as Datum) <= 0) return false;
      if (opts.gte !== undefined && compareDatums(id, opts.gte as Datum) < 0) return false;
      if (opts.lt !== undefined && compareDatums(id, opts.lt as Datum) >= 0) return false;
      if (opts.lte !== undefined && compareDatums(id, opts.lte as Datum) > 0) return false;
      return true;
    });
    if (opts.reverse) rows = rows.reverse();
    return opts.limit === undefined ? rows : rows.slice(0, opts.limit);
  }

  async count(): Promise<number> {
    return (await this.#rows()).length;
  }

  async listIndexes(): Promise<never[]> {
    return [];
  }

  async indexWait(): Promise<never[]> {
    return [];
  }

  async getAll(index: string): Promise<never> {
    throw opFailed(`Index \`${index}\` was not found on table \`${this.#fullName}\`.`);
  }

  async between(index: string): Promise<never> {
    throw opFailed(`Index \`${index}\` was not found on table \`${this.#fullName}\`.`);
  }

  async createIndex(): Promise<never> {
    throw opFailed(`Database \`${SYSTEM_DB}\` is special; you can't create secondary indexes on the tables in it.`);
  }

  async dropIndex(name: string): Promise<never> {
    throw opFailed(`Index \`${name}\` does not exist on table \`${this.#fullName}\`.`);
  }

  /** The table's changes made through it from now on (writes to what it shows otherwise are not seen). */
  changes(opts: { queueSize?: number } = {}): ChangeFeed<DatumObject> {
    this.#guard();
    const feeds = this.#ev.deps.system?.feeds;
    if (feeds === undefined) throw opFailed(`Table \`${this.#fullName}\` does not exist.`);
    return feeds.open(this.#name, opts.queueSize ?? 100_000);
  }

  /** Tell the table's feeds of a row written: as read back, so a feed shows what a read shows. */
  async #published(key: Datum, old: DatumObject | null): Promise<void> {
    const feeds = this.#ev.deps.system?.feeds;
    if (feeds === undefined || !feeds.watched(this.#name)) return;
    const now = (await this.#spec.rows()).find((r) => datumsEqual(r.id as Datum, key)) ?? null;
    feeds.publish(this.#name, key, old, now);
  }

  async insertJsonArray(
    text: string | Buffer,
    opts: { conflict?: 'error' | 'replace' | 'update' },
  ): Promise<WriteResult> {
    const docs = JSON.parse(text.toString()) as DatumObject[];
    return this.insert(docs, opts);
  }

  async insert(
    docs: DatumObject | readonly DatumObject[],
    opts: { conflict?: 'error' | 'replace' | 'update' } = {},
  ): Promise<WriteResult> {
    this.#guard();
    const result = emptyResult();
    const list = Array.isArray(docs) ? docs : [docs as DatumObject];
    for (let i = 0; i < list.length; i++) {
      const doc = list[i] as DatumObject;
      let key = doc.id as Datum | undefined;
      let generated = false;
      let next = doc;
      if (key === undefined) {
        key = randomUUID();
        generated = true;
        next = { ...doc, id: key };
        result.generated_keys = [...(result.generated_keys ?? []), key];
      }
      const old = (await this.#rows()).find((r) => datumsEqual(r.id as Datum, key)) ?? null;
      if (old !== null && (opts.conflict ?? 'error') === 'error') {
        fail(result, i, `Duplicate primary key \`id\`:\n${pretty(old)}\n${pretty(next)}`);
        continue;
      }
      if (old !== null && opts.conflict === 'update') next = deepMerge(old, doc) as DatumObject;
      if (old !== null && datumsEqual(old, next)) {
        result.unchanged++;
        continue;
      }
      if (!(await this.#writeRow(result, i, key, old, next, generated))) continue;
      if (old === null) result.inserted++;
      else result.replaced++;
    }
    return result;
  }

  async delete(keys: Key | readonly Key[]): Promise<WriteResult> {
    this.#guard();
    const result = emptyResult();
    const list = (Array.isArray(keys) ? keys : [keys]) as Datum[];
    for (let i = 0; i < list.length; i++) {
      const key = list[i] as Datum;
      const old = (await this.#rows()).find((r) => datumsEqual(r.id as Datum, key)) ?? null;
      if (old === null) {
        result.skipped++;
        continue;
      }
      if (!(await this.#writeRow(result, i, key, old, null, false))) continue;
      result.deleted++;
    }
    return result;
  }

  /** Writes one row and publishes its change; a row's refusal is counted on row `i` (false). */
  async #writeRow(
    result: WriteResult,
    i: number,
    key: Datum,
    old: DatumObject | null,
    next: DatumObject | null,
    generated: boolean,
  ): Promise<boolean> {
    try {
      await this.#write(key, old, next, generated);
    } catch (err) {
      if (!(err instanceof RowError)) throw err;
      fail(result, i, err.message);
      return false;
    }
    await this.#published(key, old);
    return true;
  }

  async #write(key: Datum, old: DatumObject | null, next: DatumObject | null, generated: boolean): Promise<void> {
    const { write, readOnly } = this.#spec;
    if (write === undefined)
      throw new RowError(readOnly ?? `It's illegal to write to the \`${this.#fullName}\` table.`);
    await write(key, old, next, generated);
  }
}

interface Subscriber {
  changes: { key: Datum; old: DatumObject | null; new: DatumObject | null }[];
  skipped: number;
  capacity: number;
  onReady: () => void;
}

/**
 * Changefeeds on system tables, in memory: the engine's ChangeFeed over a queue per subscriber,
 * bounded as the engine's are (past `capacity` changes are dropped and counted as skipped).
 */
export class SystemFeeds {
  readonly #subscribers = new Map<string, Set<Subscriber>>();

  open(table: string, capacity: number): ChangeFeed<DatumObject> {
    return new ChangeFeed<DatumObject>((onReady) => {
      const sub: Subscriber = { changes: [], skipped: 0, capacity, onReady };
      let set = this.#subscribers.get(table);
      if (set === undefined) this.#subscribers.set(table, (set = new Set()));
      set.add(sub);
      return {
        take: (max: number) => {
          const changes = sub.changes.splice(0, max);
          const skipped = sub.changes.length === 0 ? sub.skipped : 0;
          if (sub.changes.length === 0) sub.skipped = 0;
          return JSON.stringify({ skipped, closed: false, changes });
        },
        close: () => {
          set.delete(sub);
        },
      };
    });
  }

  watched(table: string): boolean {
    return (this.#subscribers.get(table)?.size ?? 0) > 0;
  }

  publish(table: string, key: Datum, old: DatumObject | null, now: DatumObject | null): void {
    for (const sub of this.#subscribers.get(table) ?? []) {
      if (sub.changes.length >= sub.capacity) sub.skipped++;
      else sub.changes.push({ key, old, new: now });
      sub.onReady();
    }
  }
}

function emptyResult(): WriteResult {
  return { inserted: 0, replaced: 0, unchanged: 0, deleted: 0, skipped: 0, errors: 0 };
}

function fail(result: WriteResult, index: number, message: string): void {
  result.errors++;
  result.first_error ??= message;
  (result.document_errors ??= []).push({ index, message });
}

/** The id of a database as the system tables show it. */
export const dbUuid = (db: string): string => nameUuid(`db:${db}`);

function specOf(ev: Evaluator, info: SystemInfo, name: string, format: IdentifierFormat): Spec {
  const server = ev.deps.serverName;
  const serverId = ev.deps.serverId;
  const serverRef = format === 'uuid' ? serverId : server;
  const dbRef = (db: string): string => (format === 'uuid' ? dbUuid(db) : db);
  const catalog = ev.deps.catalog;
  const userTables = (): TableRef[] => {
    const out: TableRef[] = [];
    for (const db of catalog.listDbs())
      if (db !== SYSTEM_DB) for (const t of catalog.listTables(db)) out.push(ev.tableRef(db, t));
    return out;
  };
  switch (name) {
    case 'users':
      return {
        rows: async () => [
          { id: ADMIN, password: info.users.hasPassword(ADMIN) },
          ...info.users.list().map((u) => ({ id: u.id, password: u.credentials !== null })),
        ],
        write: (key, old, next, generated) => writeUser(info.users, key, old, next, generated),
      };
    case 'permissions':
      return {
        rows: async () => permissionRows(ev, info.users, format),
        write: (key, _old, next, generated) => writePermissions(ev, info.users, key, next, generated, format),
      };
    case 'db_config':
      return {
        rows: async () =>
          catalog
            .listDbs()
            .filter((d) => d !== SYSTEM_DB)
            .map((d) => ({ id: dbUuid(d), name: d })),
        write: async (_key, old, next, generated) => {
          if (old === null && next !== null) {
            if (!generated)
              throw new RowError(
                'If you want to create a new database by inserting into `rethinkdb.db_config`, you must use an auto-generated primary key.',
              );
            checkRow(next, ['id', 'name']);
            const dbName = rowName(next, 'name', 'database');
            try {
              catalog.createDb(dbName);
            } catch (err) {
              throw new RowError((err as Error).message);
            }
            return;
          }
          if (old !== null && next === null) {
            const dbName = old.name as string;
            ev.deps.access?.require('config', dbName);
            await catalog.dropDb(dbName);
            await info.users.forget(dbName);
            return;
          }
          throw new RowError(
            "Wharf can't rename a database (its tables are stored under their full names); create a new one and copy the tables.",
          );
        },
      };
    case 'table_config':
      return {
        rows: async () => {
          const out: DatumObject[] = [];
          for (const t of userTables()) {
            const c = await tableConfigOf(ev, t);
            if (format === 'uuid') {
              c.db = dbUuid(t.db);
              c.shards = [{ nonvoting_replicas: [], primary_replica: serverId, replicas: [serverId] }];
            }
            out.push(c);
          }
          return out;
        },
        write: async (_key, old, next, generated) => {
          if (old !== null && next === null) {
            const db = format === 'uuid' ? dbNameOf(ev, old.db as string) : (old.db as string);
            ev.deps.access?.require('config', db, old.name as string);
            const engineName = catalog.engineName(db, old.name as string);
            await ev.deps.db.dropTable(engineName);
            await catalog.functionIndexes.dropTable(engineName);
            await info.users.forget(db, old.name as string);
            return;
          }
          if (old === null && next !== null) {
            if (!generated)
              throw new RowError(
                'If you want to create a new table by inserting into `rethinkdb.table_config`, you must let the database generate the primary key automatically.',
              );
            const db = rowName(next, 'db', 'database');
            const table = rowName(next, 'name', 'table');
            const pk = next.primary_key ?? 'id';
            if (typeof pk !== 'string') throw new RowError(`Expected a string for \`primary_key\`, got ${pretty(pk)}.`);
            if (!catalog.dbExists(db)) throw new RowError(`Database \`${db}\` does not exist.`);
            ev.deps.access?.require('config', db);
            try {
              await ev.deps.db.createTable(catalog.engineName(db, table), { primaryKey: pk });
            } catch (err) {
              throw new RowError((err as Error).message);
            }
            return;
          }
          if (old !== null && next !== null && !datumsEqual(old.primary_key as Datum, next.primary_key ?? null))
            throw new RowError("It's illegal to change a table's primary key");
          if (old !== null && next !== null && old.name !== next.name)
            throw new RowError(
              "Wharf can't rename a table: its engine keeps tables by name. Create a table of the new name and copy the rows.",
            );
          throw new RowError(
            "Wharf is a single server: a table's shards, replicas, durability and write acks can't be changed.",
          );
        },
      };
    case 'table_status':
      return {
        rows: async () =>
          userTables().map((t) => {
            const s = tableStatusOf(ev, t);
            if (format === 'uuid') {
              s.db = dbUuid(t.db);
              s.raft_leader = serverId;
              s.shards = [{ primary_replicas: [serverId], replicas: [{ server: serverId, state: 'ready' }] }];
            }
            return s;
          }),
      };
    case 'server_config':
      return {
        rows: async () => [{ id: serverId, name: server, cache_size_mb: 'auto', tags: ['default'] }],
        write: refuseRowChanges(
          "It's illegal to insert new rows into the `rethinkdb.server_config` system table.",
          "It's illegal to delete rows from the `rethinkdb.server_config` system table.",
          "Wharf's server name and cache are its options (`--server-name`, `--memory-budget-mb`); they can't be changed through `rethinkdb.server_config`.",
        ),
      };
    case 'server_status': {
      const ports = info.ports();
      return {
        rows: async () => [
          {
            id: serverId,
            name: server,
            network: {
              canonical_addresses: [{ host: '127.0.0.1', port: ports.driver }],
              cluster_port: null,
              connected_to: {},
              hostname: hostname(),
              http_admin_port: ports.http,
              reql_port: ports.driver,
              time_connected: makeTime(info.startedAt / 1000),
            },
            process: {
              argv: process.argv,
              cache_size_mb: 'auto',
              pid: process.pid,
              time_started: makeTime(info.startedAt / 1000),
              version: 'rethinkdb 2.4.4 (Wharf)',
            },
          },
        ],
      };
    }
    case 'cluster_config':
      return {
        rows: async () => [{ id: 'heartbeat', heartbeat_timeout_secs: 10 }],
        write: refuseRowChanges(
          "It's illegal to insert new rows into the `rethinkdb.cluster_config` table.",
          "It's illegal to delete rows from the `rethinkdb.cluster_config` table.",
          'Wharf is a single server: the heartbeat timeout of `rethinkdb.cluster_config` means nothing here and stays 10.',
        ),
      };
    case 'stats':
      return {
        rows: async () => {
          const c = info.counters();
          const out: DatumObject[] = [
            {
              id: ['cluster'],
              query_engine: {
                client_connections: c.connections,
                clients_active: c.connections,
                queries_per_sec: c.queriesPerSec,
                written_docs_per_sec: c.writtenPerSec,
              },
            },
            {
              id: ['server', serverId],
              server: serverRef,
              query_engine: {
                client_connections: c.connections,
                clients_active: c.connections,
                queries_per_sec: c.queriesPerSec,
                queries_total: c.queries,
                written_docs_per_sec: c.writtenPerSec,
                written_docs_total: c.written,
              },
            },
          ];
          for (const t of userTables())
            out.push({ id: ['table', nameUuid(t.engineName)], db: dbRef(t.db), table: t.name, query_engine: {} });
          return out;
        },
        readOnly: "It's illegal to write to the `rethinkdb.stats` table.",
      };
    case 'current_issues':
      return { rows: async () => [], readOnly: "It's illegal to write to the `rethinkdb.current_issues` table." };
    case 'logs':
      return { rows: async () => [], readOnly: "It's illegal to write to the `rethinkdb.logs` system table." };
    case 'jobs':
      return {
        rows: async () => {
          const now = Date.now();
          const out: DatumObject[] = info.queries().map((q) => ({
            id: ['query', q.id],
            type: 'query',
            duration_sec: (now - q.startedAt) / 1000,
            servers: [serverRef],
            info: { client_address: q.address, client_port: q.port, query: termText(q.term), user: q.user },
          }));
          for (const t of userTables()) {
            let indexes: Awaited<ReturnType<typeof t.engine.listIndexes>>;
            try {
              indexes = await t.engine.listIndexes();
            } catch {
              continue; // dropped meanwhile
            }
            const documents = catalog.tableInfo(t.engineName)?.documents ?? 0;
            for (const i of indexes.filter((x) => !x.ready))
              out.push({
                id: ['index_construction', nameUuid(`${t.engineName}/${i.name}`)],
                type: 'index_construction',
                duration_sec: null,
                servers: [serverRef],
                info: {
                  db: dbRef(t.db),
                  table: format === 'uuid' ? nameUuid(t.engineName) : t.name,
                  index: i.name,
                  progress: documents === 0 ? 0 : Math.min(1, i.indexed / documents),
                },
              });
          }
          return out;
        },
        readOnly: "Wharf can't interrupt a query or an index build through `rethinkdb.jobs`.",
      };
    case '_debug_scratch':
      return {
        adminOnly: true,
        rows: async () => [...info.scratch.values()],
        write: async (key, _old, next) => {
          if (next === null) info.scratch.delete(keyText(key));
          else info.scratch.set(keyText(key), next);
        },
      };
  }
  throw new Error(`no system table ${name}`);
}

/**
 * Tell the feeds on `table_config` and `table_status` of a table's change made by a term
 * (created: old null; dropped: new null; reconfigured: both, as the term's own result says).
 */
export async function publishTableChange(
  ev: Evaluator,
  old: { config: DatumObject; status: DatumObject } | null,
  now: { config: DatumObject; status: DatumObject } | null,
): Promise<void> {
  const feeds = ev.deps.system?.feeds;
  if (feeds === undefined) return;
  const id = (old ?? now)?.config.id as Datum;
  feeds.publish('table_config', id, old?.config ?? null, now?.config ?? null);
  feeds.publish('table_status', id, old?.status ?? null, now?.status ?? null);
}

/** Tell the feeds on `db_config` of a database created (old null) or dropped (new null). */
export function publishDbChange(ev: Evaluator, old: DatumObject | null, now: DatumObject | null): void {
  ev.deps.system?.feeds.publish('db_config', (old ?? now)?.id as Datum, old, now);
}

/** `table.config()`: the same document the CONFIG term answers. */
export async function tableConfigOf(ev: Evaluator, t: TableRef): Promise<DatumObject> {
  const config = ev.tableConfig(t);
  try {
    config.indexes = (await t.engine.listIndexes()).map((i) => i.name).sort();
  } catch (err) {
    throw ev.engineError(err, t);
  }
  return config;
}

/** `table.status()` on a server of one. */
export function tableStatusOf(ev: Evaluator, t: TableRef): DatumObject {
  const server = ev.deps.serverName;
  return {
    db: t.db,
    id: nameUuid(t.engineName),
    name: t.name,
    raft_leader: server,
    shards: [{ primary_replicas: [server], replicas: [{ server, state: 'ready' }] }],
    status: { all_replicas_ready: true, ready_for_outdated_reads: true, ready_for_reads: true, ready_for_writes: true },
  };
}

/** A table whose rows are fixed: RethinkDB's texts for an insert and a delete, Wharf's for a change. */
function refuseRowChanges(insert: string, remove: string, change: string): NonNullable<Spec['write']> {
  return async (_key, old, next) => {
    throw new RowError(old === null ? insert : next === null ? remove : change);
  };
}

function checkRow(row: DatumObject, allowed: string[]): void {
  const extra = Object.keys(row)
    .filter((k) => !allowed.includes(k))
    .sort();
  if (extra.length > 0) throw new RowError(`Unexpected key(s) \`${extra.join('`, `')}\`.`);
}

function rowName(row: DatumObject, field: string, what: string): string {
  const v = row[field];
  if (v === undefined) throw new RowError(`Expected a field named \`${field}\`.`);
  if (typeof v !== 'string') throw new RowError(`Expected a ${what} name; got ${pretty(v)}`);
  try {
    return checkName(what === 'database' ? 'Database' : 'Table', v);
  } catch (err) {
    throw new RowError((err as Error).message);
  }
}

function dbNameOf(ev: Evaluator, uuid: string): string {
  const db = ev.deps.catalog.listDbs().find((d) => dbUuid(d) === uuid);
  if (db === undefined) throw new RowError(`No database with UUID \`${uuid}\` exists.`);
  return db;
}

// ── users ──────────────────────────────────────────────────────────────────────────────────

/** The most PBKDF2 iterations a password may ask for (deriving it blocks the event loop). */
const MAX_ITERATIONS = 1_000_000;

/** RethinkDB's users_artificial_table_backend_t::write_row and user_t::merge. */
async function writeUser(
  users: UserStore,
  key: Datum,
  old: DatumObject | null,
  next: DatumObject | null,
  generated: boolean,
): Promise<void> {
  if (typeof key !== 'string' || generated)
    throw new RowError(`Expected a username as the primary key, got ${pretty(key)}.`);
  if (key === '') throw new RowError('Empty username');
  if (next === null) {
    if (key === ADMIN) throw new RowError(`The user \`${key}\` can't be deleted.`);
    if (!users.exists(key)) throw new RowError(`User \`${key}\` not found.`);
    await users.remove(key);
    return;
  }
  if (!('password' in next)) throw new RowError('Expected a field named `password`.');
  checkRow(next, ['id', 'password']);
  const password = next.password as Datum;
  let value: string | null | undefined;
  let iterations: number | undefined;
  // The empty password is no password (RethinkDB's password_t("")): `password: false` then.
  if (typeof password === 'string') value = password === '' ? null : password;
  else if (isPlainObject(password)) {
    // `{password, iterations}` (RethinkDB's password_t(datum)): the PBKDF2 iteration count too.
    const n = password.iterations;
    if (n === undefined) throw new RowError('Expected a field named `iterations`.');
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 1)
      throw new RowError(`Expected \`iterations\` to be an integer greater than zero, got ${pretty(n)}.`);
    // Deriving the credentials takes the event loop for as long: bounded here.
    if (n > MAX_ITERATIONS)
      throw new RowError(`Expected \`iterations\` to be at most ${MAX_ITERATIONS} (Wharf's limit), got ${n}.`);
    const p = password.password;
    if (p === undefined) throw new RowError('Expected a field named `password`.');
    if (typeof p !== 'string') throw new RowError(`Expected \`password\` to be a string, got ${pretty(p)}.`);
    const extra = Object.keys(password)
      .filter((k) => k !== 'iterations' && k !== 'password')
      .sort();
    if (extra.length > 0) throw new RowError(`Unexpected key(s) \`${extra.join('`, `')}\`.`);
    value = p === '' ? null : p;
    iterations = n;
  } else if (password === false) value = null;
  else if (password === true) {
    // `true` keeps the password there is; a user without one must be given one.
    if (old === null || old.password !== true)
      throw new RowError(
        `Expected an object or string to set the password, or \`false\` to keep it unset, got ${pretty(password)}.`,
      );
    value = undefined;
  } else throw new RowError(`Expected an object, string or boolean for \`password\`, got ${pretty(password)}.`);
  if (key === ADMIN) {
    if (value === undefined) return;
    throw new RowError(
      "The password of `admin` is the server's `--password` option (WHARF_PASSWORD); change it there and restart.",
    );
  }
  if (value === undefined) return;
  await users.setPassword(key, value, iterations);
}

// ── permissions ────────────────────────────────────────────────────────────────────────────

function permissionRows(ev: Evaluator, users: UserStore, format: IdentifierFormat): DatumObject[] {
  const catalog = ev.deps.catalog;
  const dbShown = (db: string): string => (format === 'uuid' ? dbUuid(db) : db);
  const all = { read: true, write: true, config: true };
  const rows: DatumObject[] = [
    { id: [ADMIN], permissions: { ...all, connect: true }, user: ADMIN },
    { id: [ADMIN, dbUuid(SYSTEM_DB)], database: dbShown(SYSTEM_DB), permissions: all, user: ADMIN },
  ];
  for (const u of users.list()) {
    const global = permissionsDatum(u.global);
    if (global !== null) rows.push({ id: [u.id], permissions: global as DatumObject, user: u.id });
    for (const [db, p] of Object.entries(u.databases)) {
      const shown = permissionsDatum(p);
      if (shown === null || !catalog.dbExists(db)) continue;
      rows.push({ id: [u.id, dbUuid(db)], database: dbShown(db), permissions: shown as DatumObject, user: u.id });
    }
    for (const [full, p] of Object.entries(u.tables)) {
      const shown = permissionsDatum(p);
      const dot = full.indexOf('.');
      const db = full.slice(0, dot);
      const table = full.slice(dot + 1);
      const engineName = catalog.engineName(db, table);
      if (shown === null || (db !== SYSTEM_DB && catalog.tableInfo(engineName) === undefined)) continue;
      rows.push({
        id: [u.id, dbUuid(db), tableUuid(db, table, engineName)],
        database: dbShown(db),
        permissions: shown as DatumObject,
        table: format === 'uuid' ? tableUuid(db, table, engineName) : table,
        user: u.id,
      });
    }
  }
  return rows;
}

function tableUuid(db: string, table: string, engineName: string): string {
  return db === SYSTEM_DB ? nameUuid(`${SYSTEM_DB}.${table}`) : nameUuid(engineName);
}

/** A permissions row's key as [user, db?, table?] names; RethinkDB's parse_primary_key texts. */
function parsePermissionKey(ev: Evaluator, key: Datum): { user: string; db?: string; table?: string } {
  if (!Array.isArray(key) || key.length < 1 || key.length > 3)
    throw new RowError(`Expected an array of one to three items in the primary key, got ${pretty(key)}.`);
  const [user, dbId, tableId] = key;
  if (typeof user !== 'string') throw new RowError(`Expected a string as the username, got ${pretty(user)}.`);
  if (key.length === 1) return { user };
  const catalog = ev.deps.catalog;
  if (typeof dbId !== 'string' || !UUID.test(dbId))
    throw new RowError(`Expected a UUID as the database, got ${pretty(dbId as Datum)}.`);
  const db = catalog.listDbs().find((d) => dbUuid(d) === dbId);
  if (db === undefined) throw new RowError(`No database with UUID \`${dbId}\` exists.`);
  if (key.length === 2) return { user, db };
  if (typeof tableId !== 'string' || !UUID.test(tableId))
    throw new RowError(`Expected a UUID as the table, got ${pretty(tableId as Datum)}.`);
  const tables = db === SYSTEM_DB ? [...SYSTEM_TABLES] : catalog.listTables(db);
  const table = tables.find((t) => tableUuid(db, t, catalog.engineName(db, t)) === tableId);
  if (table === undefined) throw new RowError(`No table with UUID \`${tableId}\` exists.`);
  return { user, db, table };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

async function writePermissions(
  ev: Evaluator,
  users: UserStore,
  key: Datum,
  next: DatumObject | null,
  generated: boolean,
  format: IdentifierFormat,
): Promise<void> {
  if (generated) throw new RowError('You must specify a primary key.');
  const scope = parsePermissionKey(ev, key);
  if (scope.user === ADMIN) throw new RowError(`The permissions of the user \`${ADMIN}\` can't be modified.`);
  if (!users.exists(scope.user)) throw new RowError(`No user named \`${scope.user}\`.`);
  if (next === null) {
    await users.setPermissions(scope.user, scope, {});
    return;
  }
  const keys = new Set(Object.keys(next));
  keys.delete('id');
  if (next.user !== undefined) {
    keys.delete('user');
    if (next.user !== scope.user) throw new RowError('The key `user` does not match the primary key.');
  }
  if (scope.db !== undefined && next.database !== undefined) {
    keys.delete('database');
    const want = format === 'uuid' ? dbUuid(scope.db) : scope.db;
    if (next.database !== want) throw new RowError('The key `database` does not match the primary key.');
  }
  if (scope.table !== undefined && next.table !== undefined) {
    keys.delete('table');
    const engineName = ev.deps.catalog.engineName(scope.db as string, scope.table);
    const want = format === 'uuid' ? tableUuid(scope.db as string, scope.table, engineName) : scope.table;
    if (next.table !== want) throw new RowError('The key `table` does not match the primary key.');
  }
  if (next.permissions === undefined) throw new RowError('Expected a field `permissions`.');
  keys.delete('permissions');
  let merged: Permissions;
  try {
    merged = mergePermissions(users.permissions(scope.user, scope), next.permissions as Datum, scope.db === undefined);
  } catch (err) {
    if (err instanceof PermissionsError) throw new RowError(err.message);
    throw err;
  }
  if (keys.size > 0) throw new RowError(`Unexpected key(s) \`${[...keys].sort().join('`, `')}\`.`);
  await users.setPermissions(scope.user, scope, merged);
}

/** A bad permissions object (permissions_t::merge's texts). */
export class PermissionsError extends Error {}

/** RethinkDB's permissions_t::merge: each key true, false or null (unset); `connect` global only. */
export function mergePermissions(base: Permissions, patch: Datum, global: boolean): Permissions {
  if (!isPlainObject(patch)) throw new PermissionsError(`Expected an object, got ${pretty(patch)}.`);
  const out: Permissions = { ...base };
  const keys = new Set(Object.keys(patch));
  for (const name of ['read', 'write', 'config', 'connect'] as const) {
    const v = patch[name];
    if (v === undefined) continue;
    if (name === 'connect' && !global)
      throw new PermissionsError('The `connect` permission is only valid at the global scope.');
    keys.delete(name);
    if (v === null) delete out[name];
    else if (typeof v === 'boolean') out[name] = v;
    else throw new PermissionsError(`Expected a boolean or null for \`${name}\`, got ${pretty(v)}.`);
  }
  if (keys.size > 0) throw new PermissionsError(`Unexpected key(s) \`${[...keys].sort().join('`, `')}\`.`);
  return out;
}

/** A running query's term as JSON text (a term too deep to serialize is named so). */
function termText(term: unknown): string {
  try {
    return JSON.stringify(term);
  } catch {
    return '(a term too deeply nested to show)';
  }
}
