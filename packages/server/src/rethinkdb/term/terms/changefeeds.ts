/**
 * Changefeeds (RethinkDB's `changes` term, terms/seq.cc, and its subscriptions, changefeed.cc).
 *
 * `changes` does not evaluate its argument as a query: it reads the argument's terms to learn
 * what to watch, as RethinkDB reads a stream's "changespec":
 * - a table, `between` or `get_all` (primary key or secondary index), under any chain of
 *   per-row transforms (`filter`, `map`, `pluck`, `without`, `merge`, `has_fields`,
 *   `with_fields`, a field): a SEQUENCE_FEED. Each change's old and new document are tested
 *   against the range and run through the transforms separately (RethinkDB's apply_ops): a side
 *   outside the range, filtered out, or failing in a transform becomes null; a change whose two
 *   sides are then null, or equal, is dropped.
 * - `get(key)`: an ATOM_FEED of that one document.
 * - `order_by({index}).limit(n)` on a table or `between` (with `filter`s between them): an
 *   ORDER_BY_LIMIT_FEED. The top n are read again after each batch of changes and the change
 *   stream says what left and entered them (`old_val` and `new_val`, with `include_offsets`
 *   their positions).
 *
 * The source of every feed is the engine's feed of the table (`table.changes({queueSize})`),
 * which every write path reaches, subscribed before any initial value is read; its bounded
 * queue is `changefeed_queue_size`, and what it drops is reported in the stream as RethinkDB's
 * error document. The protocol side (the feed cursor) learns of the feed through the
 * FeedHandle given to `deps.feeds.opened`.
 */
import type { ChangeBatch, ChangeFeed, Key } from '@wharf/engine';
import { opFailed, queryLogic, ReqlRuntimeError, resourceLimit } from '../../errors.js';
import type { FeedHandle } from '../../feed-cursor.js';
import type { Node, TermNode } from '../compiler.js';
import {
  compareDatums,
  type Datum,
  type DatumObject,
  datumsEqual,
  datumTypeName,
  field,
  isPlainObject,
  newObject,
  typeError,
} from '../datum.js';
import type { Evaluator } from '../evaluator.js';
import { T, termName } from '../names.js';
import type { TermFamily } from '../registry.js';
import { Bound, type Env, expectType, Seq, TableRef, type Value } from '../values.js';
import { betweenBoundOptargs } from './admin.js';

/** What the server tells the term about feeds (EvaluatorDeps.feeds). */
export interface FeedDeps {
  /** The largest `changefeed_queue_size` a query may ask for, and the default (the server limit `changefeedQueueSize`). */
  queueSizeLimit: number;
  /** Called once per `changes` term evaluated, with the handle the feed cursor serves. */
  opened?(feed: FeedHandle): void;
  /** The query's global optarg `changefeed_queue_size` (a run option), as sent. */
  globalQueueSize?: unknown;
  /** An engine subscription opened (+1) or closed (-1): the server's `driverFeeds` gauge. */
  subscribed?(delta: 1 | -1): void;
}

/** RethinkDB's default changefeed_queue_size. */
export const DEFAULT_FEED_QUEUE_SIZE = 100_000;

/** ql2.proto Response.ResponseNote */
const Note = { SEQUENCE_FEED: 1, ATOM_FEED: 2, ORDER_BY_LIMIT_FEED: 3, INCLUDES_STATES: 5 } as const;

/** Terms applied to each row that a feed applies to each change's old and new value. */
const ROW_TRANSFORMS: ReadonlySet<number> = new Set([
  T.FILTER,
  T.MAP,
  T.PLUCK,
  T.WITHOUT,
  T.MERGE,
  T.HAS_FIELDS,
  T.WITH_FIELDS,
  T.BRACKET,
  T.GET_FIELD,
]);

/** RethinkDB's errors for streams that cannot be watched (rcheck_transform_visitor_t). */
const NOT_AFTER: Readonly<Record<number, string>> = {
  [T.CONCAT_MAP]: 'Cannot call `changes` after `concat_map`.',
  [T.GROUP]: 'Cannot call `changes` after `group`.',
  [T.DISTINCT]: 'Cannot call `changes` after `distinct`.',
  [T.ZIP]: 'Cannot call `changes` after `zip`.',
};

