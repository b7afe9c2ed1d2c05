/**
 * The cursor of a changefeed query (`….changes()`, and whatever the query applies to the change
 * stream after it). A feed never ends on its own, so it is served as RethinkDB serves one:
 * - the START is answered at once with what is ready (states, initial values; possibly nothing),
 *   as SUCCESS_PARTIAL with the feed's notes in `n` (SEQUENCE_FEED, ATOM_FEED,
 *   ORDER_BY_LIMIT_FEED, and INCLUDES_STATES), so the drivers make a feed cursor of it;
 * - a CONTINUE is answered as soon as at least one row is ready, with every row ready then (up
 *   to the batch limits), never with an empty batch;
 * - a query that ends the stream (`.changes().limit(n)`) ends with SUCCESS_SEQUENCE;
 * - `close()` (STOP, the connection closing, shutdown) ends the feed: the engine feed is closed
 *   at once, and a CONTINUE still waiting is answered with an empty SUCCESS_SEQUENCE.
 *
 * "Ready" is exact, not timed: the term layer's FeedHandle says when its feed has nothing left
 * and waits for changes (`idle()`); rows the query's later terms are still computing from
 * changes already taken are waited for. The feed takes changes from the engine only while a
 * CONTINUE waits for a row (`want()`).
 */
import { type Batch, type BatchLimits, resultJson } from './cursor.js';

/** What the term layer gives the protocol layer for a changefeed query (term/terms/changefeeds.ts). */
export interface FeedHandle {
  /** The response notes of the feed (ql2.proto ResponseNote). */
  readonly notes: readonly number[];
  /**
   * Resolves once every feed of the query has nothing ready and is waiting on the engine for
   * changes (at once if it is already waiting), or has been closed.
   */
  idle(): Promise<void>;
  /**
   * Whether a CONTINUE waits for a row. Only then do the feeds take changes from the engine, so
   * changes made while the client is not asking stay in the engine's bounded queue (where
   * `squash` merges them and an overflow is counted), as in RethinkDB.
   */
  want(waiting: boolean): void;
  /** Ends the feeds: their engine feeds are closed; a `next()` waiting on them ends (done). */
  close(): void;
}

const IDLE: unique symbol = Symbol('idle');

export class FeedCursor {
  readonly #source: AsyncIterator<unknown>;
  readonly #feed: FeedHandle;
  readonly #limits: BatchLimits;
  #first = true;
  #done = false;
  /** A row request still running when the last batch was sent: the next batch takes its row. */
  #pending: Promise<IteratorResult<unknown>> | null = null;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(source: AsyncIterator<unknown>, feed: FeedHandle, limits: BatchLimits) {
    this.#source = source;
    this.#feed = feed;
    this.#limits = limits;
  }

  get notes(): readonly number[] {
    return this.#feed.notes;
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
    const first = this.#first;
    this.#first = false;
    const maxBytes = first ? Math.max(1, Math.floor(this.#limits.bytes / 4)) : this.#limits.bytes;
    const rows: string[] = [];
    let bytes = 0;
    try {
      while (rows.length < this.#limits.rows && bytes < maxBytes) {
        const next = this.#pending ?? this.#source.next();
        this.#pending = next;
        // The first batch, and any batch with rows already, goes out once nothing more is ready;
        // otherwise wait for a row.
        let item: IteratorResult<unknown> | typeof IDLE;
        if (first || rows.length > 0)
          item = await Promise.race([next, this.#feed.idle().then((): typeof IDLE => IDLE)]);
        else {
          this.#feed.want(true);
          try {
            item = await next;
          } finally {
            this.#feed.want(false);
          }
        }
        if (typeof item === 'symbol') break;
        this.#pending = null;
        if (item.done) {
          this.#done = true;
          return { rows, done: true };
        }
        const text = resultJson(item.value);
        rows.push(text);
        bytes += text.length;
      }
      return { rows, done: false };
    } catch (err) {
      this.#done = true;
      this.#feed.close();
      throw err;
    }
  }

  /** End the feed (STOP, connection closed, shutdown). A CONTINUE waiting gets an empty SUCCESS_SEQUENCE. */
  async close(): Promise<void> {
    if (this.#done) return;
    this.#done = true;
    this.#feed.close();
    await this.#queue;
    try {
      await this.#source.return?.();
    } catch {
      // the source is being dropped
    }
  }
}
