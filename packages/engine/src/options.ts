/**
 * Options and arguments, checked in JS before anything reaches the engine, with messages that
 * name the argument (as better-sqlite3 does). The engine checks again; these checks exist so the
 * common mistakes read well.
 */
import type { Conflict, Durability, Key, NativeOpenOptions } from './binding.ts';
import { invalidArgument } from './errors.ts';
import { defaultPoolReads } from './gate.ts';

export type { Conflict, Durability, Key };

export interface OpenOptions {
  /**
   * Bytes per preallocated journal segment of a new database (default 64 MiB, at least 64 KiB).
   * An existing database keeps the size it was created with: another value is ignored and said
   * in `db.openNotes` (it shapes the files on disk, so it is never used to read old ones).
   */
  segmentSize?: number;
  /** Journal bytes between checkpoints (default 256 MiB). */
  checkpointBytes?: number;
  /** Soft writes reach disk within this many milliseconds (default 200). */
  flushIntervalMs?: number;
  /**
   * After a group that merged several hard writers, the longest the committer waits for them to
   * come back (default 1 ms; a lone writer never waits). Servers whose clients are a network
   * round trip away want several milliseconds; 0 disables the wait.
   */
  groupCommitWindowMs?: number;
  /**
   * Bytes for memtables and the block cache (default 256 MiB, at least 4 MiB). Tables may be far
   * larger: they live in run files, and only this much of them is kept in memory.
   */
  memoryBudget?: number;
  /** Merge a table's run files when this many share a level (default 4, at least 2). */
  mergeFanIn?: number;
  /** For tests and benchmarks of pacing: checkpoints and merges sleep this long per MiB, as on a slow disk. */
  backgroundDelayPerMibMs?: number;
  /** Default durability of writes through this handle (default 'hard'). */
  durability?: Durability;
  /**
   * While hard writes or a `sync()` are unanswered, the event loop keeps polling for their answers
   * for up to this many microseconds after the last was sent, instead of sleeping (default 1000;
   * 0: sleep at once). Waking a sleeping thread costs a sizeable part of a fast fdatasync;
   * polling costs CPU while the disk syncs.
   */
  spinWaitUs?: number;
  /**
   * Reads on libuv's thread pool at once: gets that miss memory, scans, counts, index queries
   * (default: all the pool but one thread, 3 of its default 4). The pool also parses write
   * batches; the other reads wait their turn in order.
   */
  poolReads?: number;
}

export interface CreateTableOptions {
  /** The field holding each document's key (default 'id'). */
  primaryKey?: string;
}

export interface WriteOptions {
  /** 'hard' resolves once the write is durable, 'soft' once it is visible. Default: the database's. */
  durability?: Durability;
  /** What to do when a document's key exists: reject that document (default), replace it, or merge into it. */
  conflict?: Conflict;
  /** Resolve only once every index of the table reflects the write (indexes otherwise catch up just after). */
  waitForIndexes?: boolean;
}

/** A value an index holds: RethinkDB orders them booleans < null < numbers < strings. */
export type IndexValue = string | number | boolean | null;

export interface CreateIndexOptions {
  /** Index each element of an array value (RethinkDB's multi index). */
  multi?: boolean;
}

export interface IndexQueryOptions {
  /** Wait until the index reflects every write acknowledged before the query, and is built (default true). */
  fresh?: boolean;
}

export interface BetweenOptions extends IndexQueryOptions {
  /** Whether the lower bound is included (default 'closed') and the upper (default 'open'), as in ReQL. */
  leftBound?: 'closed' | 'open';
  rightBound?: 'open' | 'closed';
  limit?: number;
  /** Descending index order. */
  reverse?: boolean;
}

/**
 * A filter predicate the engine evaluates on stored documents (`core/src/predicate.rs` has the
 * rules): a field path compared with a constant, ReQL's object-subset match (fields in order;
 * a nested `{ match }` matches a nested object), and `and`, `or`, `not`.
 */
export type FilterPredicate =
  | { cmp: 'eq' | 'ne' | 'lt' | 'le' | 'gt' | 'ge'; path: string[]; value: IndexValue }
  | { match: MatchField[] }
  | { and: FilterPredicate[] }
  | { or: FilterPredicate[] }
  | { not: FilterPredicate };

