/**
 * The one interface every destination implements: the embedded engine, a Wharf server's ws
 * ingest path, or anything speaking the RethinkDB driver protocol (Wharf's driver port or a real
 * RethinkDB cluster). The loader only ever talks to a Target.
 */

import type { PayloadFormat } from '../batcher.js';
import { LoaderError } from '../errors.js';
import type {
  Conflict,
  Durability,
  FailoverReport,
  IndexSpec,
  TableOptions,
  TargetStats,
  WriteResult,
} from '../types.js';

export interface InsertOptions {
  durability: Durability;
  conflict: Conflict;
}

/** One batch as bytes: NDJSON lines or a JSON array, `count` documents. */
export interface Payload {
  format: PayloadFormat;
  bytes: Buffer;
  count: number;
}

export interface Target {
  /** Printable name (credentials removed), e.g. `embedded:/data`, `wharf://127.0.0.1:8080`. */
  readonly url: string;
  readonly kind: 'embedded' | 'wharf' | 'rethinkdb' | (string & {});
  /** The payload format `insert` takes. */
  readonly payloadFormat: PayloadFormat;
  /** Largest payload the target accepts in one request (bytes), if it has a limit. */
  readonly maxPayloadBytes?: number;
  /** Connects / opens. Called once before anything else. */
  open(opts: { concurrency: number }): Promise<void>;
  /**
   * Creates the table if it does not exist. `options` (shards, replicas, write acks) only for a
   * target that says so in `tableOptions`; the loader refuses them for the others.
   */
  ensureTable(table: string, primaryKey: string, options?: TableOptions): Promise<void>;
  /** True when the target honours `ensureTable`'s TableOptions (a RethinkDB cluster). */
  readonly tableOptions?: boolean;
  /**
   * Inserts one batch. Per-document failures come back in the result, not as a rejection.
   * The loader lays a later batch out in `payload.bytes` once the returned promise has settled:
   * a target that keeps the bytes longer must copy them.
   */
  insert(table: string, payload: Payload, opts: InsertOptions): Promise<WriteResult>;
  /** Resolves once everything acknowledged before the call is durable. */
  sync(table: string): Promise<void>;
  /**
   * Creates a secondary index (its build runs in the background). Resolves `{ existed: true }`
   * instead of failing when an index of that name is already there.
   */
  createIndex?(table: string, spec: IndexSpec): Promise<{ existed: boolean }>;
  /** Resolves once the index is built and reflects every write acknowledged before the call. */
  waitIndex?(table: string, name: string): Promise<void>;
  /** Engine counters, when the target has them (embedded). */
  stats?(): Promise<TargetStats | null>;
  /** What failed over during the load (nodes lost, batches resolved), for targets that fail over. */
  failoverReport?(): FailoverReport;
  /** True for failures worth retrying (a lost connection); false for errors that will repeat. */
  isTransient(err: unknown): boolean;
  close(): Promise<void>;
}

export type TargetSpec =
  | { kind: 'embedded'; dir: string }
  | { kind: 'wharf'; host: string; port: number; secure: boolean; password?: string }
  | {
      kind: 'rethinkdb';
      hosts: { host: string; port: number }[];
      db: string;
      user?: string;
      password?: string;
    };

export const DEFAULT_TARGET = 'embedded:./wharf-data';
export const DEFAULT_WHARF_PORT = 8080;
export const DEFAULT_RETHINKDB_PORT = 28015;

function bad(spec: string, why: string): LoaderError {
  return new LoaderError(
    'WHARF_ERR_BAD_TARGET',
    `bad target ${JSON.stringify(redact(spec))}: ${why} ` +
      '(expected embedded:DIR, wharf://[:password@]host:port or rethinkdb://[user:pass@]host[:port][,host2…]/db)',
  );
}

function hostPort(s: string, defaultPort: number, spec: string): { host: string; port: number } {
  const m = /^(\[[^\]]+\]|[^:[\]]+)(?::(\d+))?$/.exec(s);
  if (!m) throw bad(spec, `cannot read host ${JSON.stringify(s)}`);
  const host = m[1]!.startsWith('[') ? m[1]!.slice(1, -1) : m[1]!;
  const port = m[2] === undefined ? defaultPort : Number(m[2]);
  if (!(port > 0 && port < 65536)) throw bad(spec, `bad port in ${JSON.stringify(s)}`);
  return { host, port };
}

