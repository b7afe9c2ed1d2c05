/**
 * The state one `Database` shares with its `Table`s: the native database, the requests waiting
 * for the engine, and whether the handle was closed.
 *
 * Writes, `sync` and table creation/removal are requests: JS picks an id, the engine answers
 * through the one completion callback registered at open, and the promise kept under that id
 * settles. No promise, threadsafe function or task is created natively per write.
 */
import { binding, type CompletionCallback, type Durability, type NativeDatabase, type NativeOpenOptions } from './binding.ts';
import { toWharfError, WharfError, type ErrorCode } from './errors.ts';
import type { WriteResult } from './results.ts';

/** The longest one turn of the poll for a durable answer holds the event loop. */
const POLL_SLICE_MS = 0.05;

interface Waiter {
  resolve(value: WriteResult): void;
  reject(error: unknown): void;
  /** Answered only after an fdatasync (a hard write, `sync()`). */
  durable: boolean;
}

export class Handle {
  readonly durability: Durability;
  #native!: NativeDatabase;
  #closed = false;
  #closing: Promise<void> | undefined;
  /**
   * Waiters by request id. An id is a slot index, reused once answered: cheaper than a Map on
   * the path of every write (a Map that toggles between 0 and 1 entries rehashes every time).
   */
  readonly #waiters: (Waiter | undefined)[] = [];
  readonly #freeIds: number[] = [];
  /** Polling for durable answers: see `#pollUntilAnswered`. */
  readonly #spinWaitMs: number;
  #durableWaiting = 0;
  #spinDeadline = 0;
  #spinning = false;

  private constructor(durability: Durability, spinWaitUs: number) {
    this.durability = durability;
    this.#spinWaitMs = spinWaitUs / 1000;
  }

  static async open(dir: string, options: NativeOpenOptions, durability: Durability, spinWaitUs: number): Promise<Handle> {
    const handle = new Handle(durability, spinWaitUs);
    try {
      handle.#native = await binding().NativeDatabase.open(dir, options, handle.#complete);
    } catch (error) {
      throw toWharfError(error);
    }
    return handle;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** The native database, or a `WHARF_CLOSED` error once `close` was called. */
  native(): NativeDatabase {
    if (this.#closed) throw new WharfError('WHARF_CLOSED', 'the database is closed');
    return this.#native;
  }

  /**
   * Sends a request and resolves with the engine's answer: the write result, or a result of
   * zeros for requests that have none.
   */
  request(send: (native: NativeDatabase, id: number) => void, durable = false): Promise<WriteResult> {
    const native = this.native();
    const id = this.#freeIds.pop() ?? this.#waiters.length;
    const answer = new Promise<WriteResult>((resolve, reject) => {
      this.#waiters[id] = { resolve, reject, durable };
    });
    if (durable) this.#durableWaiting++;
    try {
      send(native, id);
    } catch (error) {
      this.#release(id);
      return Promise.reject(toWharfError(error));
    }
    if (durable) this.#pollUntilAnswered();
    return answer;
  }

  /**
   * Keeps the event loop polling while one durable request is unanswered, for up to
   * `spinWaitUs` after it was sent. Otherwise the thread sleeps in epoll while the committer
   * fdatasyncs, and waking it costs 25–75 µs on a VM, more under load: a third of a fast
   * fdatasync, on every write of a lone hard writer. Several waiting requests share one wake-up,
   * so the poll stops at the second.
   *
   * Each turn of the loop (a `setImmediate`) busy-waits up to `POLL_SLICE_MS` for the engine to
   * queue the answer, then yields, so timers and I/O still run: a bare `setImmediate` chain
   * turned the loop every microsecond or two, and its allocations cost 20 scavenges per 1000
   * inserts.
   */
  #pollUntilAnswered(): void {
    if (this.#spinWaitMs <= 0 || this.#durableWaiting !== 1) return;
    this.#spinDeadline = performance.now() + this.#spinWaitMs;
    if (this.#spinning) return;
    this.#spinning = true;
    setImmediate(this.#poll);
  }

  readonly #poll = (): void => {
    let now = performance.now();
    if (this.#durableWaiting !== 1 || now >= this.#spinDeadline) {
      this.#spinning = false;
      return;
    }
    const sliceEnd = Math.min(now + POLL_SLICE_MS, this.#spinDeadline);
    while (now < sliceEnd && !this.#native.answersQueued()) now = performance.now();
    setImmediate(this.#poll);
  };

  /** Runs a native read (JSON text) and parses it; native errors become `WharfError`s. */
  async read<T>(run: (native: NativeDatabase) => Promise<string>): Promise<T> {
    try {
      return JSON.parse(await run(this.native())) as T;
    } catch (error) {
      throw toWharfError(error);
    }
  }

  /** Calls a synchronous native method; native errors become `WharfError`s. */
  call<T>(run: (native: NativeDatabase) => T): T {
    try {
      return run(this.native());
    } catch (error) {
      throw toWharfError(error);
    }
  }

  /**
   * Closes the native database: the engine answers every request already sent, syncs and stops.
   * Later calls fail with `WHARF_CLOSED`.
   */
  close(): Promise<void> {
    this.#closed = true;
    this.#closing ??= this.#native.close().catch((error: unknown) => {
      throw toWharfError(error);
    });
    return this.#closing;
  }

  #release(id: number): Waiter | undefined {
    const waiter = this.#waiters[id];
    if (waiter !== undefined) {
      this.#waiters[id] = undefined;
      this.#freeIds.push(id);
      if (waiter.durable) this.#durableWaiting--;
    }
    return waiter;
  }

  /** The completion callback handed to the addon; runs on the JS thread. */
  readonly #complete: CompletionCallback = (id, code, text, inserted, replaced, unchanged, deleted, skipped, errors) => {
    const waiter = this.#release(id);
    if (waiter === undefined) return;
    if (code !== null) {
      waiter.reject(new WharfError(code as ErrorCode, text));
    } else if (text === '') {
      waiter.resolve({ inserted, replaced, unchanged, deleted, skipped, errors });
    } else {
      waiter.resolve(JSON.parse(text) as WriteResult);
    }
  };
}
