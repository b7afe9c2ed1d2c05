/**
 * The state one `Database` shares with its `Table`s: the native database, the requests waiting
 * for the engine, and whether the handle was closed.
 *
 * Writes, `sync` and table creation/removal are requests: JS picks an id, the engine lists its
 * answer, JS takes the answers listed (`#drain`) when it sees them sealed in the memory it shares
 * with the addon (`#poll`) or when the addon's doorbell rings, and the promise kept under each id
 * settles. No promise, threadsafe function or task is created natively per write.
 *
 * Single-document inserts made in one tick are sent to the engine together, in a few calls
 * (`insertOne`): a native call costs several times the document's own work, and concurrent
 * writers all send their next write in the same tick, the one that delivered their answers.
 */
import {
  binding,
  CONFLICT_CODE,
  type Conflict,
  DURABILITY_CODE,
  type Durability,
  type NativeDatabase,
  type NativeOpenOptions,
  newSharedMemory,
  type SharedMemory,
} from './binding.ts';
import { type ErrorCode, toWharfError, WharfError } from './errors.ts';
import { Gate } from './gate.ts';
import type { HandleOptions } from './options.ts';
import type { WriteResult } from './results.ts';

/** The longest one turn of the poll for a durable answer holds the event loop: timers and I/O run between turns. */
const POLL_SLICE_MS = 0.05;

/**
 * Characters of JSON one call of single-document inserts carries at most (at most 96 KiB of
 * UTF-8): the engine parses them on the JS thread. A longer document goes alone (`request`).
 */
export const INSERT_BATCH_CHARS = 32 * 1024;

/** `RESOLVED.then(f)` runs `f` at the end of the tick: `queueMicrotask` without its AsyncResource. */
const RESOLVED = Promise.resolve();

/**
 * Single-document inserts of one tick go in calls of 16, 32, 64, … documents as they are made,
 * the rest at its end: the engine applies each call while JS makes the next, which pays for the
 * extra calls when many writers resume together.
 */
const FIRST_CHUNK_DOCS = 16;

/**
 * Single-document inserts of this tick into one table with the same options, not sent yet. Their
 * request ids wait in the shared memory's outbox: one batch at a time.
 */
interface InsertBatch {
  table: string;
  durability: Durability;
  conflict: Conflict;
  waitForIndexes: boolean;
  docs: string[];
  chars: number;
}

interface Waiter {
  resolve(value: WriteResult): void;
  reject(error: unknown): void;
  /** Answered only after an fdatasync (a hard write, `sync()`). */
  durable: boolean;
}

export class Handle {
  readonly durability: Durability;
  #native!: NativeDatabase;
  /** The memory shared with the addon: its words, answer slots and outbox. */
  readonly #memory: SharedMemory;
  readonly #sealedWord: number;
  /** Answers taken, ever, mod 2^32: compared with the sealed count by their difference. */
  #delivered = 0;
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
  /** Answers taken by the poll, and by the doorbell's callback (`stats()`). */
  #answersPolled = 0;
  #answersOnDoorbell = 0;
  #batch: InsertBatch | undefined;
  /** Documents at which `insertOne` sends its batch before the end of the tick. */
  #chunkDocs = FIRST_CHUNK_DOCS;
  /** `#endTick` is queued (once a tick, however many calls its inserts take). */
  #endQueued = false;
  /** Reads on libuv's thread pool (see `Gate`). */
  readonly #poolReads: Gate;

  private constructor(options: HandleOptions) {
    this.durability = options.durability;
    this.#spinWaitMs = options.spinWaitUs / 1000;
    this.#poolReads = new Gate(options.poolReads);
    this.#memory = newSharedMemory();
    this.#sealedWord = this.#memory.layout.sealedWord;
  }

