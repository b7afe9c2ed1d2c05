/**
 * A job's coordination table in RethinkDB (or Wharf's driver port), through the official driver:
 * `insert` with conflict "error" to create, "replace" to put, `between` on the primary key to list.
 * One connection, to the first host that answers.
 */

import type { CoordinationDoc } from '@wharf/wire';
import { LoaderError } from '../errors.js';
import { ensureRethinkdbTable } from '../targets/rethinkdb-tables.js';
import type { TargetSpec } from '../targets/target.js';
import { type CoordinationStore, prefixEnd } from './store.js';

// biome-ignore lint/suspicious/noExplicitAny: the official driver has no usable types; results are checked here
type R = any;
type Spec = Extract<TargetSpec, { kind: 'rethinkdb' }>;

export class RethinkdbStore implements CoordinationStore {
  readonly where: string;
  #spec: Spec;
  #tableName: string;
  #r: R = null;
  #conn: R = null;

  constructor(spec: Spec, table: string) {
    this.#spec = spec;
    this.#tableName = table;
    this.where = `rethinkdb://${spec.hosts.map((h) => `${h.host}:${h.port}`).join(',')}/${spec.db} table ${table}`;
  }

  get #table(): R {
    return this.#r.db(this.#spec.db).table(this.#tableName);
  }

  async #run<T>(query: R): Promise<T> {
    if (!this.#conn) await this.#connect();
    try {
      return (await query.run(this.#conn)) as T;
    } catch (err) {
      if ((err as Error).name === 'ReqlDriverError') {
        const c = this.#conn;
        this.#conn = null;
        c?.close().catch(() => {});
      }
      throw new LoaderError('WHARF_ERR_TARGET', `${this.where}: ${(err as Error).message}`, { cause: err });
    }
  }

  async #connect(): Promise<void> {
    let last: unknown;
    for (const { host, port } of this.#spec.hosts) {
      try {
        this.#conn = await this.#r.connect({
          host,
          port,
          db: this.#spec.db,
          user: this.#spec.user ?? 'admin',
          password: this.#spec.password ?? '',
        });
        return;
      } catch (err) {
        last = err;
      }
    }
    throw new LoaderError('WHARF_ERR_TRANSPORT', `${this.where}: no host answered: ${(last as Error)?.message}`, {
      cause: last,
    });
  }

  async open(): Promise<void> {
    const mod: R = await import('rethinkdb');
    this.#r = mod.default ?? mod;
    // Replicated on up to three servers, so the job survives the loss of one (RethinkDB elects a
    // new primary while a majority of the replicas live).
    const servers = await this.#run<number>(this.#r.db('rethinkdb').table('server_status').count()).catch(() => 1);
    const options = servers > 1 ? { replicas: Math.min(3, servers) } : {};
    await ensureRethinkdbTable(this.#r, (q) => this.#run(q), this.#spec.db, this.#tableName, 'id', options);
  }

  async create(doc: CoordinationDoc): Promise<boolean> {
    const res = await this.#run<{ inserted: number; errors: number; first_error?: string }>(
      this.#table.insert(doc, { conflict: 'error', durability: 'hard' }),
    );
    if (res.inserted === 1) return true;
    if (/duplicate primary key/i.test(res.first_error ?? '')) return false;
    throw new LoaderError('WHARF_ERR_TARGET', `${this.where}: create ${doc.id}: ${res.first_error ?? 'not written'}`);
  }

  async put(doc: CoordinationDoc, durable: boolean): Promise<void> {
    const res = await this.#run<{ errors: number; first_error?: string }>(
      this.#table.insert(doc, { conflict: 'replace', durability: durable ? 'hard' : 'soft' }),
    );
    if (res.errors > 0)
      throw new LoaderError('WHARF_ERR_TARGET', `${this.where}: write ${doc.id}: ${res.first_error ?? 'not written'}`);
  }

  async list(prefix: string): Promise<CoordinationDoc[]> {
    const cursor = await this.#run<R>(this.#table.between(prefix, prefixEnd(prefix)));
    const docs = (Array.isArray(cursor) ? cursor : await cursor.toArray()) as CoordinationDoc[];
    // Sorted here: an indexed orderBy after `between` is RethinkDB's, not every driver port's.
    return docs.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  async close(): Promise<void> {
    const c = this.#conn;
    this.#conn = null;
    await c?.close().catch(() => {});
  }
}