/** One field of an object-subset match: its name and the value wanted (or a nested match). */
export type MatchField = [string, IndexValue | { match: MatchField[] }];

export interface FilterSpec {
  predicate: FilterPredicate;
  /**
   * A document missing a field the predicate reads: `'skip'` (default) leaves it out, `'keep'`
   * keeps it, `'defer'` returns it in `deferred` for the caller to decide.
   */
  missing?: 'skip' | 'keep' | 'defer';
}

/** One range of a paged read: of primary keys, or of index values (null: unbounded). */
export interface PageRange {
  lower: Key | IndexValue;
  lowerClosed: boolean;
  upper: Key | IndexValue;
  upperClosed: boolean;
}

/** Where the next page starts: after a primary key, or after an index entry (range, entry). */
export type PageResume = Key | [number, string];

export interface PageQuery {
  /** A secondary index; absent: the primary key (then `ranges` holds exactly one range). */
  index?: string;
  /** Read one after the other (each in key or index order). */
  ranges: PageRange[];
  /** A previous page's `after`. */
  after?: PageResume | null;
  /** Documents to return at most (kept and deferred ones). */
  limit: number;
  /** Documents to read at most in this call (default 16384). */
  examine?: number;
  reverse?: boolean;
  /** Index reads: wait until the index reflects every acknowledged write (default true). */
  fresh?: boolean;
  /** Count the kept documents instead of returning them (deferred ones are still returned). */
  count?: boolean;
  filter?: FilterSpec;
}

export interface Page<Doc> {
  rows: Doc[];
  /** Positions in `rows` of the documents the filter left to the caller. */
  deferred: number[];
  /** Kept documents counted (with `count`). */
  counted: number;
  /** Documents the engine read for this page. */
  examined: number;
  /** Where the next page starts; null once the read is exhausted. */
  after: PageResume | null;
}

export interface IndexWaitOptions {
  /** Give up (WHARF_ERR_INDEX_NOT_READY) after this long (default: one hour). */
  timeoutMs?: number;
}

export interface DeleteOptions {
  durability?: Durability;
}

export interface ScanOptions {
  gt?: Key;
  gte?: Key;
  lt?: Key;
  lte?: Key;
  /** At most this many documents. */
  limit?: number;
  /** Descending key order. */
  reverse?: boolean;
}

/** RethinkDB's primary-key limit, which the engine keeps (`MAX_KEY_BYTES` in `core/src/key.rs`). */
export const MAX_KEY_BYTES = 127;

const DEFAULT_SPIN_WAIT_US = 1000;
const DURABILITIES: readonly Durability[] = ['hard', 'soft'];
const CONFLICTS: readonly Conflict[] = ['error', 'replace', 'update'];

export function checkDir(dir: unknown): string {
  if (typeof dir !== 'string' || dir === '') {
    throw invalidArgument(`dir must be a non-empty string (a directory path); got ${describe(dir)}`);
  }
  return dir;
}

/** What the JS side of a handle takes from `OpenOptions`. */
export interface HandleOptions {
  durability: Durability;
  spinWaitUs: number;
  poolReads: number;
}

