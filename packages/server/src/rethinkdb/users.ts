/**
 * Users and permissions of the driver port (RethinkDB's `auth` model: user.cc, permissions.cc,
 * user_context.cc). Every user but `admin` lives in the hidden engine table USERS_TABLE, one
 * document per user: its SCRAM-SHA-256 credentials (salt, iteration count, StoredKey, ServerKey;
 * never the password) and its permissions at the three scopes (global, per database, per
 * table). The store is read once at start and kept in memory: the handshake asks for
 * credentials synchronously, and every query of a non-admin connection checks permissions.
 *
 * `admin` is not stored: its password is the server's option (`--password` / WHARF_PASSWORD),
 * which always wins, and it has every permission. A new user has no permission at all.
 *
 * A permission is true, false or unset at each scope; the narrowest scope that sets it decides
 * (table, then database, then global). The `rethinkdb` database does not inherit the global
 * scope, so system tables are admin-only until granted on `rethinkdb` or one of its tables.
 * `connect` (global only) is RethinkDB's permission for `r.http`; it does not affect logging in.
 */
import type { Database } from '@wharf/engine';
import { ReqlRuntimeError } from './errors.js';
import { ErrorType } from './protocol.js';
import { deriveCredentials, type ScramCredentials } from './scram.js';

/** The engine table holding users (hidden from every table list, like `_wharf_reql_indexes`). */
export const USERS_TABLE = '_wharf_users';
export const ADMIN = 'admin';
/** The system database: global permissions do not reach it. */
const SYSTEM_DB = 'rethinkdb';

export type PermissionName = 'read' | 'write' | 'config' | 'connect';

/** One scope's permissions: a key present is true or false; absent is unset. */
export interface Permissions {
  read?: boolean;
  write?: boolean;
  config?: boolean;
  connect?: boolean;
}

interface StoredCredentials {
  salt: string;
  iterations: number;
  stored_key: string;
  server_key: string;
}

/** A user as stored in USERS_TABLE. Databases by name; tables by `db.table`. */
export interface UserRecord {
  id: string;
  /** Null: no password (an empty one logs in, from loopback only). */
  credentials: StoredCredentials | null;
  global: Permissions;
  databases: Record<string, Permissions>;
  tables: Record<string, Permissions>;
}

export class PermissionError extends ReqlRuntimeError {
  constructor(user: string, permission: PermissionName | 'admin') {
    super(
      // RethinkDB words the admin-only check (require_admin_user) without the user's name.
      permission === 'admin'
        ? 'Internal permission error, required `admin` permission.'
        : `User \`${user}\` does not have the required \`${permission}\` permission.`,
      ErrorType.PERMISSION_ERROR,
    );
  }
}

const PERMISSION_NAMES: readonly PermissionName[] = ['read', 'write', 'config', 'connect'];

/** A scope's permissions as RethinkDB shows them: only the set ones, or null when none is. */
export function permissionsDatum(p: Permissions): Permissions | null {
  const out: Permissions = {};
  for (const k of PERMISSION_NAMES) if (p[k] !== undefined) out[k] = p[k];
  return Object.keys(out).length === 0 ? null : out;
}

function encode(c: ScramCredentials): StoredCredentials {
  return {
    salt: c.salt.toString('base64'),
    iterations: c.iterations,
    stored_key: c.storedKey.toString('base64'),
    server_key: c.serverKey.toString('base64'),
  };
}

function decode(c: StoredCredentials): ScramCredentials {
  return {
    salt: Buffer.from(c.salt, 'base64'),
    iterations: c.iterations,
    storedKey: Buffer.from(c.stored_key, 'base64'),
    serverKey: Buffer.from(c.server_key, 'base64'),
  };
}

export class UserStore {
  readonly #db: Database;
  readonly #adminPassword: string;
  readonly #adminCredentials: ScramCredentials;
  readonly #users = new Map<string, UserRecord>();
  /** SCRAM credentials decoded once per user (the handshake asks for them on every login). */
  readonly #decoded = new Map<string, ScramCredentials>();
  #writes: Promise<unknown> = Promise.resolve();

  constructor(db: Database, adminPassword: string) {
    this.#db = db;
    this.#adminPassword = adminPassword;
    this.#adminCredentials = deriveCredentials(adminPassword);
  }

