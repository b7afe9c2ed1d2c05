/**
 * `rethinkdb://[user:pass@]host[:port][,host2…]/db` through the official `rethinkdb` driver:
 * the same code loads Wharf's driver port or a real RethinkDB cluster. One connection per
 * concurrent batch, spread round-robin over the hosts given. Each batch is one query,
 * `r.db(db).table(t).insert(r.json(r.binary(bytes).coerceTo('string')), {durability, conflict})`,
 * so the driver never builds a term per document, and the text travels as base64: as a string
 * it would be escaped by the driver and unescaped by the server quote by quote, which cost both
 * ends more CPU than the base64 (RethinkDB 2.4 and Wharf's driver port both take it).
 *
 * The target takes NDJSON payloads: the batch's lines joined with commas inside `[` `]` are the
 * JSON array text, with no document parsed or checked in this process (a check per document
 * here costs the load more than the whole query). A line that is not JSON, or a blank one, fails
 * the whole query on either server (`Failed to parse … as JSON`) before anything is written; only
 * then are the lines checked here, the bad ones reported by line (`document_errors`) and the
 * others sent again. JSON that is not an object is that document's error on both servers.
 *
 * A real RethinkDB reports only `errors` and `first_error` for a batch, not which documents
 * failed: the loader then reports those errors against the batch's input range ('unattributed').
 */
import type { IndexSpec, WriteResult } from '../types.js';
import { ensureRethinkdbTable } from './rethinkdb-tables.js';
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

const EMPTY_RESULT: WriteResult = { inserted: 0, replaced: 0, unchanged: 0, deleted: 0, skipped: 0, errors: 0 };

/**
 * NDJSON as the bytes of a JSON array: `[`, the lines with their newlines made commas, `]`. Null
 * when there is no document. A blank line makes an empty element, which fails the query like a
 * bad line does (`checkLines` then drops it).
 */
export function arrayOfLines(ndjson: Buffer): Buffer | null {
  let end = ndjson.length;
  while (end > 0 && isSpace(ndjson[end - 1] as number)) end--;
  if (end === 0) return null;
  const out = Buffer.allocUnsafe(end + 2);
  out[0] = 0x5b;
  ndjson.copy(out, 1, 0, end);
  out[end + 1] = 0x5d;
  for (let i = out.indexOf(0x0a, 1); i !== -1; i = out.indexOf(0x0a, i + 1)) out[i] = 0x2c;
  return out;
}

function isSpace(c: number): boolean {
  return c === 0x0a || c === 0x0d || c === 0x20 || c === 0x09;
}

/**
 * Each line of an NDJSON batch checked in this process: the JSON objects, and an error for
 * every other non-blank line with its 0-based line (blank lines count, as the engine counts them).
 */
export function checkLines(ndjson: string): {
  good: string[];
  errors: { index: number; message: string }[];
  blank: boolean;
} {
  const good: string[] = [];
  const errors: { index: number; message: string }[] = [];
  let blank = false;
  const lines = ndjson.split('\n');
  // The text after the last newline is a line only when it holds something.
  if (lines.length > 1 && lines[lines.length - 1]!.trim() === '') lines.pop();
  lines.forEach((line, index) => {
    if (line.trim() === '') {
      blank = true;
      return;
    }
    let doc: unknown;
    try {
      doc = JSON.parse(line);
    } catch (err) {
      errors.push({ index, message: `invalid JSON: ${(err as Error).message}` });
      return;
    }
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc))
      errors.push({ index, message: 'a document must be a JSON object' });
    else good.push(line);
  });
  return { good, errors, blank };
}

export class RethinkdbTarget implements Target {
  readonly kind = 'rethinkdb' as const;
  readonly payloadFormat = 'ndjson' as const;
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
    await ensureRethinkdbTable(this.#r, (q) => this.#run(() => q), this.#spec.db, table, primaryKey);
  }

  async insert(table: string, payload: Payload, opts: InsertOptions): Promise<WriteResult> {
    const options = { durability: opts.durability, conflict: opts.conflict };
    const send = (json: R) =>
      this.#run((r) => r.db(this.#spec.db).table(table).insert(r.json(json), options)) as Promise<WriteResult>;
    // The text as base64 (r.binary), so the driver need not escape every quote of it.
    const sendBytes = (bytes: Buffer) => send(this.#r.binary(bytes).coerceTo('string'));
    // A JSON array laid out by the loader (whose documents it checked one by one).
    if (payload.format === 'json') return sendBytes(payload.bytes);
    const array = arrayOfLines(payload.bytes);
    if (array === null) return { ...EMPTY_RESULT };
    try {
      return await sendBytes(array);
    } catch (err) {
      if (this.isTransient(err)) throw err;
      // Nothing was written. If some lines are not JSON objects, report them by line and send
      // the rest; otherwise the error is not about the documents (a missing table…): rethrow.
      const checked = checkLines(payload.bytes.toString('utf8'));
      if (checked.errors.length === 0 && !checked.blank) throw err;
      const res: WriteResult =
        checked.good.length > 0 ? await send(`[${checked.good.join(',')}]`) : { ...EMPTY_RESULT };
      return {
        ...res,
        errors: res.errors + checked.errors.length,
        first_error: res.first_error ?? checked.errors[0]?.message,
        document_errors: [...checked.errors, ...(res.document_errors ?? [])],
      };
    }
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