export function openOptions(options: unknown): { native: NativeOpenOptions; handle: HandleOptions } {
  const o = optionsObject(options, 'options', [
    'segmentSize',
    'checkpointBytes',
    'flushIntervalMs',
    'groupCommitWindowMs',
    'memoryBudget',
    'mergeFanIn',
    'backgroundDelayPerMibMs',
    'durability',
    'spinWaitUs',
    'poolReads',
  ]);
  const native: NativeOpenOptions = {};
  if (o.segmentSize !== undefined) native.segmentSize = positiveInteger(o.segmentSize, 'options.segmentSize');
  if (o.checkpointBytes !== undefined) {
    native.checkpointBytes = positiveInteger(o.checkpointBytes, 'options.checkpointBytes');
  }
  if (o.flushIntervalMs !== undefined) {
    native.flushIntervalMs = positiveInteger(o.flushIntervalMs, 'options.flushIntervalMs');
  }
  if (o.groupCommitWindowMs !== undefined) {
    native.groupCommitWindowMs = millisecondsUpTo(o.groupCommitWindowMs, 1000, 'options.groupCommitWindowMs');
  }
  if (o.memoryBudget !== undefined) {
    native.memoryBudget = positiveInteger(o.memoryBudget, 'options.memoryBudget');
    if (native.memoryBudget < 4 << 20)
      throw invalidArgument(`options.memoryBudget must be at least 4 MiB (4194304 bytes); got ${native.memoryBudget}`);
  }
  if (o.mergeFanIn !== undefined) {
    native.mergeFanIn = positiveInteger(o.mergeFanIn, 'options.mergeFanIn');
    if (native.mergeFanIn < 2) throw invalidArgument(`options.mergeFanIn must be at least 2; got ${native.mergeFanIn}`);
  }
  if (o.backgroundDelayPerMibMs !== undefined) {
    native.backgroundDelayPerMibMs = millisecondsUpTo(
      o.backgroundDelayPerMibMs,
      10_000,
      'options.backgroundDelayPerMibMs',
    );
  }
  const durability = o.durability === undefined ? 'hard' : oneOf(o.durability, DURABILITIES, 'options.durability');
  let spinWaitUs = DEFAULT_SPIN_WAIT_US;
  if (o.spinWaitUs !== undefined) {
    spinWaitUs = o.spinWaitUs as number;
    if (typeof spinWaitUs !== 'number' || !(spinWaitUs >= 0 && spinWaitUs <= 1_000_000)) {
      throw invalidArgument(
        `options.spinWaitUs must be a number of microseconds from 0 to 1000000; got ${describe(o.spinWaitUs)}`,
      );
    }
  }
  const poolReads = o.poolReads === undefined ? defaultPoolReads() : positiveInteger(o.poolReads, 'options.poolReads');
  return { native, handle: { durability, spinWaitUs, poolReads } };
}

/** Table names and primary-key fields: the engine's rule (`check_name` in `core/src/table.rs`). */
const NAME = /^[A-Za-z0-9_.-]{1,127}$/;

export function tableName(name: unknown, argument = 'name'): string {
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw invalidArgument(
      `${argument} must be a table name of 1 to 127 letters, digits, '_', '-' or '.'; got ${describe(name)}`,
    );
  }
  return name;
}

export function createTableOptions(options: unknown): { primaryKey: string } {
  const o = optionsObject(options, 'options', ['primaryKey']);
  if (o.primaryKey === undefined) return { primaryKey: 'id' };
  if (typeof o.primaryKey !== 'string' || !NAME.test(o.primaryKey)) {
    throw invalidArgument(
      `options.primaryKey must be a field name of 1 to 127 letters, digits, '_', '-' or '.'; got ${describe(o.primaryKey)}`,
    );
  }
  return { primaryKey: o.primaryKey };
}

/** Write options with the database's default durability filled in. Allocation-free when absent. */
export function writeOptions(
  options: unknown,
  durability: Durability,
): { durability: Durability; conflict: Conflict; waitForIndexes: boolean } {
  if (options === undefined) return durability === 'hard' ? HARD_ERROR : SOFT_ERROR;
  const o = optionsObject(options, 'options', WRITE_OPTIONS);
  const chosen = o.durability === undefined ? durability : oneOf(o.durability, DURABILITIES, 'options.durability');
  const conflict = o.conflict === undefined ? 'error' : oneOf(o.conflict, CONFLICTS, 'options.conflict');
  const waitForIndexes = o.waitForIndexes === undefined ? false : boolean(o.waitForIndexes, 'options.waitForIndexes');
  // The usual options as shared constants: this runs for every single-document insert.
  if (conflict === 'error' && !waitForIndexes) return chosen === 'hard' ? HARD_ERROR : SOFT_ERROR;
  return { durability: chosen, conflict, waitForIndexes };
}

const WRITE_OPTIONS = ['durability', 'conflict', 'waitForIndexes'] as const;

