/**
 * `rethinkdb://[user:pass@]host[:port][,host2…]/db`: Wharf's driver port, a real RethinkDB, or a
 * RethinkDB cluster (the hosts given are its nodes).
 *
 * Inserts go over raw connections (connection.ts), one per batch in flight, spread round-robin
 * over the hosts: each batch is one query,
 * `r.db(db).table(t).insert(r.json(r.binary(bytes).coerceTo('string')), {durability, conflict})`,
 * its frame built straight into one buffer. The batch's lines joined with commas inside `[` `]`
 * are the JSON array text, with no document parsed or checked in this process; the text travels
 * as base64, so neither end escapes and unescapes every quote of it. A line that is not JSON, or
 * a blank one, fails the whole query on either server (`Failed to parse … as JSON`) before
 * anything is written; only then are the lines checked here, the bad ones reported by line
 * (`document_errors`) and the others sent again. Everything else (databases, tables, table
 * configuration, sync, indexes, read-backs) goes through the official `rethinkdb` driver.
 *
 * A real RethinkDB reports only `errors` and `first_error` for a batch, not which documents
 * failed: the loader then reports those errors against the batch's input range ('unattributed').
 *
 * Failover: a connection whose node died is reopened on the next host given. A batch whose
 * outcome is unknown — its connection died after it was sent, the server answered
 * ReqlOpIndeterminateError, or part of it failed because a shard's primary was unavailable — is
 * resolved by reading back its documents' primary keys before anything is sent again: a stored
 * document equal to the line is written, a different one (conflict 'error') is that line's
 * conflict, the others are sent again, and this repeats until the batch has a clean answer.
 * With conflict 'replace' or 'update' sending the batch again is idempotent, so it is re-sent
 * without reading back. Documents without a primary key cannot be recognised: they are sent
 * again and counted in the report (`unkeyedResent`), as they may be stored twice.
 */
import { LoaderError } from '../../errors.js';
import type { FailoverReport, IndexSpec, TableOptions, WriteResult } from '../../types.js';
import { ensureRethinkdbTable } from '../rethinkdb-tables.js';
import type { InsertOptions, Payload, Target, TargetSpec } from '../target.js';
import { RawConnection, ReqlError } from './connection.js';
import { arrayDocs, arrayOf, arrayOfLines, type BatchDoc, checkLines, sameDocument } from './lines.js';

export { arrayOfLines, checkLines } from './lines.js';

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

/**
 * A write that failed, wholly (an error) or in part (a batch's `first_error`), because the
 * cluster could not take it at that moment: a shard's primary replica is gone, too few replicas
 * acknowledge, or the table's configuration cannot be read while a node is lost. Which documents
 * were written is then unknown. RethinkDB 2.4's texts: "Cannot perform write: primary replica for
 * shard … not available", "… lost contact with primary replica", "The primary replica isn't
 * connected to a quorum of replicas…", "The attempt to read or modify the table's configuration
 * failed because none of the servers were accessible…" (a ReqlInternalError).
 */
const UNAVAILABLE = /cannot perform write|primary replica|quorum|lost contact|not available|servers were accessible/i;

/** A first_error saying a key was already stored. */
const CONFLICT = /duplicate primary key/i;

const EMPTY_RESULT: WriteResult = { inserted: 0, replaced: 0, unchanged: 0, deleted: 0, skipped: 0, errors: 0 };

