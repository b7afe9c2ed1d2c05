/**
 * A table's change feed (`table.changes()`): every insert, replace, update and delete the engine
 * applies to the table from the subscription on, in commit order, as `{ old, new }` (null: the
 * document did not exist / was deleted). The engine queues at most `queueSize` changes for a feed
 * that is not read; past that it drops them and the next batch says how many (`skipped`), so a
 * slow reader costs bounded memory whatever the write rate. Read it as an async iterable of
 * batches; `close()` (or `break`) unsubscribes. It ends when the table is dropped or the database
 * closes.
 */
import type { NativeChangeFeed } from './binding.ts';
import type { Key } from './options.ts';

export interface Change<Doc> {
  key: Key;
  old: Doc | null;
  new: Doc | null;
}

export interface ChangeBatch<Doc> {
  /** In commit order. */
  changes: Change<Doc>[];
  /** Changes dropped just after these ones because the queue was full. */
  skipped: number;
}

/** Changes taken from the engine per call. */
const TAKE = 1024;

export class ChangeFeed<Doc> implements AsyncIterableIterator<ChangeBatch<Doc>> {
  #native: NativeChangeFeed | null = null;
  #wake: (() => void) | null = null;
  #closed = false;

  /** @internal Use `table.changes()`. */
  constructor(open: (onReady: () => void) => NativeChangeFeed) {
    this.#native = open(() => {
      const wake = this.#wake;
      this.#wake = null;
      wake?.();
    });
  }

  /** The next batch, waiting for one; done once the feed ended or was closed. */
  async next(): Promise<IteratorResult<ChangeBatch<Doc>>> {
    for (;;) {
      if (this.#closed || !this.#native) return { done: true, value: undefined };
      // Listen before taking, so a ring between an empty take and the wait is not lost.
      const rang = new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
      const batch = JSON.parse(this.#native.take(TAKE)) as ChangeBatch<Doc> & { closed: boolean };
      if (batch.changes.length > 0 || batch.skipped > 0) {
        this.#wake = null;
        return { done: false, value: { changes: batch.changes, skipped: batch.skipped } };
      }
      if (batch.closed) {
        this.close();
        return { done: true, value: undefined };
      }
      await rang;
    }
  }

  /** Unsubscribes; a pending `next()` resolves done. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#native?.close();
    this.#native = null;
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }

  async return(): Promise<IteratorResult<ChangeBatch<Doc>>> {
    this.close();
    return { done: true, value: undefined };
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}