const AFTER_LIMIT =
  'Changefeeds are not supported on queries that have a transformation following a `limit` term.  Transformations include terms such as `filter`, `map`, `pluck`, etc.  Consider moving the transformation before the `limit` term.';

interface FeedOptions {
  /** false, true, or seconds to gather changes before answering a CONTINUE. */
  squash: boolean | number;
  includeInitial: boolean;
  includeStates: boolean;
  includeTypes: boolean;
  includeOffsets: boolean;
  queueSize: number;
}

export const changefeedTerms: TermFamily = {
  [T.CHANGES]: {
    min: 1,
    max: 1,
    optargs: [
      'squash',
      'changefeed_queue_size',
      'include_initial',
      'include_offsets',
      'include_states',
      'include_types',
    ],
    eval: changes,
  },
};

async function changes(ev: Evaluator, node: TermNode, env: Env | null): Promise<Value> {
  const feedDeps = ev.deps.feeds;
  const opts = await readOptions(
    ev,
    node,
    env,
    feedDeps?.queueSizeLimit ?? DEFAULT_FEED_QUEUE_SIZE,
    feedDeps?.globalQueueSize,
  );
  const spec = await watchSpec(ev, node.args[0] as Node, env);
  const notes: number[] = [
    spec.kind === 'point' ? Note.ATOM_FEED : spec.kind === 'limit' ? Note.ORDER_BY_LIMIT_FEED : Note.SEQUENCE_FEED,
  ];
  if (opts.includeStates) notes.push(Note.INCLUDES_STATES);
  const group: FeedGroup = new FeedGroup(
    notes,
    (): FeedSource => new FeedSource(ev, env, spec, opts, group, feedDeps?.subscribed),
  );
  feedDeps?.opened?.(group);
  const feed = Seq.fromStream(() => group.open(), null, true);
  feed.feed = true;
  return feed;
}

async function readOptions(
  ev: Evaluator,
  node: TermNode,
  env: Env | null,
  queueSizeLimit: number,
  globalQueueSize: unknown,
): Promise<FeedOptions> {
  const bool = async (name: string): Promise<boolean> => {
    const v = await ev.optDatum(node, name, env);
    if (v === undefined) return false;
    if (typeof v !== 'boolean') throw typeError('BOOL', v);
    return v;
  };
  const squashOptarg = await ev.optDatum(node, 'squash', env);
  const squashValue = squashOptarg === undefined ? false : squashOptarg;
  if (typeof squashValue === 'number') {
    if (!(squashValue >= 0)) throw queryLogic('Expected BOOL or a positive NUMBER but found a negative NUMBER.');
  } else if (typeof squashValue !== 'boolean') {
    throw queryLogic(`Expected BOOL or NUMBER but found ${datumTypeName(squashValue)}.`);
  }
  let queueSize = queueSizeLimit;
  // The term's optarg, else the run option (a literal number, as the drivers send it).
  let size = await ev.optDatum(node, 'changefeed_queue_size', env);
  if (size === undefined && globalQueueSize !== undefined) size = literal(globalQueueSize);
  if (size !== undefined) {
    if (typeof size !== 'number') throw typeError('NUMBER', size);
    if (!Number.isInteger(size)) throw queryLogic(`Number not an integer: ${size}`);
    if (size < 1) throw queryLogic(`Illegal changefeed queue size \`${size}\`.  (Must be >= 1.)`);
    if (size > queueSizeLimit)
      throw resourceLimit(
        `Changefeed queue size \`${size}\` is over this server's limit of ${queueSizeLimit} (the server limit changefeedQueueSize).`,
      );
    queueSize = size;
  }
  return {
    squash: squashValue === 0 ? true : squashValue,
    includeInitial: await bool('include_initial'),
    includeStates: await bool('include_states'),
    includeTypes: await bool('include_types'),
    includeOffsets: await bool('include_offsets'),
    queueSize,
  };
}

/** A global optarg's value: a JSON datum, or a DATUM term `[1, value]`. */
function literal(v: unknown): Datum {
  if (Array.isArray(v) && v.length === 2 && v[0] === T.DATUM) return v[1] as Datum;
  return v as Datum;
}

/**
 * Terms whose value is not a function of their arguments: a feed re-runs its transforms on
 * every change, so RethinkDB refuses them there (`r.uuid(str)` is deterministic).
 */
