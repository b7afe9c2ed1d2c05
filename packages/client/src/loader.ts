/**
 * createLoader(): write / load / end, with backpressure.
 *
 * Documents go into the open batch; it closes on count, bytes or time, whichever comes first.
 * Closed batches wait in a queue of at most one or two, then run on up to `concurrency` slots
 * (fewer while the target only queues them: window.ts).
 * `write()` resolves at once while the queue is empty and waits otherwise, so memory is bounded
 * by (concurrency + 2) batches whatever the input size. The flush timer never waits for a slot:
 * it only closes the batch into the queue, and each completion pumps the queue.
 *
 * Acknowledgements come back out of order; outcomes are released in input order (inflight.ts),
 * so document errors and the resume mark are always reported in input order.
 */
import { performance } from 'node:perf_hooks';
import {
  type Batch,
  BatchBuilder,
  BlockBatchBuilder,
  type DocumentInput,
  isBlankByte,
  type PayloadFormat,
  PayloadPool,
  positionOf,
  rawOf,
  segmentOf,
  toJsonText,
  truncateRaw,
} from './batcher.js';
import { errorCode, LoaderError } from './errors.js';
import { Inflight, type InflightEntry } from './inflight.js';
import { aggregateIntervals, LatencyRecorder, latencyOf } from './latency.js';
import { DEFAULT_RETRY, type RetryOptions, withRetry } from './retry.js';
import { createTarget, DEFAULT_TARGET, parseTarget, redact, type Target } from './targets/target.js';
import type {
  Conflict,
  DocumentError,
  Durability,
  IndexBuild,
  IndexSpec,
  Interval,
  LatencyMs,
  LoadSummary,
  Mark,
  SourcePosition,
  TableOptions,
  TargetStats,
  WriteResult,
} from './types.js';
import { InflightWindow } from './window.js';

export interface LoaderOptions {
  /** `embedded:DIR` (default `embedded:./wharf-data`), `wharf://host:port`, `rethinkdb://…/db`, or a Target. */
  target?: string | Target;
  table: string;
  /**
   * For an `embedded:DIR` target string: the engine's `Database.open` options, e.g.
   * `{ memoryBudget: 256 << 20 }` (bytes for memtables and the block cache). Ignored otherwise.
   */
  engineOptions?: Record<string, unknown>;
  /** Primary key used when the loader creates the table. Default `id`. */
  primaryKey?: string;
  /** Create the table when it does not exist. Default true. */
  createTable?: boolean;
  /** A batch closes at this many documents. Default 5000. */
  batchSize?: number;
  /** … or at this many payload bytes. Default 4 MiB. */
  batchBytes?: number;
  /** … or this long after its first document. Default 50 ms; 0 disables the timer. */
  flushMs?: number;
  /** Batches in flight at once, at most. Default 4. */
  concurrency?: number;
  /**
   * Keep fewer batches in flight while the target only queues them (it is the bottleneck), as
   * estimated from their latencies: the same throughput, without the queueing in every insert's
   * latency (window.ts). Default true; false keeps `concurrency` in flight.
   */
  adaptiveConcurrency?: boolean;
  /** Default 'soft': each batch is acknowledged when visible, and end() makes one final sync. */
  durability?: Durability;
  /** Make one sync at end() (soft durability only). Default true. */
  finalSync?: boolean;
  /**
   * Seed 000's newbie load, for comparison: one document per insert, hard durability, one at a
   * time. Overrides batchSize, concurrency, durability, flushMs.
   */
  naive?: boolean;
  /** Default 'error': a document whose key exists is rejected (and reported). */
  conflict?: Conflict;
  /**
   * rethinkdb:// to a real RethinkDB only: the table's shards and replicas when the loader
   * creates it, and its write acks ('single' | 'majority'), set on every load that gives them.
   * Refused (WHARF_ERR_INVALID_ARGUMENT) for the other targets.
   */
  tableOptions?: TableOptions;
  /**
   * Secondary indexes to build once every document is loaded and synced: one bulk build each
   * instead of an index update per batch (RethinkDB's import does the same). end() creates them,
   * waits until each is ready, and reports each build's time in `summary.indexes`.
   */
  indexes?: IndexSpec[];
  /** Retries of transient failures (lost connections), with exponential backoff. false: none. */
  retry?: Partial<RetryOptions> | false;
  /** Stop (end() throws WHARF_ERR_MAX_ERRORS) once more documents than this were rejected. Default: never. */
  maxErrors?: number;
  /** Throughput interval. Default 1000 ms. */
  intervalMs?: number;
  /** How often the durable checkpoint is advanced (a sync, then onCheckpoint). Default 1000 ms. */
  checkpointMs?: number;
  /** Each rejected document, in input order. */
  onDocumentError?: (err: DocumentError) => void;
  /** The acknowledged prefix of the input advanced (visible; durable only with durability 'hard'). */
  onProgress?: (mark: Mark) => void;
  /**
   * The durable prefix advanced: everything before `mark` is acknowledged and durable (`durable`
   * is false only for the last call when the load ends without a final sync).
   */
  onCheckpoint?: (mark: Mark, durable: boolean) => void | Promise<void>;
  /** Called synchronously before a batch is sent; `high` is where the batch ends in the input. */
  onDispatch?: (high: { seq: number; line?: number; offset?: number }) => void;
  /** Each interval as it closes. */
  onInterval?: (interval: Interval) => void;
  /** Each retry of a batch or request. */
  onRetry?: (err: unknown, attempt: number, delayMs: number) => void;
}

/** Position of a document in the input, and whether it is a re-send (see `replay`). */
export interface WriteMeta extends SourcePosition {
  /**
   * The document may already be stored (it is re-sent after a resume): a primary-key conflict on
   * it counts as written ("present"), not as a rejection.
   */
  replay?: boolean;
}

/**
 * Where a block (`pushBlock`) came from in the input. Its documents' own positions are computed
 * from these only when one is reported (a rejected document).
 */