  static async open(dir: string, native: NativeOpenOptions, options: HandleOptions): Promise<Handle> {
    try {
      const handle = new Handle(options);
      handle.#native = await binding().NativeDatabase.open(dir, native, handle.#onDoorbell, handle.#memory.bytes);
      return handle;
    } catch (error) {
      throw toWharfError(error);
    }
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** The native database, or a `WHARF_ERR_CLOSED` error once `close` was called. */
  native(): NativeDatabase {
    if (this.#closed) throw new WharfError('WHARF_ERR_CLOSED', 'the database is closed');
    return this.#native;
  }

  /**
   * Sends a request and resolves with the engine's answer: the write result, or a result of
   * zeros for requests that have none. Inserts of this tick not sent yet go first: the engine
   * sees requests in the order they were made.
   */
  request(send: (native: NativeDatabase, id: number) => void, durable = false): Promise<WriteResult> {
    const native = this.native();
    this.#sendBatch();
    const id = this.#newId();
    const answer = this.#waitFor(id, durable);
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
   * Inserts one document (its JSON text) with the other single-document inserts of this tick
   * into the same table with the same options: they are sent in calls of `FIRST_CHUNK_DOCS`,
   * twice that, … as they are made (up to the outbox's `outboxSlots`), and the rest at the end of
   * the tick (a microtask), or before any other request, or once `INSERT_BATCH_CHARS` are
   * reached. So writers resumed together by one group's answers send their next writes together,
   * and the engine gathers those into one group. For documents of at most `INSERT_BATCH_CHARS`:
   * they are parsed on this thread.
   */
  insertOne(
    table: string,
    doc: string,
    durability: Durability,
    conflict: Conflict,
    waitForIndexes: boolean,
  ): Promise<WriteResult> {
    this.native();
    let batch = this.#batch;
    if (
      batch !== undefined &&
      (batch.table !== table ||
        batch.durability !== durability ||
        batch.conflict !== conflict ||
        batch.waitForIndexes !== waitForIndexes ||
        batch.chars + doc.length > INSERT_BATCH_CHARS)
    ) {
      this.#sendBatch();
      batch = undefined;
    }
    if (batch === undefined) {
      batch = this.#batch = { table, durability, conflict, waitForIndexes, docs: [], chars: 0 };
      if (!this.#endQueued) {
        this.#endQueued = true;
        RESOLVED.then(this.#endTick);
      }
    }
    const id = this.#newId();
    const answer = this.#waitFor(id, durability === 'hard');
    this.#memory.outbox[batch.docs.length] = id;
    batch.docs.push(doc);
    batch.chars += doc.length + 1;
    if (batch.docs.length === this.#chunkDocs) {
      this.#sendBatch();
      this.#chunkDocs = Math.min(2 * this.#chunkDocs, this.#memory.layout.outboxSlots);
    }
    return answer;
  }

  /** Sends what the tick's inserts left, and starts the next tick's calls small again. */
  readonly #endTick = (): void => {
    this.#endQueued = false;
    this.#chunkDocs = FIRST_CHUNK_DOCS;
    this.#sendBatch();
  };

  /** Sends the inserts of `insertOne` not sent yet; a failure rejects them all. */
  readonly #sendBatch = (): void => {
    const batch = this.#batch;
    if (batch === undefined) return;
    this.#batch = undefined;
    try {
      this.native().insertEach(
        batch.docs.length,
        batch.table,
        batch.docs.join('\n'),
        DURABILITY_CODE[batch.durability],
        CONFLICT_CODE[batch.conflict],
        batch.waitForIndexes,
      );
      if (batch.durability === 'hard') this.#pollUntilAnswered();
    } catch (error) {
      const failure = toWharfError(error);
      for (let i = 0; i < batch.docs.length; i++) this.#release(this.#memory.outbox[i]!)?.reject(failure);
    }
  };

  /** A free request id. */
  #newId(): number {
    return this.#freeIds.pop() ?? this.#waiters.length;
  }

  /** The promise the answer to request `id` settles. */
  #waitFor(id: number, durable: boolean): Promise<WriteResult> {
    if (durable) this.#durableWaiting++;
    return new Promise<WriteResult>((resolve, reject) => {
      this.#waiters[id] = { resolve, reject, durable };
    });
  }

  /**
   * Keeps the event loop polling while durable requests are unanswered, for up to `spinWaitUs`
   * after the last was sent. Otherwise the thread sleeps in epoll while the committer
   * fdatasyncs, and waking it costs a sizeable part of a fast fdatasync, on every write of a
   * lone hard writer and on every group of concurrent ones.
   *
   * Each turn of the loop (a `setImmediate`) busy-waits up to `POLL_SLICE_MS` for the engine to
   * seal answers, then yields, so timers and I/O still run; a bare `setImmediate` chain would
   * turn the loop so often that its allocations keep the young generation collecting. Sealed answers are those of groups whose acknowledgements are all sent, so the
   * writers of one group resume together and their next writes make one group again.
   */
  #pollUntilAnswered(): void {
    if (this.#spinWaitMs <= 0) return;
    this.#spinDeadline = performance.now() + this.#spinWaitMs;
    if (this.#spinning) return;
    this.#spinning = true;
    setImmediate(this.#poll);
  }

  readonly #poll = (): void => {
    const now = performance.now();
    if (this.#durableWaiting === 0 || now >= this.#spinDeadline) {
      // Answers sealed from now on are taken when the doorbell rings.
      this.#spinning = false;
      return;
    }
    const sliceEnd = Math.min(now + POLL_SLICE_MS, this.#spinDeadline);
    while (!this.#sealedWaiting() && performance.now() < sliceEnd) {
      // If the committer, or a V8 thread, waits for this CPU, let it run: on 2 vCPUs the
      // scheduler was seen to leave both threads on one CPU for ms while the other idled.
      this.#native.yieldCpu();
    }
    // Taken here rather than by the doorbell on the loop's next turn, which would add an epoll,
    // an eventfd read and a dispatch to every answer.
    if (this.#sealedWaiting()) this.#answersPolled += this.#drain();
    setImmediate(this.#poll);
  };

  /** Answers are sealed that JS has not taken. */
  #sealedWaiting(): boolean {
    return ((Atomics.load(this.#memory.words, this.#sealedWord) - this.#delivered) | 0) > 0;
  }

  readonly #onDoorbell = (): void => {
    this.#answersOnDoorbell += this.#drain();
  };

  /** How the answers reached JS so far: by the poll, or on the doorbell. */
  answerCounts(): { answersPolled: number; answersOnDoorbell: number } {
    return { answersPolled: this.#answersPolled, answersOnDoorbell: this.#answersOnDoorbell };
  }

  /**
   * Takes every answer listed and settles their promises; returns how many. Their continuations
   * all run in the microtask checkpoint after it, so writers answered together send their next
   * writes in one tick.
   */
  #drain(): number {
    let taken = 0;
    for (;;) {
      const n = this.#native.deliverAnswers();
      this.#delivered = (this.#delivered + n) | 0;
      this.#settle(n);
      taken += n;
      if (n < this.#memory.layout.answerSlots) return taken;
    }
  }

  /**
   * Runs a native read on the thread pool (JSON text) and parses it; native errors become
   * `WharfError`s. At most `poolReads` run at once; the others wait their turn here.
   */
  read<T>(run: (native: NativeDatabase) => Promise<string>): Promise<T> {
    return this.#poolReads.run(() => this.wait(run));
  }

  /** As `read`, for a call that mostly waits (`indexWait`): it does not take a read's turn. */
  async wait<T>(run: (native: NativeDatabase) => Promise<string>): Promise<T> {
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
   * Later calls fail with `WHARF_ERR_CLOSED`.
   */
  /** The engine's counters as JSON text; once `close` resolved, as it left them. */
  statsJson(): string {
    try {
      return this.#native.stats();
    } catch (error) {
      throw toWharfError(error);
    }
  }

  close(): Promise<void> {
    if (!this.#closed) this.#sendBatch();
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

  /** Settles the `n` answers `deliverAnswers` wrote into the slots. */
  #settle(n: number): void {
    const { slots, layout, countField: c } = this.#memory;
    const fields = layout.answerFields;
    const idField = layout.answerIdField;
    const detailsField = layout.answerDetailsField;
    let details: (string | null)[] | undefined;
    for (let i = 0; i < n * fields; i += fields) {
      const waiter = this.#release(slots[i + idField]!);
      if (waiter === undefined) continue;
      const d = slots[i + detailsField]!;
      if (d < 0) {
        // Counts as small integers: double fields would each box a heap number.
        waiter.resolve({
          inserted: slots[i + c.inserted]! | 0,
          replaced: slots[i + c.replaced]! | 0,
          unchanged: slots[i + c.unchanged]! | 0,
          deleted: slots[i + c.deleted]! | 0,
          skipped: slots[i + c.skipped]! | 0,
          errors: slots[i + c.errors]! | 0,
        });
        continue;
      }
      details ??= this.#native.answerDetails();
      const code = details[2 * d]!;
      const text = details[2 * d + 1]!;
      if (code !== null) waiter.reject(new WharfError(code as ErrorCode, text));
      else waiter.resolve(JSON.parse(text) as WriteResult);
    }
  }
}
