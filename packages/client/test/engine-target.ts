/**
 * The target of the loader's tests: the real embedded target (`EmbeddedTarget`) on a real engine
 * in a temporary directory. Around it, only what the in-process engine cannot do by itself and
 * the tests need: it records the calls the loader makes, and it can hold inserts before they reach
 * the engine and let them through in any order — what a network or a slow remote target does to
 * acknowledgements (late, out of order). It never answers in the engine's place.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Database } from '@wharf/engine';
import { openTemp } from '../../../test/helpers/temp-database.js';
import { LoaderError } from '../src/errors.js';
import { EmbeddedTarget } from '../src/targets/embedded.js';
import type { InsertOptions, Payload, Target } from '../src/targets/target.js';
import type { TargetStats, WriteResult } from '../src/types.js';

export interface Call {
  payload: string;
  count: number;
  opts: InsertOptions;
}

export class EngineTarget implements Target {
  readonly kind = 'embedded';
  readonly url: string;
  /** 'json': batches go to the engine's JSON-array path, as for a RethinkDB-style target. */
  payloadFormat: 'ndjson' | 'json' = 'ndjson';
  readonly db: Database;
  readonly #embedded: EmbeddedTarget;
  readonly calls: Call[] = [];
  /** Inserts under way (held ones included), and the most there were at once. */
  active = 0;
  maxActive = 0;
  syncs = 0;
  /** While set, each insert waits before it reaches the engine until `release()` lets it through. */
  hold = false;
  /**
   * How many of the next inserts lose their answer after the engine wrote them: the connection of
   * a remote target dropping before the acknowledgement arrived (a transient failure).
   */
  loseAnswers = 0;
  #held: (() => void)[] = [];
  #onHeld: (() => void)[] = [];

  constructor(db: Database) {
    this.db = db;
    this.#embedded = new EmbeddedTarget(db);
    this.url = this.#embedded.url;
  }

  /** A target on a fresh database, removed when the current test ends. */
  static async create(): Promise<EngineTarget> {
    const { db } = await openTemp();
    return new EngineTarget(db);
  }

  open(): Promise<void> {
    return this.#embedded.open();
  }

  ensureTable(table: string, primaryKey: string): Promise<void> {
    return this.#embedded.ensureTable(table, primaryKey);
  }

  heldCount(): number {
    return this.#held.length;
  }

  /** Resolves once `n` inserts are held (at once). */
  async untilHeld(n: number): Promise<void> {
    while (this.#held.length < n) await new Promise<void>((resolve) => this.#onHeld.push(resolve));
  }

  /** Lets held inserts through: the one at `index` (in arrival order), or all of them, last first. */
  release(index?: number): void {
    if (index === undefined) {
      const all = this.#held.reverse();
      this.#held = [];
      for (const f of all) f();
    } else {
      const [f] = this.#held.splice(index, 1);
      f?.();
    }
  }

  /** Stops holding: what is held goes through (last first), and later inserts are not held. */
  releaseAll(): void {
    this.hold = false;
    this.release();
  }

  async insert(table: string, payload: Payload, opts: InsertOptions): Promise<WriteResult> {
    this.active++;
    this.maxActive = Math.max(this.maxActive, this.active);
    try {
      this.calls.push({ payload: payload.bytes.toString('utf8'), count: payload.count, opts });
      if (this.hold) {
        const released = new Promise<void>((resolve) => this.#held.push(resolve));
        for (const f of this.#onHeld.splice(0)) f();
        await released;
      }
      const result =
        payload.format === 'json'
          ? await this.db.table(table).insertJsonArray(payload.bytes, opts)
          : await this.#embedded.insert(table, payload, opts);
      if (this.loseAnswers > 0) {
        this.loseAnswers--;
        throw new LoaderError('WHARF_ERR_TRANSPORT', 'connection lost before the acknowledgement (test)');
      }
      return result;
    } finally {
      this.active--;
    }
  }

  async sync(): Promise<void> {
    this.syncs++;
    await this.#embedded.sync();
  }

  stats(): Promise<TargetStats | null> {
    return this.#embedded.stats();
  }

  /** The engine's transient failures, and the lost answers this target adds. */
  isTransient(err: unknown): boolean {
    return (err instanceof LoaderError && err.code === 'WHARF_ERR_TRANSPORT') || this.#embedded.isTransient();
  }

  /** The database stays open: the test's cleanup closes it. */
  async close(): Promise<void> {}

  /** Documents stored in `table`, read from the engine. */
  count(table = 't'): Promise<number> {
    return this.db.table(table).count();
  }
}

/**
 * Lets everything that can run without a new acknowledgement run: promise chains and callbacks
 * already due, over several event-loop turns. A loader that has not moved after this is blocked
 * (on a held insert), not slow.
 */
export async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await nextTurn();
}
