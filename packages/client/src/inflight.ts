/**
 * Batches in flight: a bound on how many run at once, and the resume low-water mark.
 *
 * Batches are contiguous runs of the input (by document seq) and finish out of order. The
 * low-water mark is the end of the longest acknowledged *prefix* of the input: a batch's outcome
 * is released only once every batch before it has finished, so whatever is released (document
 * errors, counters, the resume checkpoint) comes out in input order.
 *
 * Memory stays bounded: `hasSlot` is false while `limit` (at most `concurrency`; window.ts sets
 * it) batches run, and also while `maxUnreleased` finished-or-running batches wait behind a slow
 * one (one stuck batch cannot let the window grow without end).
 */

export interface InflightEntry<T> {
  readonly firstSeq: number;
  readonly count: number;
  done: boolean;
  outcome?: T;
}

export class Inflight<T> {
  readonly concurrency: number;
  readonly maxUnreleased: number;
  #limit: number;
  #active = 0;
  #window: InflightEntry<T>[] = [];
  #nextSeq: number;
  #lowSeq: number;

  constructor(concurrency: number, maxUnreleased = Math.max(concurrency * 8, concurrency + 1), startSeq = 0) {
    if (!(concurrency >= 1)) throw new RangeError('concurrency must be ≥ 1');
    this.concurrency = concurrency;
    this.#limit = concurrency;
    this.maxUnreleased = Math.max(maxUnreleased, concurrency);
    this.#nextSeq = startSeq;
    this.#lowSeq = startSeq;
  }

  /** Batches dispatched and not yet finished. */
  get active(): number {
    return this.#active;
  }

  /** Batches not yet released (running, or finished behind an unfinished one). */
  get unreleased(): number {
    return this.#window.length;
  }

  /** Batches that may run at once now: 1 to `concurrency`. */
  get limit(): number {
    return this.#limit;
  }

  set limit(n: number) {
    this.#limit = Math.min(this.concurrency, Math.max(1, Math.floor(n)));
  }

  /** True when another batch may be dispatched now. */
  get hasSlot(): boolean {
    return this.#active < this.#limit && this.#window.length < this.maxUnreleased;
  }

  /** Every document before this seq is acknowledged. */
  get lowSeq(): number {
    return this.#lowSeq;
  }

  /** The seq the next batch must start at (everything before it has been dispatched). */
  get highSeq(): number {
    return this.#nextSeq;
  }

  /** Registers a dispatched batch; batches must be begun in input order, with no gap. */
  begin(firstSeq: number, count: number): InflightEntry<T> {
    if (firstSeq !== this.#nextSeq) {
      throw new Error(`batch starts at seq ${firstSeq}, expected ${this.#nextSeq}`);
    }
    const entry: InflightEntry<T> = { firstSeq, count, done: false };
    this.#window.push(entry);
    this.#nextSeq += count;
    this.#active++;
    return entry;
  }

  /**
   * Gives up on a batch that failed outright: it frees its slot but is never released, so the
   * low-water mark never passes it.
   */
  abandon(entry: InflightEntry<T>): void {
    if (entry.done) throw new Error('batch finished twice');
    this.#active--;
  }

  /** Outcomes of finished batches held behind an unfinished or abandoned one, in input order. */
  held(): T[] {
    return this.#window.filter((e) => e.done).map((e) => e.outcome as T);
  }

  /** Marks a batch finished; returns the outcomes now released, in input order. */
  finish(entry: InflightEntry<T>, outcome: T): T[] {
    if (entry.done) throw new Error('batch finished twice');
    entry.done = true;
    entry.outcome = outcome;
    this.#active--;
    const released: T[] = [];
    let n = 0;
    while (n < this.#window.length && this.#window[n]!.done) {
      const e = this.#window[n]!;
      released.push(e.outcome as T);
      this.#lowSeq = e.firstSeq + e.count;
      n++;
    }
    if (n > 0) this.#window.splice(0, n);
    return released;
  }
}