export interface BlockMeta {
  /** 1-based input line of the block's first document. */
  line?: number;
  /**
   * Lines from one document to the next in the input: 1 (one document per line, NDJSON; the
   * default) or 0 (all on one input line, e.g. a JSON array written on one line).
   */
  lineStep?: 0 | 1;
  /** Input byte offset just past the block's last document: where a resumed read continues. */
  offset?: number;
  /**
   * Where a document's own end offset lies: past its line's newline (NDJSON, the default), or
   * just past its JSON text (the elements of a JSON array, whose commas became blanks).
   */
  endOfDoc?: 'newline' | 'value';
  /** The block's documents may already be stored (re-sent after a resume): see WriteMeta.replay. */
  replay?: boolean;
}

/** A live snapshot for progress displays. */
export interface LoaderProgress {
  read: number;
  written: number;
  rejected: number;
  inFlight: number;
  /** Batches allowed in flight now (`concurrency`, or fewer: `adaptiveConcurrency`). */
  inFlightLimit: number;
  elapsedSeconds: number;
  /** Latency of the interval in progress. */
  current: LatencyMs;
  /** The last closed interval. */
  lastInterval: Interval | undefined;
}

export interface Loader {
  /** Hands one document over (an object, or its JSON text). Resolves when the loader can take more. */
  write(doc: DocumentInput, meta?: WriteMeta): Promise<void>;
  /**
   * Low-level write: returns false when the caller must wait (`whenWritable()`) before the next
   * push. Throws if the loader failed or ended.
   */
  push(doc: DocumentInput, meta?: WriteMeta): boolean;
  /**
   * Hands over a block of documents at once: `docs` lines of JSON text, one document per line,
   * each line ending with '\n' (the last one may lack it), no blank lines, the bytes as they are
   * in the input (so a document's offset can be computed from the block's). The block is copied;
   * the loader keeps no entry per document: a rejected document's line, offset and text are found
   * from the block when the target reports it. All its documents share the block's hand-over
   * time as the start of their latency. Returns like push().
   */
  pushBlock(bytes: Uint8Array, docs: number, meta?: BlockMeta): boolean;
  /**
   * Records a document the caller could not read (a bad CSV row, a non-object array element…):
   * it takes its place in the input order, counts as read and rejected, and is reported through
   * onDocumentError like any other. Returns like push().
   */
  reject(reason: string, meta?: WriteMeta & { raw?: string }): boolean;
  /** Resolves when push() may be called again; rejects if the loader failed. */
  whenWritable(): Promise<void>;
  /** Writes every document of an iterable (with backpressure). Does not call end(). */
  load(docs: AsyncIterable<DocumentInput> | Iterable<DocumentInput>): Promise<void>;
  /**
   * Closes the open batch, waits for every batch, makes the final sync, closes a target the
   * loader opened, and returns the summary. Throws a LoaderError carrying `.summary` when the
   * load did not write every document it was given (less those rejected).
   */
  end(): Promise<LoadSummary>;
  /** Stops taking documents; batches in flight finish; end() then throws WHARF_ERR_ABORTED. */
  abort(reason?: string): void;
  /** Live counters. */
  progress(): LoaderProgress;
  /** Documents and latency since the previous call (e.g. for a status line every 10 s). */
  takeWindow(): { docs: number; latency: LatencyMs };
  /** Resolves once the target is open and the table exists. */
  ready(): Promise<void>;
}

/** What one batch came to: the summary's counts (`LoadSummary`) for its documents. */
interface Outcome
  extends Omit<LoadSummary['documents'], 'read'>,
    Pick<LoadSummary, 'inserted' | 'replaced' | 'unchanged'> {
  firstSeq: number;
  count: number;
  errors: DocumentError[];
  lastLine: number;
  lastOffset: number;
}

const CONFLICT_MESSAGE = /duplicate primary key|already exists|conflict/i;

function optNumber(name: string, v: number | undefined, dflt: number, min: number): number {
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || Number.isNaN(v) || v < min) {
    throw new LoaderError('WHARF_ERR_INVALID_ARGUMENT', `${name} must be a number ≥ ${min}, got ${String(v)}`);
  }
  return v;
}

function optEnum<T extends string>(name: string, v: T | undefined, allowed: readonly T[], dflt: T): T {
  if (v === undefined) return dflt;
  if (!allowed.includes(v)) {
    throw new LoaderError(
      'WHARF_ERR_INVALID_ARGUMENT',
      `${name} must be one of ${allowed.join(', ')}, got ${String(v)}`,
    );
  }
  return v;
}

const INDEX_NAME = /^[A-Za-z0-9_.-]{1,127}$/;

/** Checks index specs: names by the table-name rule, dotted field paths, no name twice. Pure. */
export function checkIndexSpecs(specs: unknown): IndexSpec[] {
  if (specs === undefined) return [];
  if (!Array.isArray(specs))
    throw new LoaderError('WHARF_ERR_INVALID_ARGUMENT', 'indexes must be an array of { name, field, multi? }');
  const seen = new Set<string>();
  return specs.map((spec: unknown, i) => {
    const s = spec as Partial<IndexSpec> | null;
    if (s === null || typeof s !== 'object')
      throw new LoaderError('WHARF_ERR_INVALID_ARGUMENT', `indexes[${i}] must be { name, field, multi? }`);
    if (typeof s.name !== 'string' || !INDEX_NAME.test(s.name)) {
      throw new LoaderError(
        'WHARF_ERR_INVALID_ARGUMENT',
        `indexes[${i}].name must be 1 to 127 letters, digits, '_', '-' or '.'; got ${JSON.stringify(s.name)}`,
      );
    }
    if (typeof s.field !== 'string' || s.field.length === 0 || s.field.split('.').some((p) => p.length === 0)) {
      throw new LoaderError(
        'WHARF_ERR_INVALID_ARGUMENT',
        `indexes[${i}].field must be a field path such as city or address.city; got ${JSON.stringify(s.field)}`,
      );
    }
    if (s.multi !== undefined && typeof s.multi !== 'boolean')
      throw new LoaderError('WHARF_ERR_INVALID_ARGUMENT', `indexes[${i}].multi must be a boolean`);
    if (seen.has(s.name))
      throw new LoaderError('WHARF_ERR_INVALID_ARGUMENT', `index ${JSON.stringify(s.name)} is given twice`);
    seen.add(s.name);
    return { name: s.name, field: s.field, multi: s.multi === true };
  });
}

