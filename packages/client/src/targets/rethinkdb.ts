/**
 * `rethinkdb://[user:pass@]host[:port][,host2…]/db` through the official `rethinkdb` driver:
 * the same code loads Wharf's driver port or a real RethinkDB cluster. One connection per
 * concurrent batch, spread round-robin over the hosts given. Each batch is one query,
 * `r.db(db).table(t).insert(r.json(text), {durability, conflict})`, so the driver never builds
 * a term per document.
 *
 * A real RethinkDB reports only `errors` and `first_error` for a batch, not which documents
 * failed: the loader then reports those errors against the batch's input range ('unattributed').
 */
import { LoaderError } from '../errors.js';
import type { IndexSpec, WriteResult } from '../types.js';
import type { InsertOptions, Payload, Target, TargetSpec } from './target.js';

/** The driver's query builder. Its published types lack r.json, table.sync and camelCase
 *  optargs the driver accepts, so queries are built untyped and results checked here. */
// biome-ignore lint/suspicious/noExplicitAny: the official driver has no types; its results are checked where they are used
type R = any;
type Connection = import('rethinkdb').Connection;
type Spec = Extract<TargetSpec, { kind: 'rethinkdb' }>;

/** Driver errors after which the same query may succeed: connection and availability problems. */
const TRANSIENT = new Set([
  'ReqlDriverError',
  'ReqlAvailabilityError',
  'ReqlOpFailedError',
  'ReqlOpIndeterminateError',
  'ReqlTimeoutError',
]);

export class RethinkdbTarget implements Target {
  readonly kind = 'rethinkdb' as const;
  readonly payloadFormat = 'json' as const;
  readonly url: string;
  #spec: Spec;
  #r: R | null = null;
  #slots: (Promise<Connection> | null)[] = [];
  #next = 0;

  constructor(spec: Spec, url: string) {
    this.#spec = spec;
    this.url = url;
  }

  async open({ concurrency }: { concurrency: number }): Promise<void> {
    const mod: R = await import('rethinkdb');
    this.#r = mod.default ?? mod;
    // At least one connection per host, so every host given takes a share.
    this.#slots = Array.from({ length: Math.max(concurrency, this.#spec.hosts.length) }, () => null);
    await this.#conn(0);
  }

  #conn(i: number): Promise<Connection> {
    let c = this.#slots[i];
    if (!c) {
      const { host, port } = this.#spec.hosts[i % this.#spec.hosts.length]!;
      c = this.#r.connect({
        host,
        port,
        db: this.#spec.db,
        user: this.#spec.user ?? 'admin',
        password: this.#spec.password ?? '',
      }) as Promise<Connection>;
      c.catch(() => {
        if (this.#slots[i] === c) this.#slots[i] = null;
      });
      this.#slots[i] = c;
    }
    return c;
  }

  /** Runs a query on the next connection; a connection that failed is dropped and reopened next time. */
  async #run<T>(build: (r: R) => { run(conn: Connection): Promise<T> }): Promise<T> {
    const i = this.#next++ % this.#slots.length;
    const p = this.#conn(i);
    try {
      return await build(this.#r).run(await p);
    } catch (err) {
      if ((err as Error).name === 'ReqlDriverError' && this.#slots[i] === p) {
        this.#slots[i] = null;
        p.then((c) => c.close()).catch(() => {});
      }
      throw err;
    }
  }

  async ensureTable(table: string, primaryKey: string): Promise<void> {
    // Plain terms only (dbList, dbCreate, tableList, tableCreate), so Wharf's driver port and
    // RethinkDB both answer; "already exists" from a concurrent creator is fine.
    const { db } = this.#spec;
    const ignoreExists = (err: unknown) => {
      if (!/already exists/i.test((err as Error).message)) throw err;
    };
    const dbs = (await this.#run((r) => r.dbList())) as string[];
    if (!dbs.includes(db)) await this.#run((r) => r.dbCreate(db)).catch(ignoreExists);
    const tables = (await this.#run((r) => r.db(db).tableList())) as string[];
    if (!tables.includes(table))
      await this.#run((r) => r.db(db).tableCreate(table, { primaryKey })).catch(ignoreExists);
  }

  async insert(table: string, payload: Payload, opts: InsertOptions): Promise<WriteResult> {
    if (payload.format !== 'json')
      throw new LoaderError('WHARF_ERR_INVALID_ARGUMENT', 'rethinkdb target takes JSON-array payloads');
    const text = payload.bytes.toString('utf8');
    const res = await this.#run((r) =>
      r.db(this.#spec.db).table(table).insert(r.json(text), { durability: opts.durability, conflict: opts.conflict }),
    );
    return res as WriteResult;
  }

  async sync(table: string): Promise<void> {
    await this.#run((r) => r.db(this.#spec.db).table(table).sync());
  }

  /**
   * index_create with a function reading the field path (`doc('address')('city')`), so a real
   * RethinkDB indexes the same nested field (a string would name one field called "address.city").
   */
  async createIndex(table: string, spec: IndexSpec): Promise<{ existed: boolean }> {
    const parts = spec.field.split('.');
    try {
      await this.#run((r) =>
        r
          .db(this.#spec.db)
          .table(table)
          .indexCreate(spec.name, (doc: R) => parts.reduce((d: R, p: string) => d(p), doc), {
            multi: spec.multi === true,
          }),
      );
      return { existed: false };
    } catch (err) {
      if (/already exists/i.test((err as Error).message)) return { existed: true };
      throw err;
    }
  }

  async waitIndex(table: string, name: string): Promise<void> {
    await this.#run((r) => r.db(this.#spec.db).table(table).indexWait(name));
  }

  isTransient(err: unknown): boolean {
    return TRANSIENT.has((err as Error)?.name);
  }

  async close(): Promise<void> {
    const slots = this.#slots;
    this.#slots = [];
    await Promise.all(slots.map((p) => p?.then((c) => c.close()).catch(() => {})));
  }
}
