/**
 * A stream result served in batches: SUCCESS_PARTIAL while more rows remain, SUCCESS_SEQUENCE
 * for the last batch. It looks one row ahead, so it never sends an empty PARTIAL. Rows are
 * serialized once, while the batch is filled, and the batch is capped by rows and bytes
 * (the first batch gets a quarter of the bytes, like the reference server).
 */
import { internalError } from './errors.js';

/**
 * The JSON text of one result value. The evaluator only produces JSON values; should anything
 * else reach here (a function, a BigInt, a cycle), the query fails with an error rather than
 * sending text that is not JSON: the official driver dies on an unparsable frame.
 */
export function resultJson(value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value === undefined ? null : value);
  } catch (err) {
    const why = err instanceof RangeError ? 'it is nested too deeply' : (err as Error).message;
    throw internalError(`The result cannot be sent as JSON: ${why}.`);
  }
  if (text === undefined) throw internalError(`The result cannot be sent as JSON: a value of type ${typeof value}.`);
  return text;
}

export interface BatchLimits {
  rows: number;
  bytes: number;
}

export interface Batch {
  /** JSON text of each row. */
  rows: string[];
  /** True when the stream has ended (this is the last batch). */
  done: boolean;
}

export class Cursor {
  readonly #source: AsyncIterator<unknown>;
  readonly #limits: BatchLimits;
  #first = true;
  #done = false;
  #peeked: { value: unknown } | null = null;
  /** Serializes batch requests (a CONTINUE arriving while one is being filled waits its turn). */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(source: AsyncIterator<unknown>, limits: BatchLimits) {
    this.#source = source;
    this.#limits = limits;
  }

  get done(): boolean {
    return this.#done;
  }

  nextBatch(): Promise<Batch> {
    const run = this.#queue.then(() => this.#fill());
    this.#queue = run.catch(() => {});
    return run;
  }

  async #fill(): Promise<Batch> {
    if (this.#done) return { rows: [], done: true };
    const maxBytes = this.#first ? Math.max(1, Math.floor(this.#limits.bytes / 4)) : this.#limits.bytes;
    this.#first = false;
    const rows: string[] = [];
    let bytes = 0;
    try {
      while (rows.length < this.#limits.rows && bytes < maxBytes) {
        let item: IteratorResult<unknown>;
        if (this.#peeked) {
          item = { done: false, value: this.#peeked.value };
          this.#peeked = null;
        } else {
          item = await this.#source.next();
        }
        if (item.done) {
          this.#done = true;
          return { rows, done: true };
        }
        const text = resultJson(item.value);
        rows.push(text);
        bytes += text.length;
      }
      const ahead = await this.#source.next();
      if (ahead.done) {
        this.#done = true;
        return { rows, done: true };
      }
      this.#peeked = { value: ahead.value };
      return { rows, done: false };
    } catch (err) {
      this.#done = true;
      throw err;
    }
  }

  /** End the stream early (STOP). */
  async close(): Promise<void> {
    if (this.#done) return;
    this.#done = true;
    this.#peeked = null;
    await this.#queue;
    try {
      await this.#source.return?.();
    } catch {
      // the source is being dropped
    }
  }
}

/** The JSON body of a batch response; `notes`: a changefeed's response notes. */
export function batchBody(responseType: number, rows: string[], profile: boolean, notes?: readonly number[]): string {
  return `{"t":${responseType},"r":[${rows.join(',')}],"n":[${notes?.join(',') ?? ''}]${profile ? ',"p":[]' : ''}}`;
}