function nonDeterministic(n: Node): boolean {
  switch (n.kind) {
    case 'term':
      if (n.type === T.RANDOM || n.type === T.JAVASCRIPT || n.type === T.HTTP) return true;
      if (n.type === T.UUID && n.args.length === 0) return true;
      return n.args.some(nonDeterministic) || Object.values(n.optargs).some(nonDeterministic);
    case 'func':
      return nonDeterministic(n.body);
    case 'obj':
      return Object.values(n.fields).some(nonDeterministic);
    case 'array':
      return n.items.some(nonDeterministic);
    default:
      return false;
  }
}

// ---- what a feed watches ----

type WatchSpec =
  | { kind: 'point'; table: TableRef; key: Key }
  | {
      kind: 'range';
      table: TableRef;
      /** Whether a document is in the watched selection (before the transforms). */
      contains: (doc: Datum) => Promise<boolean>;
      /** The per-row transforms, innermost first. */
      transforms: TermNode[];
      /** The query without `changes` (the initial values). */
      query: Node;
    }
  | {
      kind: 'limit';
      table: TableRef;
      /** The `order_by({index}).limit(n)` query: the top n. */
      query: Node;
      limit: number;
      /** The `filter`s between `order_by` and `limit`, innermost first. */
      filters: TermNode[];
      /** Whether a document is in the `between` range under the order_by (always, on a table). */
      contains: (doc: Datum) => Promise<boolean>;
      /** A document's place in the order: its index value (undefined: not in the index) and key. */
      sortKey: (doc: Datum) => Promise<SortKey | undefined>;
      desc: boolean;
    };

interface SortKey {
  value: Datum;
  key: Datum;
}

async function watchSpec(ev: Evaluator, arg: Node, env: Env | null): Promise<WatchSpec> {
  const transforms: TermNode[] = [];
  let n = arg;
  while (n.kind === 'term' && ROW_TRANSFORMS.has(n.type) && n.args.length > 0) {
    transforms.unshift(n);
    n = n.args[0] as Node;
  }
  if (n.kind !== 'term') return unsupported(ev, arg, env);
  for (const t of transforms)
    if (t.args.slice(1).some(nonDeterministic) || Object.values(t.optargs).some(nonDeterministic))
      throw queryLogic('Cannot call `changes` after a non-deterministic function.');
  const table = async (node: Node): Promise<TableRef> => {
    const t = await ev.eval(node, env);
    if (!(t instanceof TableRef)) expectType(t, 'TABLE');
    return t;
  };
  switch (n.type) {
    case T.TABLE: {
      const t = await ev.eval(n, env);
      if (!(t instanceof TableRef)) return unsupported(ev, arg, env);
      return { kind: 'range', table: t, contains: async () => true, transforms, query: arg };
    }
    case T.GET: {
      if (transforms.length > 0) return unsupported(ev, arg, env);
      const t = await table(n.args[0] as Node);
      return { kind: 'point', table: t, key: ev.primaryKeyOf(await ev.evalDatum(n.args[1] as Node, env)) };
    }
    case T.BETWEEN: {
      const t = await table(n.args[0] as Node);
      return { kind: 'range', table: t, contains: await betweenTest(ev, n, t, env), transforms, query: arg };
    }
    case T.GET_ALL: {
      const t = await table(n.args[0] as Node);
      return { kind: 'range', table: t, contains: await getAllTest(ev, n, t, env), transforms, query: arg };
    }
    case T.LIMIT: {
      if (transforms.length > 0) throw queryLogic(AFTER_LIMIT);
      const filters: TermNode[] = [];
      let inner = n.args[0] as Node;
      while (inner.kind === 'term' && inner.type === T.FILTER) {
        filters.unshift(inner);
        inner = inner.args[0] as Node;
      }
      const indexNode = inner.kind === 'term' && inner.type === T.ORDER_BY ? inner.optargs.index : undefined;
      if (inner.kind !== 'term' || indexNode === undefined || inner.args.length !== 1) return unsupported(ev, arg, env);
      const base = inner.args[0] as Node;
      if (base.kind !== 'term' || (base.type !== T.TABLE && base.type !== T.BETWEEN)) return unsupported(ev, arg, env);
      const limit = await ev.integer(n.args[1] as Node, env);
      if (limit > ev.deps.arrayLimit)
        throw resourceLimit(
          `Array size limit \`${ev.deps.arrayLimit}\` exceeded.  (\`.limit(X).changes()\` is illegal if X is larger than the array size limit.)`,
        );
      const t = await table(base.type === T.TABLE ? base : (base.args[0] as Node));
      const contains = base.type === T.TABLE ? async () => true : await betweenTest(ev, base, t, env);
      let desc = false;
      let nameNode: Node = indexNode;
      if (indexNode.kind === 'term' && (indexNode.type === T.ASC || indexNode.type === T.DESC)) {
        desc = indexNode.type === T.DESC;
        nameNode = indexNode.args[0] as Node;
      }
      const name = await ev.evalDatum(nameNode, env);
      if (typeof name !== 'string') throw typeError('STRING', name);
      const pk = (doc: Datum): Datum => (isPlainObject(doc) ? (field(doc, t.primaryKey) ?? null) : null);
      let sortKey: (doc: Datum) => Promise<SortKey | undefined>;
      if (name === t.primaryKey) sortKey = async (doc) => ({ value: pk(doc), key: pk(doc) });
      else {
        const src = await ev.indexSource(t, name);
        sortKey = async (doc) => {
          const entries = await ev.indexEntries(t, src, [doc]);
          return entries.length === 0 ? undefined : { value: (entries[0] as { value: Datum }).value, key: pk(doc) };
        };
      }
      return { kind: 'limit', table: t, query: n, limit, filters, contains, sortKey, desc };
    }
    default: {
      const message = NOT_AFTER[n.type];
      if (message !== undefined) throw queryLogic(message);
      return unsupported(ev, arg, env);
    }
  }
}

