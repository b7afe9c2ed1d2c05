/**
 * A stream result served in batches: SUCCESS_PARTIAL while more rows remain, SUCCESS_SEQUENCE
 * for the last batch. It looks one row ahead, so it never sends an empty PARTIAL. Rows are
 * serialized once, while the batch is filled, and the batch is capped by rows and bytes
 * (the first batch gets a quarter of the bytes, like the reference server).
 */
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
        const text = JSON.stringify(item.value === undefined ? null : item.value);
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

/** The JSON body of a batch response. */
export function batchBody(responseType: number, rows: string[], profile: boolean): string {
  return `{"t":${responseType},"r":[${rows.join(',')}],"n":[]${profile ? ',"p":[]' : ''}}`;
}