const HARD_ERROR = Object.freeze({ durability: 'hard', conflict: 'error', waitForIndexes: false } as const);
const SOFT_ERROR = Object.freeze({ durability: 'soft', conflict: 'error', waitForIndexes: false } as const);

function boolean(value: unknown, argument: string): boolean {
  if (typeof value !== 'boolean') throw invalidArgument(`${argument} must be true or false; got ${describe(value)}`);
  return value;
}

/** An index field: a field name or a dotted path (`address.city`). */
export function indexField(field: unknown): string {
  if (typeof field !== 'string' || field === '' || field.length > 255 || field.split('.').some((p) => p === '')) {
    throw invalidArgument(`field must be a field name or a dotted path such as 'address.city'; got ${describe(field)}`);
  }
  return field;
}

export function createIndexOptions(options: unknown): { multi: boolean } {
  if (options === undefined) return { multi: false };
  const o = optionsObject(options, 'options', ['multi']);
  return { multi: o.multi === undefined ? false : boolean(o.multi, 'options.multi') };
}

export function indexValue(value: unknown, argument: string): IndexValue {
  if (
    value === null ||
    typeof value === 'string' ||
    typeof value === 'boolean' ||
    (typeof value === 'number' && Number.isFinite(value))
  ) {
    return value;
  }
  throw invalidArgument(`${argument} must be a string, a finite number, a boolean or null; got ${describe(value)}`);
}

export function indexQueryOptions(options: unknown): { fresh: boolean } {
  if (options === undefined) return { fresh: true };
  const o = optionsObject(options, 'options', ['fresh']);
  return { fresh: o.fresh === undefined ? true : boolean(o.fresh, 'options.fresh') };
}

export function betweenOptions(options: unknown): {
  fresh: boolean;
  lowerClosed: boolean;
  upperClosed: boolean;
  limit: number | undefined;
  reverse: boolean;
} {
  const o =
    options === undefined
      ? {}
      : optionsObject(options, 'options', ['fresh', 'leftBound', 'rightBound', 'limit', 'reverse']);
  const bound = (v: unknown, name: string, dflt: 'open' | 'closed') =>
    (v === undefined ? dflt : oneOf(v, ['open', 'closed'] as const, name)) === 'closed';
  return {
    fresh: o.fresh === undefined ? true : boolean(o.fresh, 'options.fresh'),
    lowerClosed: bound(o.leftBound, 'options.leftBound', 'closed'),
    upperClosed: bound(o.rightBound, 'options.rightBound', 'open'),
    limit: o.limit === undefined ? undefined : positiveInteger(o.limit, 'options.limit'),
    reverse: o.reverse === undefined ? false : boolean(o.reverse, 'options.reverse'),
  };
}

export function indexWaitOptions(options: unknown): number {
  if (options === undefined) return 3_600_000;
  const o = optionsObject(options, 'options', ['timeoutMs']);
  return o.timeoutMs === undefined ? 3_600_000 : positiveInteger(o.timeoutMs, 'options.timeoutMs');
}

export function deleteOptions(options: unknown, durability: Durability): Durability {
  if (options === undefined) return durability;
  const o = optionsObject(options, 'options', ['durability']);
  return o.durability === undefined ? durability : oneOf(o.durability, DURABILITIES, 'options.durability');
}

export interface ScanRange {
  lower: Key | undefined;
  lowerInclusive: boolean;
  upper: Key | undefined;
  upperInclusive: boolean;
  limit: number | undefined;
  reverse: boolean;
}

export interface ChangesOptions {
  /** Changes held for a reader that falls behind; more are dropped and counted. Default 100000. */
  queueSize?: number;
}

/** RethinkDB's default `changefeed_queue_size`. */
export const DEFAULT_CHANGES_QUEUE = 100_000;

export function changesOptions(options: unknown): { queueSize: number } {
  const o = optionsObject(options, 'options', ['queueSize']);
  const q = o.queueSize ?? DEFAULT_CHANGES_QUEUE;
  if (!Number.isInteger(q) || (q as number) < 1 || (q as number) > 0xffff_ffff) {
    throw invalidArgument(`options.queueSize must be an integer from 1 to 4294967295; got ${describe(q)}`);
  }
  return { queueSize: q as number };
}