/** `user:password@host…` → its decoded parts and what follows the `@` (all of it when there is none). */
function userinfo(authority: string): { authority: string; user?: string; password?: string } {
  const at = authority.lastIndexOf('@');
  if (at < 0) return { authority };
  const cred = authority.slice(0, at);
  const colon = cred.indexOf(':');
  return {
    authority: authority.slice(at + 1),
    user: decodeURIComponent(colon < 0 ? cred : cred.slice(0, colon)),
    password: colon < 0 ? undefined : decodeURIComponent(cred.slice(colon + 1)),
  };
}

/** Parses a target string. Pure: no I/O. */
export function parseTarget(spec: string): TargetSpec {
  if (spec.startsWith('embedded:')) {
    const dir = spec.slice('embedded:'.length).replace(/^\/\/(?=\/)/, '');
    if (!dir) throw bad(spec, 'no directory');
    return { kind: 'embedded', dir };
  }
  const scheme = /^([a-z]+):\/\/(.*)$/i.exec(spec);
  if (!scheme) throw bad(spec, 'unknown form');
  const [, proto, rest] = scheme as unknown as [string, string, string];
  switch (proto.toLowerCase()) {
    case 'wharf':
    case 'wharfs': {
      // wharf://:PASSWORD@host:port (or admin:PASSWORD@, PASSWORD@): the server's admin password.
      const cred = userinfo(rest.replace(/\/.*$/, ''));
      const password = cred.password ?? cred.user;
      const { host, port } = hostPort(cred.authority, DEFAULT_WHARF_PORT, spec);
      return {
        kind: 'wharf',
        host,
        port,
        secure: proto.toLowerCase() === 'wharfs',
        ...(password !== undefined ? { password } : {}),
      };
    }
    case 'rethinkdb': {
      const slash = rest.indexOf('/');
      if (slash < 0) throw bad(spec, 'no database (…/db)');
      const db = decodeURIComponent(rest.slice(slash + 1).replace(/[?#].*$/, ''));
      if (!db || db.includes('/')) throw bad(spec, 'bad database name');
      const { authority, user, password } = userinfo(rest.slice(0, slash));
      const hosts = authority.split(',').map((h) => hostPort(h, DEFAULT_RETHINKDB_PORT, spec));
      if (hosts.length === 0 || !hosts[0]!.host) throw bad(spec, 'no host');
      return { kind: 'rethinkdb', hosts, db, user, password };
    }
    default:
      throw bad(spec, `unknown scheme ${JSON.stringify(proto)}`);
  }
}

/** The target string with any password replaced by `***`. */
export function redact(spec: string): string {
  return spec.replace(/^(rethinkdb:\/\/[^:@/]*:)[^@/]*@/i, '$1***@').replace(/^(wharfs?:\/\/)[^@/]*@/i, '$1***@');
}

/**
 * Builds the Target for a target string; remote and embedded code is loaded only when used.
 * `engineOptions`: the engine's `Database.open` options for an `embedded:` target (ignored by others).
 */
export async function createTarget(spec: string, engineOptions?: Record<string, unknown>): Promise<Target> {
  const parsed = parseTarget(spec);
  switch (parsed.kind) {
    case 'embedded': {
      const { EmbeddedTarget } = await import('./embedded.js');
      return new EmbeddedTarget(parsed.dir, engineOptions);
    }
    case 'wharf': {
      const { WharfTarget } = await import('./wharf.js');
      // The password from the URL, else env WHARF_PASSWORD (the same variable the server reads).
      const password = parsed.password ?? (process.env.WHARF_PASSWORD || undefined);
      return new WharfTarget(parsed.host, parsed.port, parsed.secure, password);
    }
    case 'rethinkdb': {
      const { RethinkdbTarget } = await import('./rethinkdb/index.js');
      return new RethinkdbTarget(parsed, redact(spec));
    }
  }
}