/** The error for an argument `changes` cannot watch, worded after what it evaluates to. */
async function unsupported(ev: Evaluator, arg: Node, env: Env | null): Promise<never> {
  const v = await ev.eval(arg, env);
  if (v instanceof Seq && v.array !== null && v.table === null)
    throw queryLogic('Cannot call `changes` on an eager stream.');
  const what = arg.kind === 'term' ? termName(arg.type) : 'a value';
  throw queryLogic(
    `Wharf does not support \`changes\` on ${what}: feeds watch a table, \`get\`, \`get_all\`, \`between\`, \`order_by({index}).limit(n)\`, and \`filter\`, \`map\`, \`pluck\`, \`without\`, \`merge\`, \`has_fields\`, \`with_fields\` or a field of those.`,
  );
}

/** Whether a document is in a `between` range (the primary key, or any value of the index). */
async function betweenTest(
  ev: Evaluator,
  node: TermNode,
  t: TableRef,
  env: Env | null,
): Promise<(doc: Datum) => Promise<boolean>> {
  const index = await ev.secondaryIndex(node, t, env);
  const lower = await ev.eval(node.args[1] as Node, env);
  const upper = await ev.eval(node.args[2] as Node, env);
  const { leftBound, rightBound } = await betweenBoundOptargs(ev, node, env);
  const lo = lower === Bound.MIN ? null : lower === Bound.MAX ? Bound.MAX : await ev.datum(lower);
  const hi = upper === Bound.MAX ? null : upper === Bound.MIN ? Bound.MIN : await ev.datum(upper);
  if ((lo === null && lower !== Bound.MIN) || (hi === null && upper !== Bound.MAX))
    throw queryLogic('Cannot use `null` in BETWEEN, use `r.minval` or `r.maxval` to denote unboundedness.');
  const inRange = (v: Datum): boolean => {
    if (lo instanceof Bound || hi instanceof Bound) return false; // an empty range: (maxval, …) or (…, minval)
    if (lo !== null) {
      const c = compareDatums(v, lo);
      if (c < 0 || (c === 0 && leftBound === 'open')) return false;
    }
    if (hi !== null) {
      const c = compareDatums(v, hi);
      if (c > 0 || (c === 0 && rightBound === 'open')) return false;
    }
    return true;
  };
  if (index === null) return async (doc) => isPlainObject(doc) && inRange(field(doc, t.primaryKey) ?? null);
  const src = await ev.indexSource(t, index);
  return async (doc) => (await ev.indexEntries(t, src, [doc])).some((e) => inRange(e.value));
}