/** Options with defaults applied and checked. Pure. */
export function resolveLoaderOptions(o: LoaderOptions) {
  if (typeof o.table !== 'string' || o.table.length === 0) {
    throw new LoaderError('WHARF_ERR_INVALID_ARGUMENT', 'table must be a non-empty string');
  }
  const naive = o.naive === true;
  const durability = naive ? 'hard' : optEnum('durability', o.durability, ['soft', 'hard'], 'soft');
  return {
    table: o.table,
    primaryKey: o.primaryKey ?? 'id',
    createTable: o.createTable !== false,
    naive,
    batchSize: naive ? 1 : Math.floor(optNumber('batchSize', o.batchSize, 5000, 1)),
    batchBytes: Math.floor(optNumber('batchBytes', o.batchBytes, defaultBatchBytes(o.target), 64)),
    flushMs: naive ? 0 : optNumber('flushMs', o.flushMs, 50, 0),
    concurrency: naive ? 1 : Math.floor(optNumber('concurrency', o.concurrency, 4, 1)),
    adaptiveConcurrency: o.adaptiveConcurrency !== false,
    durability: durability as Durability,
    finalSync: o.finalSync !== false,
    conflict: optEnum('conflict', o.conflict, ['error', 'replace', 'update'], 'error'),
    retry: o.retry === false ? { ...DEFAULT_RETRY, retries: 0 } : { ...DEFAULT_RETRY, ...o.retry },
    maxErrors: optNumber('maxErrors', o.maxErrors, Number.POSITIVE_INFINITY, 0),
    intervalMs: optNumber('intervalMs', o.intervalMs, 1000, 10),
    checkpointMs: optNumber('checkpointMs', o.checkpointMs, 1000, 10),
    indexes: checkIndexSpecs(o.indexes),
    tableOptions: checkTableOptions(o.tableOptions),
  };
}

/** Seed 002's write unit for a RethinkDB cluster (~900 KB soft inserts); 4 MiB otherwise. */
export const CLUSTER_BATCH_BYTES = 900 << 10;

/** The default batchBytes: a rethinkdb:// target string naming several hosts is a cluster. */
function defaultBatchBytes(target: LoaderOptions['target']): number {
  if (typeof target !== 'string' || !/^rethinkdb:/i.test(target)) return 4 << 20;
  const spec = parseTarget(target);
  return spec.kind === 'rethinkdb' && spec.hosts.length > 1 ? CLUSTER_BATCH_BYTES : 4 << 20;
}

function checkTableOptions(o: TableOptions | undefined): TableOptions {
  if (o === undefined) return {};
  const out: TableOptions = {};
  const int = (name: 'shards' | 'replicas', max: number) => {
    const v = o[name];
    if (v === undefined) return;
    if (!Number.isInteger(v) || v < 1 || v > max)
      throw new LoaderError('WHARF_ERR_INVALID_ARGUMENT', `${name} must be an integer from 1 to ${max} (got ${v})`);
    out[name] = v;
  };
  int('shards', 64);
  int('replicas', 64);
  if (o.writeAcks !== undefined)
    out.writeAcks = optEnum<'single' | 'majority'>('writeAcks', o.writeAcks, ['single', 'majority'], 'single');
  return out;
}

/** Line of the last document of a batch and the input offset just past it (NaN: unknown). */
function endOf(batch: Batch): { line: number; offset: number } {
  const segments = batch.segments;
  if (!segments) return { line: batch.lines[batch.count - 1]!, offset: batch.offsets[batch.count - 1]! };
  const seg = segments[segments.length - 1]!;
  return { line: seg.line + Math.max(0, seg.docs - 1) * seg.lineStep, offset: seg.offset };
}

/** A block's position, defaults applied (NaN: unknown). */
interface BlockPosition {
  line: number;
  lineStep: 0 | 1;
  offset: number;
  endOfDoc: 'newline' | 'value';
  replay: boolean;
}

const EMPTY_RESULT: WriteResult = { inserted: 0, replaced: 0, unchanged: 0, deleted: 0, skipped: 0, errors: 0 };
const num = (x: number): number | undefined => (Number.isNaN(x) ? undefined : x);

export function createLoader(options: LoaderOptions): Loader {
  return new LoaderImpl(options);
}

class LoaderImpl implements Loader {
  readonly #o: ReturnType<typeof resolveLoaderOptions>;
  readonly #cb: LoaderOptions;
  #target: Target | null = null;
  readonly #ownsTarget: boolean;
  readonly #targetName: string;
  readonly #ready: Promise<void>;
  /** The open batch: of documents (push) or of blocks (pushBlock). */
  #builder: BatchBuilder | BlockBatchBuilder | null = null;
  /** Payload buffers shared by the builders, so switching between them keeps the spares. */
  readonly #payloads = new PayloadPool();
  readonly #format: PayloadFormat;
  #maxPayload = Number.POSITIVE_INFINITY;
  readonly #queue: Batch[] = [];
  readonly #inflight: Inflight<Outcome>;
  readonly #window: InflightWindow | null;
  readonly #latency = new LatencyRecorder();
  #seq = 0;
  #failed: LoaderError | null = null;
  #ended = false;
  #ending: Promise<LoadSummary> | null = null;
  #flushTimer: NodeJS.Timeout | null = null;
  #intervalTimer: NodeJS.Timeout | null = null;
  #checkpointTimer: NodeJS.Timeout | null = null;
  #checkpointing: Promise<void> | null = null;
  #durableSeq = -1;
  #waiters: { resolve: () => void; reject: (e: Error) => void }[] = [];
  #drainWaiters: (() => void)[] = [];
  #lastInterval: Interval | undefined;
  #batches = 0;
  #retries = 0;
  #dispatched = false;
  /** Everything completed (released or not). */
  readonly #totals = { written: 0, rejected: 0, present: 0, missing: 0, inserted: 0, replaced: 0, unchanged: 0 };
  /** The acknowledged prefix. */
  readonly #mark: Mark = { seq: 0, written: 0, rejected: 0, present: 0 };