export function scanOptions(options: unknown): ScanRange {
  const o = optionsObject(options, 'options', ['gt', 'gte', 'lt', 'lte', 'limit', 'reverse']);
  if (o.gt !== undefined && o.gte !== undefined) throw invalidArgument('options.gt and options.gte cannot both be set');
  if (o.lt !== undefined && o.lte !== undefined) throw invalidArgument('options.lt and options.lte cannot both be set');
  const lowerName = o.gt !== undefined ? 'options.gt' : 'options.gte';
  const upperName = o.lt !== undefined ? 'options.lt' : 'options.lte';
  const lower = o.gt ?? o.gte;
  const upper = o.lt ?? o.lte;
  let limit: number | undefined;
  if (o.limit !== undefined) {
    if (!Number.isInteger(o.limit) || (o.limit as number) < 0 || (o.limit as number) > 0xffff_ffff) {
      throw invalidArgument(`options.limit must be an integer from 0 to 4294967295; got ${describe(o.limit)}`);
    }
    limit = o.limit as number;
  }
  if (o.reverse !== undefined && typeof o.reverse !== 'boolean') {
    throw invalidArgument(`options.reverse must be a boolean; got ${describe(o.reverse)}`);
  }
  return {
    lower: lower === undefined ? undefined : checkKey(lower, lowerName),
    lowerInclusive: o.gt === undefined,
    upper: upper === undefined ? undefined : checkKey(upper, upperName),
    upperInclusive: o.lt === undefined,
    limit,
    reverse: o.reverse === true,
  };
}

export function checkKey(key: unknown, argument = 'key'): Key {
  if (typeof key === 'number') {
    if (!Number.isFinite(key)) throw invalidArgument(`${argument} must be a finite number or a string; got ${key}`);
    return key;
  }
  if (typeof key === 'string') {
    // Cheap upper bound first: a UTF-8 encoding is at most 3 bytes per UTF-16 unit.
    if (key.length * 3 > MAX_KEY_BYTES && Buffer.byteLength(key) > MAX_KEY_BYTES) {
      throw invalidArgument(
        `${argument} is ${Buffer.byteLength(key)} bytes long in UTF-8, over the limit of ${MAX_KEY_BYTES}`,
      );
    }
    return key;
  }
  // Arrays, booleans, times and binary (RethinkDB's other key types): the engine checks and
  // encodes them (`Key::from_value`).
  if (
    typeof key === 'boolean' ||
    Array.isArray(key) ||
    (key !== null && typeof key === 'object' && '$reql_type$' in key)
  )
    return key as Key;
  throw invalidArgument(
    `${argument} must be a string, a finite number, a boolean, an array or a time/binary object; got ${describe(key)}`,
  );
}

export function checkKeys(keys: unknown, argument = 'keys'): Key[] {
  if (!Array.isArray(keys)) throw invalidArgument(`${argument} must be an array of keys; got ${describe(keys)}`);
  return keys.map((key, i) => checkKey(key, `${argument}[${i}]`));
}

/** Bulk input: a Buffer (or any Uint8Array, not copied) or a string. */
export function bulkData(data: unknown, argument = 'data'): string | Buffer {
  if (typeof data === 'string' || Buffer.isBuffer(data)) return data;
  if (data instanceof Uint8Array) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  throw invalidArgument(`${argument} must be a Buffer, a Uint8Array or a string; got ${describe(data)}`);
}

function optionsObject(options: unknown, argument: string, known: readonly string[]): Record<string, unknown> {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw invalidArgument(`${argument} must be an object; got ${describe(options)}`);
  }
  // `for…in` rather than `Object.keys`: no array per call (options are checked on every insert).
  for (const name in options) {
    if (!Object.hasOwn(options, name)) continue;
    if (!known.includes(name)) {
      const hint = known.find((k) => similar(k, name));
      throw invalidArgument(
        `unknown option ${argument}.${name}` +
          (hint ? `; did you mean ${hint}?` : `; known options: ${known.join(', ')}`),
      );
    }
  }
  return options as Record<string, unknown>;
}