/** Attempts to resolve one batch whose outcome is unknown, and the pause between them. */
const RESOLVE_ATTEMPTS = 12;
const RESOLVE_DELAY_MS = [100, 200, 500, 1000, 2000];
/** Keys per read-back query. */
const READ_BACK_KEYS = 2000;
const CONNECT_TIMEOUT_MS = 20_000;
const TABLE_READY_SECONDS = 60;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class RethinkdbTarget implements Target {
  readonly kind = 'rethinkdb' as const;
  readonly payloadFormat = 'ndjson' as const;
  readonly tableOptions = true;
  readonly url: string;
  #spec: Spec;
  #r: R | null = null;
  /** One raw connection per slot; `#slotHost[i]` is the host it is (or will be) open on. */
  #slots: (Promise<RawConnection> | null)[] = [];
  #slotConn: (RawConnection | null)[] = [];
  #slotHost: number[] = [];
  #next = 0;
  /** The official driver's one connection (admin queries, sync, read-backs), and its host. */
  #driver: Promise<Connection> | null = null;
  #driverHost = 0;
  /** Hosts whose connection failed, and when (a failed host is tried last for a while). */
  #downSince = new Map<number, number>();
  #serverVersion = '';
  #primaryKeys = new Map<string, string>();
  #report: FailoverReport = {
    nodesFailed: [],
    connectionsMoved: 0,
    batchesResolved: 0,
    batchesResent: 0,
    documentsConfirmed: 0,
    documentsResent: 0,
    unkeyedResent: 0,
  };

  constructor(spec: Spec, url: string) {
    this.#spec = spec;
    this.url = url;
  }

  async open({ concurrency }: { concurrency: number }): Promise<void> {
    const mod: R = await import('rethinkdb');
    this.#r = mod.default ?? mod;
    const hosts = this.#spec.hosts.length;
    // At least one connection per host, so every host given takes a share.
    const n = Math.max(concurrency, hosts);
    this.#slots = Array.from({ length: n }, () => null);
    this.#slotConn = Array.from({ length: n }, () => null);
    this.#slotHost = Array.from({ length: n }, (_, i) => i % hosts);
    const first = await this.#raw(0);
    this.#serverVersion = first.serverVersion;
  }

  /** True when the server is Wharf's driver port (its handshake's version ends in `-wharf`). */
  get isWharf(): boolean {
    return /-wharf$/.test(this.#serverVersion);
  }

  // ── hosts and connections ─────────────────────────────────────────────────────────────────

  #hostName(h: number): string {
    const { host, port } = this.#spec.hosts[h]!;
    return `${host}:${port}`;
  }

  /** A connection failed on host h: note it (once per outage) for the report. */
  #markDown(h: number, err: unknown): void {
    if (this.#downSince.has(h)) return;
    this.#downSince.set(h, Date.now());
    this.#report.nodesFailed.push({
      host: this.#hostName(h),
      error: (err as Error)?.message ?? String(err),
      at: new Date().toISOString(),
    });
  }

  /** Hosts in the order to try after `from`: those not known down first. */
  #hostsAfter(from: number): number[] {
    const n = this.#spec.hosts.length;
    const order = Array.from({ length: n }, (_, k) => (from + k) % n);
    return [...order.filter((h) => !this.#downSince.has(h)), ...order.filter((h) => this.#downSince.has(h))];
  }

  #connect(h: number): Promise<RawConnection> {
    const { host, port } = this.#spec.hosts[h]!;
    return RawConnection.open({
      host,
      port,
      user: this.#spec.user ?? 'admin',
      password: this.#spec.password ?? '',
      timeoutMs: CONNECT_TIMEOUT_MS,
    });
  }

  /**
   * Slot i's connection, opened when missing or broken: on the slot's host, else on the next
   * host that answers (the slot then stays there). Rejects with ReqlDriverError (nothing sent)
   * when no host answers.
   */
  #raw(i: number): Promise<RawConnection> {
    const current = this.#slots[i];
    if (current) return current;
    const p = this.#firstAnswering(this.#slotHost[i]!, (h) => this.#connect(h)).then(({ conn, host }) => {
      if (host !== this.#slotHost[i]) this.#report.connectionsMoved++;
      this.#slotHost[i] = host;
      this.#slotConn[i] = conn;
      return conn;
    });
    this.#slots[i] = p;
    p.catch(() => {
      if (this.#slots[i] === p) this.#slots[i] = null;
    });
    return p;
  }

  /**
   * A connection opened on the first host that answers, from `start` on (failover order); the
   * hosts that did not answer are noted down. A wrong password fails at once; no host answering
   * rejects with the last host's error.
   */
  async #firstAnswering<C>(start: number, open: (host: number) => Promise<C>): Promise<{ conn: C; host: number }> {
    let last: unknown;
    for (const h of this.#hostsAfter(start)) {
      try {
        const conn = await open(h);
        this.#downSince.delete(h);
        return { conn, host: h };
      } catch (err) {
        if ((err as Error).name === 'ReqlAuthError') throw err;
        this.#markDown(h, err);
        last = err;
      }
    }
    throw last;
  }

  /** Runs `fn` on the next slot's connection; a broken connection is dropped (and its host noted). */
  async #onRaw<T>(fn: (conn: RawConnection) => Promise<T>): Promise<T> {
    const i = this.#next++ % this.#slots.length;
    let conn = await this.#raw(i);
    if (conn.broken) {
      this.#drop(i, conn);
      conn = await this.#raw(i);
    }
    try {
      return await fn(conn);
    } finally {
      if (conn.broken) this.#drop(i, conn);
    }
  }

  /** Slot i's connection broke: its host is noted down and the slot reopens on the next host. */
  #drop(i: number, conn: RawConnection): void {
    if (this.#slotConn[i] !== conn) return;
    this.#slots[i] = null;
    this.#slotConn[i] = null;
    this.#markDown(this.#slotHost[i]!, new Error(conn.failure ?? `connection to ${conn.host} lost`));
    // The next open starts from the host after this one (one that answers, see #raw).
    const hosts = this.#spec.hosts.length;
    this.#slotHost[i] = (this.#slotHost[i]! + 1) % hosts;
    if (hosts > 1) this.#report.connectionsMoved++;
  }

  #driverConn(): Promise<Connection> {
    if (this.#driver) return this.#driver;
    const p = this.#firstAnswering(this.#driverHost, async (h) => {
      const { host, port } = this.#spec.hosts[h]!;
      return (await this.#r.connect({
        host,
        port,
        db: this.#spec.db,
        user: this.#spec.user ?? 'admin',
        password: this.#spec.password ?? '',
        timeout: CONNECT_TIMEOUT_MS / 1000,
      })) as Connection;
    }).then(({ conn, host }) => {
      this.#driverHost = host;
      return conn;
    });
    this.#driver = p;
    p.catch(() => {
      if (this.#driver === p) this.#driver = null;
    });
    return p;
  }

  /**
   * Runs a query through the official driver. A connection that failed is dropped and the
   * query run again on another host (once per host): admin queries, sync and read-backs change
   * nothing or are idempotent.
   */
  async #run<T>(build: (r: R) => { run(conn: Connection, opts?: object): Promise<T> }, opts?: object): Promise<T> {
    for (let tries = 0; ; tries++) {
      const p = this.#driverConn();
      const conn = await p;
      try {
        return await build(this.#r).run(conn, opts);
      } catch (err) {
        if ((err as Error).name !== 'ReqlDriverError' || this.#driver !== p) throw err;
        this.#driver = null;
        conn.close().catch(() => {});
        this.#markDown(this.#driverHost, err);
        this.#driverHost = (this.#driverHost + 1) % this.#spec.hosts.length;
        if (tries >= this.#spec.hosts.length) throw err;
      }
    }
  }

  // ── tables ────────────────────────────────────────────────────────────────────────────────

  async ensureTable(table: string, primaryKey: string, options: TableOptions = {}): Promise<void> {
    const { db } = this.#spec;
    this.#primaryKeys.set(table, primaryKey);
    const cluster = options.shards !== undefined || options.replicas !== undefined || options.writeAcks !== undefined;
    if (cluster && this.isWharf)
      throw new LoaderError(
        'WHARF_ERR_INVALID_ARGUMENT',
        `${this.url} is Wharf's driver port, which has no shards, replicas or write acks (give them for a real RethinkDB)`,
      );
    // Created once even when several processes create it at once (rethinkdb-tables.ts).
    const create: Record<string, unknown> = {};
    if (options.shards !== undefined) create.shards = options.shards;
    if (options.replicas !== undefined) create.replicas = options.replicas;
    await ensureRethinkdbTable(this.#r, (q) => this.#run(() => q), db, table, primaryKey, create);
    if (options.writeAcks !== undefined) {
      await this.#run((r) => r.db(db).table(table).config().update({ write_acks: options.writeAcks }));
      // Reconfigured, the table takes writes again once its shards have primaries (bounded: a
      // cluster that cannot elect them fails the load with RethinkDB's own message).
      await this.#run((r) => r.db(db).table(table).wait({ waitFor: 'ready_for_writes', timeout: TABLE_READY_SECONDS }));
    }
  }

  // ── inserts ───────────────────────────────────────────────────────────────────────────────

  /** The insert query's JSON around the base64 text (names and options JSON-escaped). */
  #frameParts(table: string, opts: InsertOptions): [prefix: string, suffix: string] {
    const tableTerm = `[15,[[14,[${JSON.stringify(this.#spec.db)}]],${JSON.stringify(table)}]]`;
    const optargs = JSON.stringify({ durability: opts.durability, conflict: opts.conflict });
    return [`[1,[56,[${tableTerm},[98,[[51,[{"$reql_type$":"BINARY","data":"`, `"},"string"]]]]],${optargs}]]`];
  }

  /** One insert of a JSON array text on the next connection. */
  async #insertArray(table: string, array: Buffer, opts: InsertOptions): Promise<WriteResult> {
    const [prefix, suffix] = this.#frameParts(table, opts);
    return (await this.#onRaw((conn) => conn.runBase64(prefix, array, suffix))) as WriteResult;
  }

  async insert(table: string, payload: Payload, opts: InsertOptions): Promise<WriteResult> {
    // A JSON array laid out by the loader (whose documents it checked one by one).
    const array = payload.format === 'json' ? payload.bytes : arrayOfLines(payload.bytes);
    if (array === null) return { ...EMPTY_RESULT };
    let res: WriteResult;
    try {
      res = await this.#insertArray(table, array, opts);
    } catch (err) {
      // Sent, and then the connection died or the server could not say: resolve it here.
      if (this.#unknownOutcome(err)) return this.#resolve(table, payload, opts);
      if (this.isTransient(err)) throw err; // nothing was sent: the loader sends it again
      if (payload.format === 'json') throw err;
      // Nothing was written. If some lines are not JSON objects, report them by line and send
      // the rest; otherwise the error is not about the documents (a missing table…): rethrow.
      const checked = checkLines(payload.bytes.toString('utf8'));
      if (checked.errors.length === 0 && !checked.blank) throw err;
      const rest: WriteResult =
        checked.good.length > 0 ? await this.#insertArray(table, arrayOf(checked.good), opts) : { ...EMPTY_RESULT };
      return {
        ...rest,
        errors: rest.errors + checked.errors.length,
        first_error: rest.first_error ?? checked.errors[0]?.message,
        document_errors: [
          ...checked.errors,
          ...(rest.document_errors ?? []).map((e) => ({ ...e, index: checked.good[e.index]?.index ?? e.index })),
        ],
      };
    }
    if (res.errors > 0 && UNAVAILABLE.test(res.first_error ?? '')) return this.#resolve(table, payload, opts);
    return res;
  }

  /**
   * A failure after which the batch may or may not have been written: its connection died after
   * it was sent, the server says so (OP_INDETERMINATE), or the cluster could not take it
   * (UNAVAILABLE). Any other answer, ReqlOpFailedError included, means it was not written.
   */
  #unknownOutcome(err: unknown): boolean {
    return (
      (err instanceof ReqlError && err.outcomeUnknown) ||
      (err as Error).name === 'ReqlOpIndeterminateError' ||
      UNAVAILABLE.test((err as Error).message ?? '')
    );
  }

  /**
   * A batch whose outcome is unknown, made definite: read back its keys, count the documents
   * stored as sent, report the conflicting ones, send the others again; repeat until an insert
   * comes back clean. The result is the batch's as if it had been answered once.
   */
  async #resolve(table: string, payload: Payload, opts: InsertOptions): Promise<WriteResult> {
    this.#report.batchesResolved++;
    let docs: BatchDoc[];
    const result: WriteResult = { ...EMPTY_RESULT, document_errors: [] };
    const errors = result.document_errors!;
    if (payload.format === 'json') docs = arrayDocs(payload.bytes);
    else {
      const checked = checkLines(payload.bytes.toString('utf8'));
      docs = checked.good;
      // Lines that are not documents were not written (the query fails whole on them).
      errors.push(...checked.errors);
      if (checked.errors.length > 0 && !result.first_error) result.first_error = checked.errors[0]!.message;
    }
    const pk = this.#primaryKeys.get(table) ?? 'id';
    let pending = docs;
    let resent = false;
    for (let attempt = 0; pending.length > 0; attempt++) {
      // Writes the lost coordinator had passed on may still be landing: give them a moment.
      await sleep(RESOLVE_DELAY_MS[Math.min(attempt, RESOLVE_DELAY_MS.length - 1)]!);
      try {
        let toSend = pending;
        if (opts.conflict === 'error') {
          const keyed = pending.filter((d) => isKey(d.doc[pk]));
          const stored = await this.#readBack(
            table,
            pk,
            keyed.map((d) => d.doc[pk]),
          );
          toSend = [];
          for (const d of pending) {
            const key = d.doc[pk];
            const found = isKey(key) ? stored.get(JSON.stringify(key)) : undefined;
            if (found === undefined) {
              toSend.push(d);
            } else if (sameDocument(found, d.doc)) {
              result.inserted++;
              this.#report.documentsConfirmed++;
            } else {
              const message = `Duplicate primary key \`${pk}\`: the stored document differs from the one sent`;
              errors.push({ index: d.index, message });
              result.errors++;
              result.first_error ??= message;
            }
          }
          this.#report.unkeyedResent += toSend.filter((d) => !isKey(d.doc[pk])).length;
        } else if (attempt === 0) {
          // replace / update: sending the same documents again leaves the same table.
          this.#report.unkeyedResent += toSend.filter((d) => !isKey(d.doc[pk])).length;
        }
        pending = [];
        if (toSend.length === 0) break;
        if (!resent) this.#report.batchesResent++;
        resent = true;
        this.#report.documentsResent += toSend.length;
        let res: WriteResult;
        try {
          res = await this.#insertArray(table, arrayOf(toSend), opts);
        } catch (err) {
          pending = toSend;
          if (this.#unknownOutcome(err) || this.isTransient(err)) continue;
          throw err;
        }
        // Unavailable again, or (conflict 'error', no per-document errors: a real RethinkDB) some
        // documents failed without saying which, e.g. one that landed late from the first
        // attempt: read back again rather than guess.
        const unattributed =
          opts.conflict === 'error' && res.errors > 0 && (res.document_errors ?? []).length < res.errors;
        if (
          res.errors > 0 &&
          (UNAVAILABLE.test(res.first_error ?? '') || (unattributed && CONFLICT.test(res.first_error ?? '')))
        ) {
          pending = toSend;
          continue;
        }
        result.inserted += res.inserted;
        result.replaced += res.replaced;
        result.unchanged += res.unchanged;
        result.errors += res.errors;
        result.first_error ??= res.first_error;
        for (const e of res.document_errors ?? []) errors.push({ ...e, index: toSend[e.index]?.index ?? e.index });
      } catch (err) {
        // The read-back failed (the cluster is still electing a primary): try again.
        if (!(this.isTransient(err) || this.#unknownOutcome(err)) || attempt + 1 >= RESOLVE_ATTEMPTS) throw err;
      }
      if (attempt + 1 >= RESOLVE_ATTEMPTS && pending.length > 0)
        throw new ReqlError(
          'ReqlAvailabilityError',
          `a batch's outcome could not be resolved after ${RESOLVE_ATTEMPTS} attempts`,
          this.#hostName(0),
        );
    }
    if (errors.length === 0) delete result.document_errors;
    else errors.sort((a, b) => a.index - b.index);
    return result;
  }

  /** The stored documents with these primary keys, by JSON text of the key. */
  async #readBack(table: string, pk: string, keys: unknown[]): Promise<Map<string, unknown>> {
    const out = new Map<string, unknown>();
    for (let i = 0; i < keys.length; i += READ_BACK_KEYS) {
      const chunk = keys.slice(i, i + READ_BACK_KEYS);
      const cursor = await this.#run((r) => r.db(this.#spec.db).table(table).getAll(r.args(chunk)), {
        timeFormat: 'raw',
        binaryFormat: 'raw',
      });
      const rows = (await (cursor as unknown as { toArray(): Promise<Record<string, unknown>[]> }).toArray()) ?? [];
      for (const row of rows) out.set(JSON.stringify(row[pk]), row);
    }
    return out;
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

  /** What failed over during the load: nodes lost, connections moved, batches resolved. */
  failoverReport(): FailoverReport {
    return structuredClone(this.#report);
  }

  async close(): Promise<void> {
    const slots = this.#slots;
    this.#slots = [];
    const driver = this.#driver;
    this.#driver = null;
    await Promise.all([
      ...slots.map((p) => p?.then((c) => c.close()).catch(() => {})),
      driver?.then((c) => c.close()).catch(() => {}),
    ]);
  }
}

/** A primary key the read-back can look up: a string or a number (arrays are compound keys). */
function isKey(v: unknown): boolean {
  return typeof v === 'string' || typeof v === 'number' || Array.isArray(v);
}