  /** Read every stored user (at start, before the driver port listens). */
  async load(): Promise<void> {
    this.#users.clear();
    this.#decoded.clear();
    if (!this.#db.listTables().some((t) => t.name === USERS_TABLE)) return;
    const docs = (await this.#db.table(USERS_TABLE).scan({ limit: 10_000_000 })) as UserRecord[];
    for (const doc of docs) this.#users.set(doc.id, doc);
  }

  /** SCRAM credentials of a user, or undefined when there is no such user. */
  credentials(user: string): ScramCredentials | undefined {
    if (user === ADMIN) return this.#adminCredentials;
    const rec = this.#users.get(user);
    if (rec === undefined) return undefined;
    let c = this.#decoded.get(user);
    if (c === undefined) {
      c = rec.credentials === null ? deriveCredentials('') : decode(rec.credentials);
      this.#decoded.set(user, c);
    }
    return c;
  }

  /** Whether a user has a password (false: the empty password logs in, from loopback only). */
  hasPassword(user: string): boolean {
    if (user === ADMIN) return this.#adminPassword !== '';
    return this.#users.get(user)?.credentials != null;
  }

  exists(user: string): boolean {
    return user === ADMIN || this.#users.has(user);
  }

  /** Every user but admin, by name. */
  list(): UserRecord[] {
    return [...this.#users.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  get(user: string): UserRecord | undefined {
    return this.#users.get(user);
  }

  /**
   * Create a user or change its password: `password` is the new one, or null for none; a new
   * random salt each time, `iterations` PBKDF2 rounds (default 4096, as RethinkDB).
   */
  async setPassword(user: string, password: string | null, iterations?: number): Promise<void> {
    const old = this.#users.get(user);
    const credentials = password === null ? null : encode(deriveCredentials(password, undefined, iterations));
    const rec: UserRecord = old
      ? { ...old, credentials }
      : { id: user, credentials, global: {}, databases: {}, tables: {} };
    await this.#put(rec);
  }

  async remove(user: string): Promise<void> {
    if (!this.#users.has(user)) return;
    await this.#serial(async () => {
      await this.#db.table(USERS_TABLE).delete(user, { durability: 'hard' });
      this.#users.delete(user);
      this.#decoded.delete(user);
    });
  }

  /** Replace one scope's permissions of a user (`db`/`table` absent: the global scope). */
  async setPermissions(user: string, scope: { db?: string; table?: string }, p: Permissions): Promise<void> {
    const old = this.#users.get(user);
    if (old === undefined) return;
    const rec: UserRecord = {
      ...old,
      global: { ...old.global },
      databases: { ...old.databases },
      tables: { ...old.tables },
    };
    const shown = permissionsDatum(p);
    if (scope.db === undefined) rec.global = shown ?? {};
    else if (scope.table === undefined) {
      if (shown === null) delete rec.databases[scope.db];
      else rec.databases[scope.db] = shown;
    } else {
      const key = `${scope.db}.${scope.table}`;
      if (shown === null) delete rec.tables[key];
      else rec.tables[key] = shown;
    }
    await this.#put(rec);
  }

  /** One scope's permissions of a user (empty when unset or no such user). */
  permissions(user: string, scope: { db?: string; table?: string }): Permissions {
    const rec = this.#users.get(user);
    if (rec === undefined) return {};
    if (scope.db === undefined) return { ...rec.global };
    if (scope.table === undefined) return { ...(rec.databases[scope.db] ?? {}) };
    return { ...(rec.tables[`${scope.db}.${scope.table}`] ?? {}) };
  }

  /** Forget every grant on a dropped table (or, without `table`, a dropped database and its tables). */
  async forget(db: string, table?: string): Promise<void> {
    for (const rec of [...this.#users.values()]) {
      const tables = Object.fromEntries(
        Object.entries(rec.tables).filter(([k]) =>
          table === undefined ? !k.startsWith(`${db}.`) : k !== `${db}.${table}`,
        ),
      );
      const databases = { ...rec.databases };
      if (table === undefined) delete databases[db];
      if (
        Object.keys(tables).length !== Object.keys(rec.tables).length ||
        Object.keys(databases).length !== Object.keys(rec.databases).length
      )
        await this.#put({ ...rec, tables, databases });
    }
  }

  /** forget() for an engine table dropped outside ReQL (`d.t` is table t of database d, else of `test`). */
  forgetEngineTable(engineName: string): Promise<void> {
    const dot = engineName.indexOf('.');
    return dot === -1
      ? this.forget('test', engineName)
      : this.forget(engineName.slice(0, dot), engineName.slice(dot + 1));
  }

  /**
   * Does `user` hold `permission` (for a table: on `db.table`; for a database: on `db`; else
   * globally)? RethinkDB's user_t::has_*_permission: the narrowest scope that sets it decides;
   * `rethinkdb` never falls back to the global scope; `write` needs `read` too.
   */
  allows(user: string, permission: PermissionName, db?: string, table?: string): boolean {
    if (user === ADMIN) return true;
    const rec = this.#users.get(user);
    if (rec === undefined) return false;
    if (permission === 'write' && !this.allows(user, 'read', db, table)) return false;
    if (permission === 'connect') return rec.global.connect === true;
    if (db !== undefined && table !== undefined) {
      const t = rec.tables[`${db}.${table}`]?.[permission];
      if (t !== undefined) return t;
    }
    if (db !== undefined) {
      const d = rec.databases[db]?.[permission];
      if (d !== undefined) return d;
      if (db === SYSTEM_DB) return false;
    }
    return rec.global[permission] === true;
  }

  async #put(rec: UserRecord): Promise<void> {
    await this.#serial(async () => {
      if (!this.#db.listTables().some((t) => t.name === USERS_TABLE))
        await this.#db.createTable(USERS_TABLE, { primaryKey: 'id' }).catch(() => {});
      // Users are few and rarely written: always durable, whatever the server's default.
      await this.#db
        .table(USERS_TABLE)
        .insert(rec as unknown as Record<string, unknown>, { conflict: 'replace', durability: 'hard' });
      this.#users.set(rec.id, rec);
      this.#decoded.delete(rec.id);
    });
  }

  /** Writes one at a time, so the memory copy and the table agree. */
  #serial<R>(op: () => Promise<R>): Promise<R> {
    const run = this.#writes.then(op, op);
    this.#writes = run.catch(() => {});
    return run;
  }
}