/** A number of milliseconds from 0 to `max` (a fraction allowed), else an error naming `name`. */
function millisecondsUpTo(ms: unknown, max: number, name: string): number {
  if (typeof ms !== 'number' || !(ms >= 0 && ms <= max)) {
    throw invalidArgument(`${name} must be a number of milliseconds from 0 to ${max}; got ${describe(ms)}`);
  }
  return ms;
}

function positiveInteger(value: unknown, argument: string): number {
  if (!Number.isSafeInteger(value) || (value as number) <= 0) {
    throw invalidArgument(`${argument} must be a positive integer; got ${describe(value)}`);
  }
  return value as number;
}

function oneOf<T extends string>(value: unknown, allowed: readonly T[], argument: string): T {
  if (!allowed.includes(value as T)) {
    throw invalidArgument(`${argument} must be ${allowed.map((a) => `'${a}'`).join(' or ')}; got ${describe(value)}`);
  }
  return value as T;
}

/** Same letters ignoring case and underscores, or one is a prefix of the other: a likely typo. */
function similar(a: string, b: string): boolean {
  const norm = (s: string) => s.toLowerCase().replace(/[_-]/g, '');
  const [x, y] = [norm(a), norm(b)];
  return x === y || (y.length >= 4 && (x.startsWith(y) || y.startsWith(x)));
}

export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  return typeof value === 'object' ? 'an object' : typeof value;
}

/** A page query checked, as the JSON text the binding reads. */
export function pageQueryJson(query: unknown): string {
  const q = optionsObject(query, 'query', [
    'index',
    'ranges',
    'after',
    'limit',
    'examine',
    'reverse',
    'fresh',
    'count',
    'filter',
  ]);
  const index = q.index === undefined ? null : tableName(q.index, 'query.index');
  if (!Array.isArray(q.ranges)) throw invalidArgument(`query.ranges must be an array; got ${describe(q.ranges)}`);
  if (index === null && q.ranges.length !== 1)
    throw invalidArgument(`query.ranges must hold exactly one range of primary keys; got ${q.ranges.length}`);
  const ranges = q.ranges.map((r: unknown, i: number) => {
    const at = `query.ranges[${i}]`;
    const o = optionsObject(r, at, ['lower', 'lowerClosed', 'upper', 'upperClosed']);
    const side = (v: unknown, name: string) =>
      v === null || v === undefined
        ? null
        : index === null
          ? checkKey(v, `${at}.${name}`)
          : indexValue(v, `${at}.${name}`);
    return [
      side(o.lower, 'lower'),
      boolean(o.lowerClosed ?? false, `${at}.lowerClosed`),
      side(o.upper, 'upper'),
      boolean(o.upperClosed ?? false, `${at}.upperClosed`),
    ];
  });
  let after: unknown = null;
  if (q.after !== undefined && q.after !== null) {
    if (Array.isArray(q.after)) {
      const [i, entry] = q.after as unknown[];
      if (q.after.length !== 2 || !Number.isSafeInteger(i) || typeof entry !== 'string')
        throw invalidArgument(`query.after must be a key or a page's [range, entry]; got ${describe(q.after)}`);
      after = [i, entry];
    } else after = checkKey(q.after, 'query.after');
  }
  let filter: unknown = null;
  if (q.filter !== undefined) {
    const f = optionsObject(q.filter, 'query.filter', ['predicate', 'missing']);
    // The predicate's shape is checked by the engine, whose errors name the part at fault.
    filter = {
      predicate: f.predicate,
      missing:
        f.missing === undefined ? 'skip' : oneOf(f.missing, ['skip', 'keep', 'defer'] as const, 'query.filter.missing'),
    };
  }
  return JSON.stringify({
    index,
    ranges,
    after,
    limit: positiveInteger(q.limit, 'query.limit'),
    examine: q.examine === undefined ? 16_384 : positiveInteger(q.examine, 'query.examine'),
    reverse: q.reverse === undefined ? false : boolean(q.reverse, 'query.reverse'),
    fresh: q.fresh === undefined ? true : boolean(q.fresh, 'query.fresh'),
    count: q.count === undefined ? false : boolean(q.count, 'query.count'),
    filter,
  });
}
