/**
 * Builds one batch: the documents' JSON text laid out in the target's payload format (NDJSON
 * lines, or a JSON array), with what the loader needs to map the engine's answer back to the
 * input: each document's intended start time, source line and offset, and its byte range in the
 * payload. The loader decides when a batch closes (count, bytes or time, whichever first).
 */
import type { DocumentError } from './types.js';

export type PayloadFormat = 'ndjson' | 'json';

/** A document as the loader accepts it: an object, or its JSON text (string or UTF-8 bytes). */
export type DocumentInput = object | string | Uint8Array;

export interface Batch {
  readonly id: number;
  readonly format: PayloadFormat;
  /** Seq of the first document (entries are contiguous in the input). */
  readonly firstSeq: number;
  /** Documents handed over, including those rejected before sending. */
  readonly count: number;
  /** The documents sent, in `format`. */
  readonly payload: Buffer;
  /** Documents in the payload. */
  readonly sent: number;
  /** Byte offset of each sent document in the payload; `docStart[sent]` is one past the last. */
  readonly docStart: Uint32Array;
  /** Per entry: intended start (performance.now() ms), line (NaN = unknown), end offset (NaN). */
  readonly starts: Float64Array;
  readonly lines: Float64Array;
  readonly offsets: Float64Array;
  /** Sent index → entry index; null when every entry was sent (identity). */
  readonly entryOf: Int32Array | null;
  /** Entries rejected before sending (bad JSON text, too large…). */
  readonly preErrors: DocumentError[];
  /** The first `replayCount` entries are re-sends: a conflict on them means "already stored". */
  replayCount: number;
  /**
   * Set for a batch of blocks (`BlockBatchBuilder`): its documents have no entry each, and
   * `docStart`, `starts`, `lines`, `offsets` are empty; positions come from the segments.
   */
  readonly segments?: readonly BlockSegment[];
}

/**
 * One block of a block batch (or one document rejected before sending, `docs` 0): a run of
 * whole NDJSON lines of the payload, one document each, contiguous in the input.
 */
export interface BlockSegment {
  /** Index of its first entry in the batch (entries: documents, and the rejected one). */
  readonly entry: number;
  /** Index of its first document among the batch's sent documents (= its payload line). */
  readonly sent: number;
  /** Documents sent (0: a rejected record, one entry). */
  readonly docs: number;
  /** Its bytes in the payload: [byteStart, byteEnd), ending with '\n'. */
  readonly byteStart: number;
  readonly byteEnd: number;
  /** Input line of its first document (NaN: unknown), and lines from one document to the next (0 or 1). */
  readonly line: number;
  readonly lineStep: number;
  /** Input offset just past its last document (NaN: unknown). */
  readonly offset: number;
  /** Where a document's own end offset lies: past its line's newline, or past its JSON text. */
  readonly endOfDoc: 'newline' | 'value';
  /** When it was handed over (performance.now() ms): the start of each of its documents' latency. */
  readonly start: number;
  /** The block had no final newline; the payload adds one. */
  readonly appendedNewline?: boolean;
  /** Payload offset of each of its lines, built the first time a document of it is looked up. */
  lineStarts?: Uint32Array;
}

/** The JSON text of sent document `i` of a batch. */
export function rawOf(batch: Batch, i: number): string {
  if (batch.segments) {
    const seg = segmentOf(batch.segments, i);
    const [start, end] = lineOf(batch.payload, seg, i - seg.sent);
    return batch.payload.toString('utf8', start, end);
  }
  const end = batch.docStart[i + 1]! - 1; // minus the '\n' or ',' that follows it
  return batch.payload.toString('utf8', batch.docStart[i]!, end);
}

const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const NEWLINE = 0x0a;
const MAX_RAW_IN_ERROR = 1 << 20;
/** Payload buffers kept for reuse: about as many as batches in flight. */
const MAX_SPARE = 8;