/**
 * Who runs a query, as the evaluator checks it. Admin connections have none (no check at all).
 */
export class Access {
  constructor(
    readonly store: UserStore,
    readonly user: string,
  ) {}

  /** Throws RethinkDB's permission error unless the user holds `permission` there. */
  require(permission: PermissionName, db?: string, table?: string): void {
    if (!this.store.allows(this.user, permission, db, table)) throw new PermissionError(this.user, permission);
  }

  /** Admin-only tables (`_debug_scratch`, as RethinkDB's in-memory tables). */
  requireAdmin(): void {
    if (this.user !== ADMIN) throw new PermissionError(this.user, 'admin');
  }
}

/**
 * The permission each method of an engine table needs. A method missing here is refused for
 * every non-admin user (fail closed): a new engine method cannot reach rows unchecked.
 */
export const TABLE_METHOD_PERMISSIONS: Readonly<Record<string, PermissionName | 'none'>> = {
  get: 'read',
  getMany: 'read',
  scan: 'read',
  readPage: 'read',
  count: 'read',
  getAll: 'read',
  between: 'read',
  changes: 'read',
  insert: 'write',
  insertNdjson: 'write',
  insertJsonArray: 'write',
  delete: 'write',
  createIndex: 'config',
  dropIndex: 'config',
  // RethinkDB lists and waits on indexes without a permission.
  listIndexes: 'none',
  indexWait: 'none',
};

/**
 * A table as a connection of `access`'s user sees it: every method asks for its permission
 * first (`TABLE_METHOD_PERMISSIONS`), so no path that reaches the table's rows can skip the check.
 */
export function guardTable<T extends object>(table: T, access: Access, db: string, name: string): T {
  return new Proxy(table, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || typeof prop !== 'string') return value;
      const need = Object.hasOwn(TABLE_METHOD_PERMISSIONS, prop) ? TABLE_METHOD_PERMISSIONS[prop] : undefined;
      return (...args: unknown[]) => {
        if (need === undefined) throw new Error(`table method ${prop} has no permission rule (users.ts)`);
        if (need !== 'none') access.require(need, db, name);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}