/** Whether a document is one `get_all` selects (by primary key, or by any value of the index). */
async function getAllTest(
  ev: Evaluator,
  node: TermNode,
  t: TableRef,
  env: Env | null,
): Promise<(doc: Datum) => Promise<boolean>> {
  const index = await ev.secondaryIndex(node, t, env);
  const wanted: Datum[] = [];
  for (const n of node.args.slice(1)) wanted.push(await ev.evalDatum(n, env));
  for (const w of wanted) if (w === null) throw queryLogic('Cannot use `null` as a key in GET_ALL.');
  if (index === null) {
    for (const w of wanted) ev.primaryKeyOf(w);
    return async (doc) => isPlainObject(doc) && wanted.some((w) => datumsEqual(w, field(doc, t.primaryKey) ?? null));
  }
  const src = await ev.indexSource(t, index);
  return async (doc) => (await ev.indexEntries(t, src, [doc])).some((e) => wanted.some((w) => datumsEqual(w, e.value)));
}

// ---- the feeds of one query ----

/**
 * The FeedHandle of one `changes` term: the sources its stream opened (one, unless the query
 * opens the stream again), whether all of them wait on the engine, and closing them.
 */
class FeedGroup implements FeedHandle {
  readonly notes: readonly number[];
  readonly #make: () => FeedSource;
  readonly #sources = new Set<FeedSource>();
  #closed = false;
  #idle: Waiter | null = null;
  /** A CONTINUE waits for a row. */
  #wanted = false;
  #wantWaiter: Waiter | null = null;

  constructor(notes: readonly number[], make: () => FeedSource) {
    this.notes = notes;
    this.#make = make;
  }