/** Turns an input document into JSON text on one line, or explains why it cannot be sent. */
/**
 * `validate`: check JSON text here (a JSON-array payload fails whole on one bad element, so
 * targets that take arrays need it); NDJSON targets check each line themselves.
 */
export function toJsonText(
  doc: DocumentInput,
  validate = false,
): { text: string | Uint8Array } | { error: string; raw?: string } {
  if (doc instanceof Uint8Array) {
    if (!validate && doc.indexOf(NEWLINE) === -1) return { text: doc };
    return toJsonText(Buffer.from(doc.buffer, doc.byteOffset, doc.byteLength).toString('utf8'), validate);
  }
  if (typeof doc === 'string') {
    if (validate) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(doc);
      } catch (err) {
        return { error: `invalid JSON: ${(err as Error).message}`, raw: doc };
      }
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
        return { error: 'a document must be a JSON object', raw: doc };
      }
      return doc.indexOf('\n') === -1 ? { text: doc } : { text: JSON.stringify(parsed) };
    }
    if (doc.indexOf('\n') === -1) return { text: doc };
    // Text spread over lines (a pretty-printed element): re-encode it on one line.
    try {
      return { text: JSON.stringify(JSON.parse(doc)) };
    } catch (err) {
      return { error: `invalid JSON: ${(err as Error).message}`, raw: doc };
    }
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
    return { error: 'a document must be a JSON object', raw: String(doc) };
  }
  let text: string | undefined;
  try {
    text = JSON.stringify(doc);
  } catch (err) {
    return { error: `cannot be encoded as JSON: ${(err as Error).message}` };
  }
  if (text === undefined) return { error: 'cannot be encoded as JSON' };
  return { text };
}

export function truncateRaw(raw: string | Uint8Array): string {
  const s = typeof raw === 'string' ? raw : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('utf8');
  return s.length > MAX_RAW_IN_ERROR ? `${s.slice(0, MAX_RAW_IN_ERROR)}…` : s;
}

/**
 * Payload buffers of batches the loader is done with, for the next batches, whichever builder
 * lays them out. Each is allocated outside V8's heap; a new one per batch made V8 run full
 * collections once few scavenges came to free them (the `sustained` bench: 1,300 mark-compacts
 * in 10 minutes).
 */
export class PayloadPool {
  #spare: Buffer[] = [];
  #owned = new WeakSet<ArrayBufferLike>();

  alloc(size: number): Buffer {
    const spare = this.#spare.pop();
    if (spare && spare.length >= size) return spare;
    const buf = Buffer.allocUnsafeSlow(size); // never a slice of Node's shared pool
    this.#owned.add(buf.buffer);
    return buf;
  }

  /**
   * Takes back a batch's payload once nothing reads it any more (acknowledged and its results
   * read); a buffer the pool did not make is left alone.
   */
  recycle(payload: Buffer): void {
    if (this.#spare.length < MAX_SPARE && this.#owned.has(payload.buffer))
      this.#spare.push(Buffer.from(payload.buffer, 0, payload.buffer.byteLength));
  }
}

export class BatchBuilder {
  readonly format: PayloadFormat;
  readonly maxDocs: number;
  #nextId = 1;
  #buf: Buffer;
  #len = 0;
  #count = 0;
  #sent = 0;
  #firstSeq = 0;
  #replayCount = 0;
  // Per entry, preallocated for a full batch (grown if a batch holds more entries).
  #docStart = new Uint32Array(1);
  #starts = new Float64Array(1);
  #lines = new Float64Array(1);
  #offsets = new Float64Array(1);
  #entryOf: number[] | null = null;
  #preErrors: DocumentError[] = [];
  readonly #pool: PayloadPool;

  constructor(format: PayloadFormat, maxDocs: number, expectedBytes: number, firstSeq = 0, pool = new PayloadPool()) {
    this.format = format;
    this.maxDocs = maxDocs;
    this.#pool = pool;
    this.#buf = this.#alloc(Math.max(4096, Math.min(expectedBytes, 1 << 20)));
    this.#reset(firstSeq);
  }