  constructor(options: LoaderOptions) {
    this.#o = resolveLoaderOptions(options);
    this.#cb = options;
    this.#inflight = new Inflight<Outcome>(this.#o.concurrency);
    this.#window =
      this.#o.adaptiveConcurrency && this.#o.concurrency > 1
        ? new InflightWindow(this.#o.concurrency, performance.now())
        : null;
    const t = options.target ?? DEFAULT_TARGET;
    this.#ownsTarget = typeof t === 'string';
    this.#targetName = typeof t === 'string' ? redact(t) : t.url;
    // Checked now, so a bad target string fails createLoader() itself. Every built-in target takes NDJSON.
    if (typeof t === 'string') parseTarget(t);
    this.#format = typeof t === 'string' ? 'ndjson' : t.payloadFormat;
    this.#ready = this.#open(t);
    this.#ready.catch((err) => this.#fail(err));
  }

  async #open(t: string | Target): Promise<void> {
    const target = typeof t === 'string' ? await createTarget(t, this.#cb.engineOptions) : t;
    this.#target = target;
    this.#maxPayload = target.maxPayloadBytes ?? Number.POSITIVE_INFINITY;
    const tableOptions = this.#o.tableOptions;
    const clusterOptions = Object.keys(tableOptions).length > 0;
    if (clusterOptions && !target.tableOptions)
      throw new LoaderError(
        'WHARF_ERR_INVALID_ARGUMENT',
        `shards, replicas and write acks need a rethinkdb:// target (a real RethinkDB), not ${target.url}`,
      );
    await target.open({ concurrency: this.#o.concurrency });
    if (this.#o.createTable || clusterOptions)
      await target.ensureTable(this.#o.table, this.#o.primaryKey, clusterOptions ? tableOptions : undefined);
  }

  ready(): Promise<void> {
    return this.#ready;
  }

  // ── intake ────────────────────────────────────────────────────────────────────────────────

  /** The open batch of documents; an open batch of blocks is closed first. */
  #builderFor(): BatchBuilder {
    if (this.#builder instanceof BatchBuilder) return this.#builder;
    this.#seal();
    this.#builder = new BatchBuilder(this.#format, this.#o.batchSize, this.#o.batchBytes, this.#seq, this.#payloads);
    return this.#builder;
  }

  /** The open batch of blocks; an open batch of documents is closed first. */
  #blockBuilderFor(): BlockBatchBuilder {
    if (this.#builder instanceof BlockBatchBuilder) return this.#builder;
    this.#seal();
    this.#builder = new BlockBatchBuilder(this.#o.batchSize, this.#o.batchBytes, this.#seq, this.#payloads);
    return this.#builder;
  }

  pushBlock(bytes: Uint8Array, docs: number, meta?: BlockMeta): boolean {
    if (this.#failed) throw this.#failed;
    if (this.#ended) throw new LoaderError('WHARF_ERR_LOADER_CLOSED', 'pushBlock() after end()');
    if (!(Number.isInteger(docs) && docs >= 0))
      throw new LoaderError('WHARF_ERR_INVALID_ARGUMENT', `docs must be an integer ≥ 0, got ${String(docs)}`);
    if (docs === 0) return this.#writable();
    const pos = {
      line: meta?.line ?? Number.NaN,
      lineStep: meta?.lineStep ?? 1,
      offset: meta?.offset ?? Number.NaN,
      endOfDoc: meta?.endOfDoc ?? 'newline',
      replay: meta?.replay === true,
    };
    // A JSON-array target validates each document (one bad element fails its whole payload), and
    // a block larger than a batch or than the target takes is cut at line ends.
    if (this.#format !== 'ndjson' || bytes.length + 1 > Math.min(this.#o.batchBytes, this.#maxPayload - 1))
      return this.#pushLines(bytes, docs, pos);
    return this.#appendInBatches(bytes, docs, pos);
  }

  /**
   * A block that would take the open batch past batchSize documents is cut where the batch is
   * full: only the lines up to the cut are looked at.
   */
  #appendInBatches(bytes: Uint8Array, docs: number, pos: BlockPosition): boolean {
    let rest = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let left = docs;
    let line = pos.line;
    // The input offset of rest[0]: the block's offset is where its last document ends.
    let end = rest.length;
    if (pos.endOfDoc === 'value') while (end > 0 && isBlankByte(rest[end - 1]!)) end--;
    let restStart = pos.offset - end;
    for (;;) {
      const room = this.#o.batchSize - (this.#builder instanceof BlockBatchBuilder ? this.#builder.count : 0);
      if (left <= room) return this.#appendBlock(rest, left, { ...pos, line });
      // Past the room-th line: counted from the start, or back from the end when that is nearer.
      let cut = 0;
      if (room <= left - room) for (let k = 0; k < room; k++) cut = rest.indexOf(0x0a, cut) + 1;
      else {
        let nl = rest[rest.length - 1] === 0x0a ? rest.length - 1 : rest.length; // ends the last line
        for (let k = room; k < left; k++) nl = rest.lastIndexOf(0x0a, nl - 1);
        cut = nl + 1;
      }
      end = cut;
      if (pos.endOfDoc === 'value') while (end > 0 && isBlankByte(rest[end - 1]!)) end--;
      this.#appendBlock(rest.subarray(0, cut), room, { ...pos, line, offset: restStart + end });
      rest = rest.subarray(cut);
      restStart += cut;
      left -= room;
      line += room * pos.lineStep;
    }
  }

  #appendBlock(bytes: Uint8Array, docs: number, pos: BlockPosition): boolean {
    const now = performance.now();
    if (!this.#latency.started) this.#startClock(now);
    const b = this.#blockBuilderFor();
    if (b.count > 0 && b.bytes + bytes.length + 1 > this.#o.batchBytes) this.#seal();
    const first = b.count === 0;
    b.append(bytes, docs, now, pos.line, pos.lineStep, pos.offset, pos.endOfDoc, pos.replay);
    this.#seq += docs;
    return this.#added(b, first);
  }

  /**
   * A block taken line by line: sent as documents (a JSON-array target), or re-cut into blocks of
   * at most a batch's bytes (a line larger than the target takes is rejected with its position).
   */
  #pushLines(bytes: Uint8Array, docs: number, pos: BlockPosition): boolean {
    const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const limit = Math.min(this.#o.batchBytes, this.#maxPayload - 1);
    // Line k of the block is [starts[k], starts[k + 1]).
    const starts = new Uint32Array(docs + 1);
    for (let k = 1, p = 0; k < docs; k++) {
      p = buf.indexOf(0x0a, p) + 1;
      starts[k] = p > 0 ? p : buf.length;
    }
    starts[docs] = buf.length;
    const textEnd = (k: number): number => {
      let e = starts[k + 1]!;
      while (e > starts[k]! && isBlankByte(buf[e - 1]!)) e--;
      return e;
    };
    const docEnd = (k: number): number => (pos.endOfDoc === 'value' ? textEnd(k) : starts[k + 1]!);
    // The payload holds the input's bytes one for one: the block's offset is its last document's end.
    const inputStart = pos.offset - docEnd(docs - 1);
    const offsetOf = (k: number): number => (k === docs - 1 ? pos.offset : inputStart + docEnd(k));
    let writable = true;
    let first = 0; // the first line of the piece being gathered
    const flush = (end: number) => {
      if (end > first) {
        writable = this.#appendInBatches(buf.subarray(starts[first]!, starts[end]!), end - first, {
          ...pos,
          line: pos.line + first * pos.lineStep,
          offset: offsetOf(end - 1),
        });
      }
      first = end;
    };
    for (let k = 0; k < docs; k++) {
      const line = pos.line + k * pos.lineStep;
      if (this.#format !== 'ndjson') {
        let s = starts[k]!;
        const e = textEnd(k);
        while (s < e && isBlankByte(buf[s]!)) s++;
        writable = this.push(buf.subarray(s, e), { line: num(line), offset: num(offsetOf(k)), replay: pos.replay });
      } else if (starts[k + 1]! - starts[k]! + 1 > this.#maxPayload - 1) {
        flush(k);
        first = k + 1;
        writable = this.#rejectTooLarge(buf.subarray(starts[k]!, textEnd(k)), line, offsetOf(k), pos.replay);
      } else if (k > first && starts[k + 1]! - starts[first]! > limit) flush(k);
    }
    if (this.#format === 'ndjson') flush(docs);
    return writable;
  }

  #rejectTooLarge(text: Uint8Array, line: number, offset: number, replay: boolean): boolean {
    const now = performance.now();
    if (!this.#latency.started) this.#startClock(now);
    const b = this.#builder ?? this.#blockBuilderFor();
    const first = b.count === 0;
    this.#seq++;
    b.reject(
      {
        kind: 'invalid',
        reason: `document of ${text.length} bytes is larger than the target accepts (${this.#maxPayload} bytes)`,
        raw: truncateRaw(text),
        line: num(line),
        offset: num(offset),
      },
      now,
      replay,
    );
    return this.#added(b, first);
  }

  push(doc: DocumentInput, meta?: WriteMeta): boolean {
    if (this.#failed) throw this.#failed;
    if (this.#ended) throw new LoaderError('WHARF_ERR_LOADER_CLOSED', 'write() after end()');
    const now = performance.now();
    if (!this.#latency.started) this.#startClock(now);
    const b = this.#builderFor();
    this.#seq++;
    const replay = meta?.replay === true;
    // Fast path: one line of JSON text as bytes (what `wharf import` hands over for NDJSON).
    if (
      doc instanceof Uint8Array &&
      this.#format === 'ndjson' &&
      doc.length + 2 <= this.#maxPayload &&
      doc.indexOf(0x0a) === -1
    ) {
      if (b.count > 0 && b.bytes + doc.length + 1 > this.#o.batchBytes) this.#seal();
      b.append(doc, doc.length, now, meta?.line, meta?.offset, replay);
      return this.#added(b, b.count === 1);
    }
    const r = toJsonText(doc, this.#format === 'json');
    if ('error' in r) {
      b.reject(
        {
          kind: 'invalid',
          reason: r.error,
          raw: r.raw === undefined ? undefined : truncateRaw(r.raw),
          line: meta?.line,
          offset: meta?.offset,
        },
        now,
        replay,
      );
    } else {
      const text = r.text;
      const size = typeof text === 'string' ? Buffer.byteLength(text) : text.length;
      if (size + 2 > this.#maxPayload) {
        b.reject(
          {
            kind: 'invalid',
            reason: `document of ${size} bytes is larger than the target accepts (${this.#maxPayload} bytes)`,
            raw: truncateRaw(text),
            line: meta?.line,
            offset: meta?.offset,
          },
          now,
          replay,
        );
      } else {
        if (b.count > 0 && b.bytes + size + 1 > this.#o.batchBytes) this.#seal();
        b.append(text, size, now, meta?.line, meta?.offset, replay);
      }
    }
    return this.#added(b, b.count === 1);
  }

  /** After entries were added: close the batch when full, or arm the flush timer for its first entry. */
  #added(b: BatchBuilder | BlockBatchBuilder, first: boolean): boolean {
    if (b.count >= this.#o.batchSize || b.bytes >= this.#o.batchBytes) this.#seal();
    else if (first && this.#o.flushMs > 0 && !this.#flushTimer) {
      this.#flushTimer = setTimeout(() => {
        this.#flushTimer = null;
        this.#seal();
      }, this.#o.flushMs);
    }
    return this.#writable();
  }

  reject(reason: string, meta?: WriteMeta & { raw?: string }): boolean {
    if (this.#failed) throw this.#failed;
    if (this.#ended) throw new LoaderError('WHARF_ERR_LOADER_CLOSED', 'reject() after end()');
    const now = performance.now();
    if (!this.#latency.started) this.#startClock(now);
    // A record the caller could not read joins the open batch, of documents or of blocks.
    const b = this.#builder ?? this.#builderFor();
    const first = b.count === 0;
    this.#seq++;
    b.reject(
      {
        kind: 'invalid',
        reason,
        raw: meta?.raw === undefined ? undefined : truncateRaw(meta.raw),
        line: meta?.line,
        offset: meta?.offset,
      },
      now,
      meta?.replay === true,
    );
    return this.#added(b, first);
  }

  /**
   * Room for more: no closed batch waits for a slot. In naive mode, also a free slot, so the next
   * document is handed over only once the previous insert returned (one at a time, as a newbie).
   */
  #writable(): boolean {
    return this.#queue.length === 0 && (!this.#o.naive || this.#inflight.hasSlot);
  }

  whenWritable(): Promise<void> {
    if (this.#failed) return Promise.reject(this.#failed);
    if (this.#writable()) return Promise.resolve();
    return new Promise((resolve, reject) => this.#waiters.push({ resolve, reject }));
  }

  write(doc: DocumentInput, meta?: WriteMeta): Promise<void> {
    try {
      return this.push(doc, meta) ? Promise.resolve() : this.whenWritable();
    } catch (err) {
      return Promise.reject(err);
    }
  }

  async load(docs: AsyncIterable<DocumentInput> | Iterable<DocumentInput>): Promise<void> {
    for await (const doc of docs as AsyncIterable<DocumentInput>) {
      if (!this.push(doc)) await this.whenWritable();
    }
  }

  #startClock(now: number): void {
    this.#latency.start(now);
    this.#intervalTimer = setInterval(() => this.#tick(), this.#o.intervalMs);
    this.#intervalTimer.unref();
    if (this.#cb.onCheckpoint) {
      this.#checkpointTimer = setInterval(() => void this.#checkpoint(false), this.#o.checkpointMs);
      this.#checkpointTimer.unref();
    }
  }

  #outstanding(): boolean {
    return this.#inflight.active > 0 || this.#queue.length > 0 || (this.#builder?.count ?? 0) > 0;
  }

  #tick(): void {
    const item = this.#latency.tick(performance.now(), this.#outstanding());
    this.#lastInterval = item;
    this.#cb.onInterval?.(item);
  }

  // ── batches ───────────────────────────────────────────────────────────────────────────────

  #seal(): void {
    if (this.#flushTimer) {
      clearTimeout(this.#flushTimer);
      this.#flushTimer = null;
    }
    if (this.#failed || !this.#builder || this.#builder.count === 0) return;
    this.#queue.push(this.#builder.seal());
    this.#pump();
  }

  #pump(): void {
    while (this.#queue.length > 0 && this.#inflight.hasSlot && !this.#failed) {
      this.#dispatch(this.#queue.shift()!);
    }
    if (this.#waiters.length > 0 && this.#writable()) {
      const waiters = this.#waiters;
      this.#waiters = [];
      for (const w of waiters) w.resolve();
    }
    this.#checkDrained();
  }

  #dispatch(batch: Batch): void {
    const entry = this.#inflight.begin(batch.firstSeq, batch.count);
    this.#dispatched = true;
    this.#batches++;
    const end = endOf(batch);
    this.#cb.onDispatch?.({ seq: batch.firstSeq + batch.count, line: num(end.line), offset: num(end.offset) });
    const t0 = performance.now();
    const inFlight = this.#inflight.active;
    this.#send(batch).then(
      (res) => this.#complete(batch, entry, res, t0, inFlight),
      (err) => {
        this.#inflight.abandon(entry);
        this.#fail(err);
        this.#checkDrained(); // #fail returns early when the load had already failed
      },
    );
  }

  async #send(batch: Batch): Promise<WriteResult> {
    await this.#ready;
    if (batch.sent === 0) return EMPTY_RESULT;
    const target = this.#target!;
    const payload = { format: batch.format, bytes: batch.payload, count: batch.sent };
    const opts = { durability: this.#o.durability, conflict: this.#o.conflict };
    return withRetry(
      (attempt) => {
        // A batch sent again after a lost connection may have been written the first time.
        if (attempt > 0) batch.replayCount = batch.count;
        return target.insert(this.#o.table, payload, opts);
      },
      (err) => target.isTransient(err),
      this.#o.retry,
      (err, attempt, delay) => {
        this.#retries++;
        this.#cb.onRetry?.(err, attempt, delay);
      },
    );
  }

  #analyze(batch: Batch, res: WriteResult): Outcome {
    const errors: DocumentError[] = [...batch.preErrors];
    const segments = batch.segments;
    const entryOf = (i: number) => {
      if (!segments) return batch.entryOf ? batch.entryOf[i]! : i;
      const seg = segmentOf(segments, i);
      return seg.entry + i - seg.sent;
    };
    const positionAt = (entry: number, sent: number): { line: number; offset: number } => {
      if (!segments) return { line: batch.lines[entry]!, offset: batch.offsets[entry]! };
      const seg = segmentOf(segments, sent);
      return positionOf(batch.payload, seg, sent - seg.sent);
    };
    let present = 0;
    let attributed = 0;
    for (const de of res.document_errors ?? []) {
      if (!(de.index >= 0 && de.index < batch.sent)) continue;
      attributed++;
      const entry = entryOf(de.index);
      const conflict = CONFLICT_MESSAGE.test(de.message);
      if (conflict && entry < batch.replayCount) {
        present++;
        continue;
      }
      const at = positionAt(entry, de.index);
      errors.push({
        seq: batch.firstSeq + entry,
        line: num(at.line),
        offset: num(at.offset),
        kind: conflict ? 'conflict' : 'invalid',
        reason: de.message,
        raw: truncateRaw(rawOf(batch, de.index)),
      });
    }
    const unattributed = Math.max(0, (res.errors ?? 0) - attributed);
    if (unattributed > 0) {
      const conflict = CONFLICT_MESSAGE.test(res.first_error ?? '');
      if (conflict && batch.replayCount === batch.count) {
        // A whole re-sent batch: the target cannot say which documents conflicted, and all of
        // them may have been written by the first attempt.
        present += unattributed;
      } else {
        const firstLine = segments ? segments[0]!.line : batch.lines[0]!;
        const end = endOf(batch);
        errors.push({
          seq: batch.firstSeq,
          line: num(firstLine),
          offset: num(end.offset),
          kind: 'unattributed',
          reason: `${unattributed} document(s) of this batch failed; the target did not say which: ${res.first_error ?? 'no message'}`,
          range: {
            firstSeq: batch.firstSeq,
            lastSeq: batch.firstSeq + batch.count - 1,
            firstLine: num(firstLine),
            lastLine: num(end.line),
          },
        });
      }
    }
    errors.sort((a, b) => a.seq - b.seq);
    const stored = (res.inserted ?? 0) + (res.replaced ?? 0) + (res.unchanged ?? 0);
    const written = stored + present;
    const rejected = batch.preErrors.length + (res.errors ?? 0) - present;
    const end = endOf(batch);
    return {
      firstSeq: batch.firstSeq,
      count: batch.count,
      written,
      rejected,
      present,
      missing: batch.count - written - rejected,
      inserted: res.inserted ?? 0,
      replaced: res.replaced ?? 0,
      unchanged: res.unchanged ?? 0,
      errors,
      lastLine: end.line,
      lastOffset: end.offset,
    };
  }

  #complete(batch: Batch, entry: InflightEntry<Outcome>, res: WriteResult, t0: number, inFlight: number): void {
    const ack = performance.now();
    this.#latency.recordBatch(ack - t0);
    if (this.#window) this.#inflight.limit = this.#window.onAck(ack - t0, batch.payload.length, inFlight, ack);
    if (batch.segments) {
      for (const seg of batch.segments) if (seg.docs > 0) this.#latency.recordSame(seg.start, seg.docs, ack);
    } else if (batch.sent > 0) {
      if (batch.entryOf) {
        const starts = new Float64Array(batch.sent);
        for (let i = 0; i < batch.sent; i++) starts[i] = batch.starts[batch.entryOf[i]!]!;
        this.#latency.recordDocs(starts, batch.sent, ack);
      } else this.#latency.recordDocs(batch.starts, batch.sent, ack);
    }
    const outcome = this.#analyze(batch, res);
    this.#payloads.recycle(batch.payload); // the target and #analyze are done with it
    const t = this.#totals;
    t.written += outcome.written;
    t.rejected += outcome.rejected;
    t.present += outcome.present;
    t.missing += outcome.missing;
    t.inserted += outcome.inserted;
    t.replaced += outcome.replaced;
    t.unchanged += outcome.unchanged;
    for (const o of this.#inflight.finish(entry, outcome)) this.#release(o);
    this.#pump();
  }

  #release(o: Outcome): void {
    const m = this.#mark;
    m.seq = o.firstSeq + o.count;
    if (!Number.isNaN(o.lastLine)) m.line = o.lastLine;
    if (!Number.isNaN(o.lastOffset)) m.offset = o.lastOffset;
    m.written += o.written;
    m.rejected += o.rejected;
    m.present += o.present;
    for (const e of o.errors) this.#cb.onDocumentError?.(e);
    o.errors = [];
    this.#cb.onProgress?.({ ...m });
    if (m.rejected > this.#o.maxErrors && !this.#failed) {
      this.#fail(
        new LoaderError(
          'WHARF_ERR_MAX_ERRORS',
          `${m.rejected} documents rejected, more than the ${this.#o.maxErrors} allowed (maxErrors)`,
        ),
      );
    }
  }

  #fail(err: unknown): void {
    if (this.#failed) return;
    this.#failed =
      err instanceof LoaderError
        ? err
        : new LoaderError(errorCode(err) ?? 'WHARF_ERR_TARGET', (err as Error)?.message ?? String(err), { cause: err });
    if (this.#flushTimer) {
      clearTimeout(this.#flushTimer);
      this.#flushTimer = null;
    }
    // Batches not yet sent are dropped: their documents have no outcome and count as missing.
    this.#queue.length = 0;
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w.reject(this.#failed);
    this.#checkDrained();
  }

  #checkDrained(): void {
    if (this.#queue.length > 0 || this.#inflight.active > 0) return;
    const waiters = this.#drainWaiters;
    this.#drainWaiters = [];
    for (const w of waiters) w();
  }

  #drained(): Promise<void> {
    return new Promise((resolve) => {
      this.#drainWaiters.push(resolve);
      this.#checkDrained();
    });
  }

  // ── checkpoints ───────────────────────────────────────────────────────────────────────────

  /** Makes the acknowledged prefix durable (one sync) and reports it. One at a time. */
  #checkpoint(final: boolean, durable = true): Promise<void> {
    const cb = this.#cb.onCheckpoint;
    if (!cb) return Promise.resolve();
    if (this.#checkpointing)
      return final ? this.#checkpointing.then(() => this.#checkpoint(true, durable)) : this.#checkpointing;
    const mark = { ...this.#mark };
    if (!final && mark.seq === this.#durableSeq) return Promise.resolve();
    const run = (async () => {
      try {
        if (!final && this.#o.durability === 'soft') {
          await this.#ready;
          await this.#target!.sync(this.#o.table);
        }
        this.#durableSeq = mark.seq;
        await cb(mark, durable);
      } catch {
        // A failed sync leaves the durable checkpoint where it was; the load itself reports errors.
      }
    })();
    this.#checkpointing = run.finally(() => {
      this.#checkpointing = null;
    });
    return this.#checkpointing;
  }

  // ── end ───────────────────────────────────────────────────────────────────────────────────

  abort(reason = 'aborted'): void {
    this.#fail(new LoaderError('WHARF_ERR_ABORTED', reason));
  }

  progress(): LoaderProgress {
    const started = this.#latency.started;
    return {
      read: this.#seq,
      written: this.#totals.written,
      rejected: this.#totals.rejected,
      inFlight: this.#inflight.active,
      inFlightLimit: this.#inflight.limit,
      elapsedSeconds: started ? (performance.now() - this.#latency.origin) / 1000 : 0,
      current: this.#latency.current(),
      lastInterval: this.#lastInterval,
    };
  }

  takeWindow(): { docs: number; latency: LatencyMs } {
    return this.#latency.takeWindow();
  }

  end(): Promise<LoadSummary> {
    if (!this.#ending) {
      this.#ended = true;
      this.#ending = this.#finish();
    }
    return this.#ending;
  }

  async #finish(): Promise<LoadSummary> {
    this.#seal();
    await this.#drained();
    if (this.#checkpointTimer) clearInterval(this.#checkpointTimer);
    if (this.#intervalTimer) {
      clearInterval(this.#intervalTimer);
      this.#tick(); // the last, partial interval
    }
    // Outcomes held behind a batch that failed: their errors are still reported (after the
    // in-order ones), never swallowed; the mark does not pass the failed batch.
    for (const o of this.#inflight.held()) for (const e of o.errors) this.#cb.onDocumentError?.(e);
    let finalSyncMs: number | null = null;
    let syncError: unknown = null;
    // Waited for even when nothing was written: a target that failed to open fails the load.
    const targetUsable =
      (await this.#ready.then(
        () => true,
        () => false,
      )) && this.#target !== null;
    const wantSync = this.#o.finalSync && this.#o.durability === 'soft' && this.#dispatched;
    if (targetUsable && wantSync && this.#totals.written > 0) {
      const t0 = performance.now();
      try {
        await this.#target!.sync(this.#o.table);
        finalSyncMs = Math.round((performance.now() - t0) * 1000) / 1000;
      } catch (err) {
        syncError = err;
      }
    }
    const durable =
      syncError === null && (this.#o.durability === 'hard' || finalSyncMs !== null || this.#totals.written === 0);
    await this.#checkpoint(true, durable);
    const end = performance.now();
    let indexes: IndexBuild[] = [];
    let indexBuildMs: number | null = null;
    const complete = this.#seq === this.#totals.written + this.#totals.rejected;
    if (targetUsable && syncError === null && !this.#failed && complete && this.#o.indexes.length > 0) {
      const t0 = performance.now();
      try {
        indexes = await this.#buildIndexes();
        indexBuildMs = Math.round((performance.now() - t0) * 1000) / 1000;
      } catch (err) {
        this.#failed =
          err instanceof LoaderError
            ? err
            : new LoaderError(errorCode(err) ?? 'WHARF_ERR_TARGET', (err as Error).message, { cause: err });
      }
    }
    if (this.#ownsTarget && this.#target) {
      try {
        await this.#target.close();
      } catch (err) {
        syncError ??= err;
      }
    }
    // After the close: the engine's final checkpoint is part of what the load wrote.
    let engine: TargetStats | null = null;
    if (targetUsable) {
      try {
        engine = (await this.#target!.stats?.()) ?? null;
      } catch {
        engine = null;
      }
    }
    const summary = this.#summary(end, finalSyncMs, engine);
    summary.indexes = indexes;
    summary.indexBuildMs = indexBuildMs;
    if (syncError && !this.#failed) {
      this.#failed = new LoaderError(
        errorCode(syncError) ?? 'WHARF_ERR_TARGET',
        `final sync failed: ${(syncError as Error).message}`,
        {
          cause: syncError,
        },
      );
    }
    if (this.#failed) {
      summary.ok = false;
      summary.error = { code: String(this.#failed.code), message: this.#failed.message };
    } else if (summary.documents.missing !== 0) {
      summary.ok = false;
      summary.error = {
        code: 'WHARF_ERR_INCOMPLETE',
        message: `${summary.documents.missing} of ${summary.documents.read} documents have no outcome (written + rejected ≠ read)`,
      };
    }
    if (!summary.ok) {
      const err = new LoaderError(summary.error!.code, summary.error!.message, { cause: this.#failed ?? undefined });
      err.summary = summary;
      throw err;
    }
    return summary;
  }

  /**
   * Creates every index (each build starts in the background at once), then waits for each;
   * an index's time runs from its creation request to its being ready and caught up.
   */
  async #buildIndexes(): Promise<IndexBuild[]> {
    const target = this.#target!;
    if (typeof target.createIndex !== 'function' || typeof target.waitIndex !== 'function') {
      throw new LoaderError('WHARF_ERR_TARGET', `target ${this.#targetName} cannot build indexes`);
    }
    const table = this.#o.table;
    const started: { spec: IndexSpec; t0: number; existed: boolean }[] = [];
    for (const spec of this.#o.indexes) {
      const t0 = performance.now();
      let existed: boolean;
      try {
        ({ existed } = await target.createIndex(table, spec));
      } catch (err) {
        throw new LoaderError(
          errorCode(err) ?? 'WHARF_ERR_TARGET',
          `creating index ${spec.name} on ${spec.field}: ${(err as Error).message}`,
          { cause: err },
        );
      }
      started.push({ spec, t0, existed });
    }
    return Promise.all(
      started.map(async ({ spec, t0, existed }) => {
        try {
          await target.waitIndex!(table, spec.name);
        } catch (err) {
          throw new LoaderError(
            errorCode(err) ?? 'WHARF_ERR_TARGET',
            `waiting for index ${spec.name}: ${(err as Error).message}`,
            { cause: err },
          );
        }
        return {
          name: spec.name,
          field: spec.field,
          multi: spec.multi === true,
          buildMs: Math.round((performance.now() - t0) * 1000) / 1000,
          existed,
        };
      }),
    );
  }

  #summary(end: number, finalSyncMs: number | null, engine: TargetStats | null): LoadSummary {
    const t = this.#totals;
    const wall = this.#latency.started ? (end - this.#latency.origin) / 1000 : 0;
    const read = this.#seq;
    const intervals = this.#latency.intervals;
    return {
      ok: true,
      target: this.#targetName,
      table: this.#o.table,
      durability: this.#o.durability,
      conflict: this.#o.conflict,
      naive: this.#o.naive,
      finalSync: this.#o.finalSync,
      documents: {
        read,
        written: t.written,
        rejected: t.rejected,
        present: t.present,
        missing: read - t.written - t.rejected,
      },
      inserted: t.inserted,
      replaced: t.replaced,
      unchanged: t.unchanged,
      batches: this.#batches,
      retries: this.#retries,
      wallSeconds: Math.round(wall * 1000) / 1000,
      docsPerSec: wall > 0 ? Math.round((t.written / wall) * 10) / 10 : 0,
      latencyMs: latencyOf(this.#latency.total),
      batchLatencyMs: latencyOf(this.#latency.batches),
      finalSyncMs,
      intervalMs: this.#o.intervalMs,
      intervals,
      intervals10s: aggregateIntervals(intervals, Math.max(1, Math.round(10_000 / this.#o.intervalMs))),
      zeroIntervals: this.#latency.zeroIntervals,
      engine,
      failover: this.#target?.failoverReport?.() ?? null,
      indexes: [],
      indexBuildMs: null,
    };
  }
}