  open(): AsyncIterator<Datum> {
    const source = this.#make();
    if (this.#closed) source.close();
    this.#sources.add(source);
    return source;
  }

  #isIdle(): boolean {
    if (this.#closed) return true;
    if (this.#sources.size === 0) return false;
    for (const s of this.#sources) if (!s.waiting && !s.closed) return false;
    return true;
  }

  idle(): Promise<void> {
    if (this.#isIdle()) return Promise.resolve();
    this.#idle ??= waiter();
    return this.#idle.promise;
  }

  /** A source started or stopped waiting. */
  changed(): void {
    if (this.#idle !== null && this.#isIdle()) {
      this.#idle.resolve();
      this.#idle = null;
    }
  }

  want(waiting: boolean): void {
    this.#wanted = waiting;
    if (waiting && this.#wantWaiter !== null) {
      this.#wantWaiter.resolve();
      this.#wantWaiter = null;
    }
  }

  /** Resolves once a CONTINUE waits for a row, or the feed is closed. */
  wanted(): Promise<void> {
    if (this.#wanted || this.#closed) return Promise.resolve();
    this.#wantWaiter ??= waiter();
    return this.#wantWaiter.promise;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const s of this.#sources) s.close();
    this.changed();
    this.#wantWaiter?.resolve();
    this.#wantWaiter = null;
  }
}

interface Waiter {
  promise: Promise<void>;
  resolve: () => void;
}

function waiter(): Waiter {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

interface RawChange {
  key: Key;
  old: Datum | null;
  new: Datum | null;
}

const keyId = (k: Key): string => (typeof k === 'number' ? `n${k}` : `s${k}`);

/**
 * One subscription: the engine feed, the initial values and states, and the rows ready to be
 * read. Rows are made one engine batch (at most 1024 changes) at a time, when the ready ones
 * are read, so what it holds beyond the engine's bounded queue is one batch's worth.
 */
class FeedSource implements AsyncIterator<Datum> {
  readonly #ev: Evaluator;
  readonly #env: Env | null;
  readonly #spec: WatchSpec;
  readonly #opts: FeedOptions;
  readonly #group: FeedGroup;
  readonly #feed: ChangeFeed<Datum> | null;
  /** Rows ready to be read, in order. */
  readonly #ready: Datum[] = [];
  #phase: 'start' | 'initial' | 'changes' = 'start';
  #initial: AsyncIterator<Datum> | null = null;
  /** The top n of a limit feed, in order, as the client knows it. */
  #top: TopEntry[] = [];
  /** An engine read still running (kept across a squash interval). */
  #next: Promise<IteratorResult<ChangeBatch<Datum>>> | null = null;
  #closed = false;
  #waiting = false;
  readonly #subscribed: ((delta: 1 | -1) => void) | undefined;

  constructor(
    ev: Evaluator,
    env: Env | null,
    spec: WatchSpec,
    opts: FeedOptions,
    group: FeedGroup,
    subscribed?: (delta: 1 | -1) => void,
  ) {
    this.#ev = ev;
    this.#env = env;
    this.#spec = spec;
    this.#opts = opts;
    this.#group = group;
    // Subscribe before any initial value is read, so no change between the two is missed.
    try {
      this.#feed = spec.table.engine.changes({ queueSize: opts.queueSize }) as ChangeFeed<Datum>;
    } catch (err) {
      throw ev.engineError(err, spec.table);
    }
    this.#subscribed = subscribed;
    subscribed?.(1);
  }

  get waiting(): boolean {
    return this.#waiting;
  }

  get closed(): boolean {
    return this.#closed;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#feed?.close();
    this.#subscribed?.(-1);
    void this.#initial?.return?.();
  }

  async return(): Promise<IteratorResult<Datum>> {
    this.close();
    this.#group.changed();
    return { done: true, value: undefined };
  }

  async next(): Promise<IteratorResult<Datum>> {
    while (this.#ready.length === 0) {
      if (this.#closed) return { done: true, value: undefined };
      switch (this.#phase) {
        case 'start':
          await this.#start();
          break;
        case 'initial':
          await this.#readInitial();
          break;
        case 'changes':
          await this.#readChanges();
          break;
      }
    }
    return { done: false, value: this.#ready.shift() as Datum };
  }

  #state(state: 'initializing' | 'ready'): void {
    if (!this.#opts.includeStates) return;
    const d = newObject();
    d.state = state;
    if (this.#opts.includeTypes) d.type = 'state';
    this.#ready.push(d);
  }

  #initialRow(value: Datum): void {
    const d = newObject();
    d.new_val = value;
    if (this.#opts.includeTypes) d.type = 'initial';
    this.#ready.push(d);
  }

  async #start(): Promise<void> {
    const spec = this.#spec;
    if (spec.kind === 'limit') {
      for (const doc of await this.#readTop()) {
        const e = await this.#topEntry(spec, doc);
        if (e) this.#top.push(e);
      }
    }
    if (!this.#opts.includeInitial) {
      this.#state('ready');
      this.#phase = 'changes';
      return;
    }
    this.#state('initializing');
    switch (spec.kind) {
      case 'point': {
        let doc: object | null;
        try {
          doc = await spec.table.engine.get(spec.key);
        } catch (err) {
          throw this.#ev.engineError(err, spec.table);
        }
        this.#initialRow((doc as Datum | null) ?? null);
        this.#state('ready');
        this.#phase = 'changes';
        return;
      }
      case 'limit':
        for (const e of this.#top) this.#initialRow(e.doc);
        this.#state('ready');
        this.#phase = 'changes';
        return;
      case 'range':
        this.#initial = this.#ev.seq(await this.#ev.eval(spec.query, this.#env)).open();
        this.#phase = 'initial';
        return;
    }
  }

  /** Initial values of a range feed, read as the query without `changes` streams them. */
  async #readInitial(): Promise<void> {
    const it = this.#initial as AsyncIterator<Datum>;
    for (let i = 0; i < 256; i++) {
      const r = await it.next();
      if (r.done) {
        this.#initial = null;
        this.#state('ready');
        this.#phase = 'changes';
        return;
      }
      this.#initialRow(r.value);
    }
  }

  /** Wait for the engine's next batch (gathering for `squash` seconds), and turn it into rows. */
  async #readChanges(): Promise<void> {
    const feed = this.#feed as ChangeFeed<Datum>;
    this.#waiting = true;
    this.#group.changed();
    let first: IteratorResult<ChangeBatch<Datum>>;
    try {
      if (this.#next === null) await this.#group.wanted();
      if (this.#closed) return;
      this.#next ??= feed.next();
      first = await this.#next;
      this.#next = null;
    } finally {
      this.#waiting = false;
    }
    if (first.done) {
      if (this.#closed) return;
      this.close();
      // The engine ends a feed when its table is dropped or the database closes.
      throw opFailed('Changefeed aborted (unavailable).');
    }
    let changes = first.value.changes as RawChange[];
    let skipped = first.value.skipped;
    if (typeof this.#opts.squash === 'number' && this.#opts.squash > 0) {
      ({ changes, skipped } = await this.#gather(changes, skipped, this.#opts.squash));
    }
    // An overflow clears what the client has not read yet, as RethinkDB clears its queue: the
    // error comes first, then the changes after it.
    if (skipped > 0) {
      skipped += changes.length;
      changes = [];
    }
    if (this.#opts.squash !== false && this.#spec.kind !== 'limit') changes = squash(changes);
    await this.#emit(changes);
    if (skipped > 0) {
      const d = newObject();
      d.error = `Changefeed cache over array size limit, skipped ${skipped} elements.`;
      this.#ready.push(d);
    }
  }

  /**
   * `squash: N`: keep reading the engine for N seconds, merging changes by key, so one CONTINUE
   * answers with the net change of each document. Ends early once half the queue size is held.
   */
  async #gather(
    changes: RawChange[],
    skipped: number,
    seconds: number,
  ): Promise<{ changes: RawChange[]; skipped: number }> {
    const feed = this.#feed as ChangeFeed<Datum>;
    let held = squash(changes);
    let timer: NodeJS.Timeout | undefined;
    const timeUp = new Promise<'time'>((resolve) => {
      timer = setTimeout(() => resolve('time'), seconds * 1000);
    });
    try {
      while (held.length <= this.#opts.queueSize / 2 && !this.#closed) {
        this.#next ??= feed.next();
        const r = await Promise.race([this.#next, timeUp]);
        if (r === 'time') break;
        this.#next = null;
        if (r.done) break;
        skipped += r.value.skipped;
        held = squash([...held, ...(r.value.changes as RawChange[])]);
      }
    } finally {
      clearTimeout(timer);
    }
    return { changes: held, skipped };
  }

  async #emit(changes: RawChange[]): Promise<void> {
    const spec = this.#spec;
    if (spec.kind === 'limit') {
      for (const c of changes) if (!this.#closed) await this.#limitChange(spec, c);
      return;
    }
    for (const c of changes) {
      if (this.#closed) return;
      if (spec.kind === 'point') {
        if (!sameKey(c.key, spec.key)) continue;
        this.#change(c.old, c.new);
        continue;
      }
      const oldVal = c.old !== null && (await spec.contains(c.old)) ? await this.#transform(c.old) : null;
      const newVal = c.new !== null && (await spec.contains(c.new)) ? await this.#transform(c.new) : null;
      if (oldVal === null && newVal === null) continue;
      if (spec.transforms.length > 0 && datumsEqual(oldVal, newVal)) continue;
      this.#change(oldVal, newVal);
    }
  }

  #change(oldVal: Datum | null, newVal: Datum | null, offsets?: { old: number | null; new: number | null }): void {
    const d = newObject();
    d.old_val = oldVal;
    if (offsets) d.old_offset = offsets.old;
    d.new_val = newVal;
    if (offsets) d.new_offset = offsets.new;
    if (this.#opts.includeTypes) d.type = oldVal === null ? 'add' : newVal === null ? 'remove' : 'change';
    this.#ready.push(d);
  }

  /** A document through the feed's transforms (RethinkDB's apply_ops): null when filtered out or failing. */
  async #transform(doc: Datum): Promise<Datum | null> {
    const spec = this.#spec;
    if (spec.kind !== 'range' || spec.transforms.length === 0) return doc;
    let rows: Datum = [doc];
    try {
      for (const t of spec.transforms) {
        const applied: TermNode = { ...t, args: [{ kind: 'value', value: rows, bt: t.bt }, ...t.args.slice(1)] };
        rows = await this.#ev.datum(await this.#ev.eval(applied, this.#env));
        if (!Array.isArray(rows)) return null;
      }
    } catch (err) {
      if (err instanceof ReqlRuntimeError) return null;
      throw err;
    }
    return Array.isArray(rows) && rows.length === 1 ? (rows[0] as Datum) : null;
  }

  async #readTop(): Promise<DatumObject[]> {
    const spec = this.#spec as Extract<WatchSpec, { kind: 'limit' }>;
    const v = await this.#ev.eval(spec.query, this.#env);
    return (await this.#ev.materialize(this.#ev.seq(v))) as DatumObject[];
  }

  /**
   * One change to the table through the top n (RethinkDB's limit_manager_t): the changed
   * document leaves the set, enters it (pushing out the last one when full), or moves in it;
   * when the set is left short, the best document outside it (read again through the query)
   * takes the place. Each change says what left (`old_val`) and what entered (`new_val`).
   */
  async #limitChange(spec: LimitSpec, c: RawChange): Promise<void> {
    const top = this.#top;
    const keyOf = (d: Datum): string =>
      JSON.stringify(isPlainObject(d) ? (field(d, spec.table.primaryKey) ?? null) : null);
    const id = JSON.stringify(c.key);
    const was = top.findIndex((e) => keyOf(e.doc) === id);
    const before = was === -1 ? null : (top[was] as TopEntry);
    if (was !== -1) top.splice(was, 1);
    let entered: TopEntry | null = null;
    if (c.new !== null) {
      const candidate = await this.#topEntry(spec, c.new);
      const last = top[top.length - 1];
      if (candidate && (top.length < spec.limit || (last !== undefined && this.#before(spec, candidate, last))))
        entered = candidate;
    }
    if (entered) this.#insertTop(spec, entered);
    let out: TopEntry | null = before;
    let outAt: number | null = was === -1 ? null : was;
    if (top.length > spec.limit) {
      // Only when the changed document was outside the set: a full set got one more.
      outAt = spec.limit - 1;
      out = top.pop() as TopEntry;
    }
    if (before !== null && entered === null && top.length < spec.limit) {
      // Left short: the best document outside the set, as the query reads it now.
      const inTop = new Set(top.map((e) => keyOf(e.doc)));
      for (const doc of await this.#readTop()) {
        if (inTop.has(keyOf(doc)) || keyOf(doc) === id) continue;
        const e = await this.#topEntry(spec, doc);
        if (e) {
          entered = e;
          this.#insertTop(spec, e);
        }
        break;
      }
    }
    if (out === null && entered === null) return;
    if (out !== null && entered !== null && datumsEqual(out.doc, entered.doc)) return;
    this.#change(
      out?.doc ?? null,
      entered?.doc ?? null,
      this.#opts.includeOffsets ? { old: outAt, new: entered ? top.indexOf(entered) : null } : undefined,
    );
  }

  /** A document's entry in the top n, or null when the query would not list it (range, filters, index). */
  async #topEntry(spec: LimitSpec, doc: Datum): Promise<TopEntry | null> {
    if (!(await spec.contains(doc))) return null;
    for (const f of spec.filters) {
      const applied: TermNode = { ...f, args: [{ kind: 'value', value: [doc], bt: f.bt }, ...f.args.slice(1)] };
      try {
        const rows = await this.#ev.datum(await this.#ev.eval(applied, this.#env));
        if (!Array.isArray(rows) || rows.length !== 1) return null;
      } catch (err) {
        if (err instanceof ReqlRuntimeError) return null;
        throw err;
      }
    }
    const sort = await spec.sortKey(doc);
    return sort === undefined ? null : { doc, sort };
  }

  /** Whether `a` comes before `b` in the feed's order (index value, then primary key). */
  #before(spec: LimitSpec, a: TopEntry, b: TopEntry): boolean {
    const c = compareDatums(a.sort.value, b.sort.value) || compareDatums(a.sort.key, b.sort.key);
    return spec.desc ? c > 0 : c < 0;
  }

  #insertTop(spec: LimitSpec, e: TopEntry): void {
    const top = this.#top;
    let i = top.length;
    while (i > 0 && this.#before(spec, e, top[i - 1] as TopEntry)) i--;
    top.splice(i, 0, e);
  }
}

type LimitSpec = Extract<WatchSpec, { kind: 'limit' }>;

interface TopEntry {
  doc: Datum;
  sort: SortKey;
}

function sameKey(a: Key, b: Key): boolean {
  return a === b;
}

/**
 * RethinkDB's squashing queue: one change per key, its first old value and last new value, in
 * the order keys first changed; a change that ends where it started is dropped.
 */
function squash(changes: RawChange[]): RawChange[] {
  if (changes.length < 2) return changes;
  const byKey = new Map<string, RawChange>();
  for (const c of changes) {
    const k = keyId(c.key);
    const prev = byKey.get(k);
    if (prev === undefined) byKey.set(k, { ...c });
    else prev.new = c.new;
  }
  const out: RawChange[] = [];
  for (const c of byKey.values()) {
    if (c.old === null && c.new === null) continue;
    if (c.old !== null && c.new !== null && datumsEqual(c.old, c.new)) continue;
    out.push(c);
  }
  return out;
}