  #alloc(size: number): Buffer {
    return this.#pool.alloc(size);
  }

  /** Gives a batch's payload back to the pool (see PayloadPool.recycle). */
  recycle(batch: Batch): void {
    this.#pool.recycle(batch.payload);
  }

  /** Entries in the open batch (including pre-rejected ones). */
  get count(): number {
    return this.#count;
  }

  /** Payload bytes so far. */
  get bytes(): number {
    return this.#len;
  }

  /** Seq of the first entry of the open batch (or of the next entry, when empty). */
  get firstSeq(): number {
    return this.#firstSeq;
  }

  #reset(firstSeq: number): void {
    this.#firstSeq = firstSeq;
    this.#len = 0;
    this.#count = 0;
    this.#sent = 0;
    this.#replayCount = 0;
    const cap = Math.min(this.maxDocs, 1 << 16) + 1;
    this.#docStart = new Uint32Array(cap);
    this.#starts = new Float64Array(cap);
    this.#lines = new Float64Array(cap);
    this.#offsets = new Float64Array(cap);
    this.#entryOf = null;
    this.#preErrors = [];
    if (this.format === 'json') this.#buf[this.#len++] = OPEN_BRACKET;
  }

  #ensure(extra: number): void {
    const need = this.#len + extra + 2;
    if (need <= this.#buf.length) return;
    let cap = this.#buf.length * 2;
    while (cap < need) cap *= 2;
    const next = this.#alloc(cap);
    this.#buf.copy(next, 0, 0, this.#len);
    this.#buf = next;
  }

  #grow(): void {
    const cap = this.#starts.length * 2;
    const g = <T extends Float64Array | Uint32Array>(a: T, make: (n: number) => T): T => {
      const b = make(cap);
      b.set(a);
      return b;
    };
    this.#starts = g(this.#starts, (n) => new Float64Array(n));
    this.#lines = g(this.#lines, (n) => new Float64Array(n));
    this.#offsets = g(this.#offsets, (n) => new Float64Array(n));
    this.#docStart = g(this.#docStart, (n) => new Uint32Array(n));
  }

  #entry(start: number, line: number | undefined, offset: number | undefined, replay: boolean): void {
    if (replay && this.#replayCount === this.#count) this.#replayCount++;
    const i = this.#count++;
    this.#starts[i] = start;
    this.#lines[i] = line ?? Number.NaN;
    this.#offsets[i] = offset ?? Number.NaN;
  }

  /** Appends a document's one-line JSON text (its size is `size` bytes). */
  append(
    text: string | Uint8Array,
    size: number,
    start: number,
    line: number | undefined,
    offset: number | undefined,
    replay: boolean,
  ): void {
    this.#ensure(size);
    if (this.#count + 1 >= this.#starts.length) this.#grow();
    this.#docStart[this.#sent] = this.#len;
    if (typeof text === 'string') this.#len += this.#buf.write(text, this.#len, 'utf8');
    else {
      this.#buf.set(text, this.#len);
      this.#len += size;
    }
    if (this.format === 'json') this.#buf[this.#len++] = COMMA;
    else this.#buf[this.#len++] = NEWLINE;
    if (this.#entryOf) this.#entryOf.push(this.#count);
    this.#sent++;
    this.#entry(start, line, offset, replay);
  }

  /** Records a document rejected before sending; it keeps its place in the input order. */
  reject(err: Omit<DocumentError, 'seq'>, start: number, replay: boolean): void {
    if (!this.#entryOf) this.#entryOf = Array.from({ length: this.#sent }, (_, i) => i);
    if (this.#count + 1 >= this.#starts.length) this.#grow();
    this.#preErrors.push({ ...err, seq: this.#firstSeq + this.#count });
    this.#entry(start, err.line, err.offset, replay);
  }

  /** Closes the open batch and starts the next one right after it. */
  seal(): Batch {
    if (this.format === 'json') {
      if (this.#sent > 0)
        this.#buf[this.#len - 1] = CLOSE_BRACKET; // the last ',' becomes ']'
      else this.#buf[this.#len++] = CLOSE_BRACKET;
    }
    // The payload keeps this buffer; the next batch gets a spare or a new one sized like this one.
    const payload = this.#buf.subarray(0, this.#len);
    this.#docStart[this.#sent] = this.#len;
    const batch: Batch = {
      id: this.#nextId++,
      format: this.format,
      firstSeq: this.#firstSeq,
      count: this.#count,
      payload,
      sent: this.#sent,
      docStart: this.#docStart.subarray(0, this.#sent + 1),
      starts: this.#starts.subarray(0, this.#count),
      lines: this.#lines.subarray(0, this.#count),
      offsets: this.#offsets.subarray(0, this.#count),
      entryOf: this.#entryOf ? Int32Array.from(this.#entryOf) : null,
      preErrors: this.#preErrors,
      replayCount: this.#replayCount,
    };
    this.#buf = this.#alloc(Math.max(4096, this.#len + (this.#len >> 2)));
    this.#reset(this.#firstSeq + this.#count);
    return batch;
  }
}

// ── blocks ────────────────────────────────────────────────────────────────────────────────────

/** The segment holding sent document `i` (binary search; segments are in payload order). */
export function segmentOf(segments: readonly BlockSegment[], i: number): BlockSegment {
  let lo = 0;
  let hi = segments.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (segments[mid]!.sent <= i) lo = mid;
    else hi = mid - 1;
  }
  // Several segments may start at the same sent index (rejected records have no documents).
  while (lo < segments.length - 1 && segments[lo]!.docs === 0) lo++;
  return segments[lo]!;
}

/** A byte that blanks a line (the engine skips lines of only these), or pads a document's text. */
export function isBlankByte(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0d || c === 0x0c || c === 0x0a;
}

/**
 * The payload range of document `k` of a segment, trimmed of surrounding whitespace (a JSON
 * array's element keeps the blank that replaced its comma). Line starts are found once per segment.
 */
export function lineOf(payload: Buffer, seg: BlockSegment, k: number): [number, number] {
  if (!seg.lineStarts) {
    const starts = new Uint32Array(seg.docs + 1);
    let p = seg.byteStart;
    for (let j = 0; j < seg.docs; j++) {
      starts[j] = p;
      p = payload.indexOf(NEWLINE, p) + 1;
    }
    starts[seg.docs] = seg.byteEnd;
    seg.lineStarts = starts;
  }
  let start = seg.lineStarts[k]!;
  let end = seg.lineStarts[k + 1]!;
  while (end > start && isBlankByte(payload[end - 1]!)) end--;
  while (start < end && isBlankByte(payload[start]!)) start++;
  return [start, end];
}

/** Input line and end offset of document `k` of a segment (NaN when the segment has none). */
export function positionOf(payload: Buffer, seg: BlockSegment, k: number): { line: number; offset: number } {
  const line = seg.line + k * seg.lineStep;
  if (Number.isNaN(seg.offset)) return { line, offset: Number.NaN };
  if (seg.docs === 0 || k === seg.docs - 1) return { line, offset: seg.offset };
  // The payload holds the input's bytes one for one (only commas became blanks).
  const inputStart = seg.offset - lastTextEnd(payload, seg) + seg.byteStart;
  if (seg.endOfDoc === 'value') return { line, offset: inputStart + lineOf(payload, seg, k)[1] - seg.byteStart };
  lineOf(payload, seg, k); // builds seg.lineStarts
  const next = seg.lineStarts![k + 1]!;
  return { line, offset: inputStart + next - seg.byteStart };
}

/** Payload offset where the segment's input range ends (its `offset` maps to this). */
function lastTextEnd(payload: Buffer, seg: BlockSegment): number {
  if (seg.endOfDoc === 'value') return lineOf(payload, seg, seg.docs - 1)[1];
  return seg.byteEnd - (seg.appendedNewline ? 1 : 0);
}

/**
 * Builds a batch from blocks: each block's bytes are copied once into the payload, and the batch
 * keeps one segment per block, not an entry per document.
 */
export class BlockBatchBuilder {
  readonly maxDocs: number;
  #nextId = 1;
  #buf: Buffer;
  #len = 0;
  #count = 0;
  #sent = 0;
  #firstSeq = 0;
  #replayCount = 0;
  #segments: BlockSegment[] = [];
  #preErrors: DocumentError[] = [];
  readonly #pool: PayloadPool;

  constructor(maxDocs: number, expectedBytes: number, firstSeq: number, pool = new PayloadPool()) {
    this.maxDocs = maxDocs;
    this.#pool = pool;
    this.#buf = this.#alloc(Math.max(4096, Math.min(expectedBytes, 8 << 20)));
    this.#firstSeq = firstSeq;
  }

  #alloc(size: number): Buffer {
    return this.#pool.alloc(size);
  }

  get count(): number {
    return this.#count;
  }

  get bytes(): number {
    return this.#len;
  }

  get firstSeq(): number {
    return this.#firstSeq;
  }

  /** Appends a block of `docs` lines (a '\n' is added after the last when it has none). */
  append(
    bytes: Uint8Array,
    docs: number,
    start: number,
    line: number,
    lineStep: number,
    offset: number,
    endOfDoc: 'newline' | 'value',
    replay: boolean,
  ): void {
    const size = bytes.length;
    const need = this.#len + size + 1;
    if (need > this.#buf.length) {
      let cap = this.#buf.length * 2;
      while (cap < need) cap *= 2;
      const next = this.#alloc(cap);
      this.#buf.copy(next, 0, 0, this.#len);
      this.#buf = next;
    }
    const byteStart = this.#len;
    this.#buf.set(bytes, byteStart);
    this.#len += size;
    const appendedNewline = size === 0 || bytes[size - 1] !== NEWLINE;
    if (appendedNewline) this.#buf[this.#len++] = NEWLINE;
    if (replay && this.#replayCount === this.#count) this.#replayCount += docs;
    this.#segments.push({
      entry: this.#count,
      sent: this.#sent,
      docs,
      byteStart,
      byteEnd: this.#len,
      line,
      lineStep,
      offset,
      endOfDoc,
      start,
      appendedNewline,
    });
    this.#count += docs;
    this.#sent += docs;
  }

  /** Records a record rejected before sending; it keeps its place in the input order. */
  reject(err: Omit<DocumentError, 'seq'>, start: number, replay: boolean): void {
    if (replay && this.#replayCount === this.#count) this.#replayCount++;
    this.#preErrors.push({ ...err, seq: this.#firstSeq + this.#count });
    this.#segments.push({
      entry: this.#count,
      sent: this.#sent,
      docs: 0,
      byteStart: this.#len,
      byteEnd: this.#len,
      line: err.line ?? Number.NaN,
      lineStep: 0,
      offset: err.offset ?? Number.NaN,
      endOfDoc: 'newline',
      start,
    });
    this.#count++;
  }

  seal(): Batch {
    const batch: Batch = {
      id: this.#nextId++,
      format: 'ndjson',
      firstSeq: this.#firstSeq,
      count: this.#count,
      payload: this.#buf.subarray(0, this.#len),
      sent: this.#sent,
      docStart: EMPTY_U32,
      starts: EMPTY_F64,
      lines: EMPTY_F64,
      offsets: EMPTY_F64,
      entryOf: null,
      preErrors: this.#preErrors,
      replayCount: this.#replayCount,
      segments: this.#segments,
    };
    this.#buf = this.#alloc(Math.max(4096, this.#len + (this.#len >> 2)));
    this.#firstSeq += this.#count;
    this.#len = 0;
    this.#count = 0;
    this.#sent = 0;
    this.#replayCount = 0;
    this.#segments = [];
    this.#preErrors = [];
    return batch;
  }
}

const EMPTY_U32 = new Uint32Array(0);
const EMPTY_F64 = new Float64Array(0);
