/**
 * Runs at most `limit` tasks at once; the others wait their turn in order.
 *
 * The engine's reads that wait on the disk run on libuv's thread pool, which also parses write
 * batches and serves the application's `fs`, `dns.lookup`, `crypto` and `zlib`. When the disk
 * stalls, reads holding every pool thread held all of those up behind them (an insert batch
 * waited 63 ms for a pool thread while four point reads sat 60–70 ms in `pread`): capped, they
 * always leave a thread free.
 */
export class Gate {
  readonly limit: number;
  #running = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(limit: number) {
    this.limit = limit;
  }

  /** Tasks running now, and tasks waiting for a turn. */
  get running(): number {
    return this.#running;
  }
  get waiting(): number {
    return this.#waiting.length;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#running < this.limit) this.#running++;
    else await new Promise<void>((resolve) => this.#waiting.push(resolve));
    try {
      return await task();
    } finally {
      // The turn passes straight to the next waiter, so a task started meanwhile cannot take it.
      const next = this.#waiting.shift();
      if (next) next();
      else this.#running--;
    }
  }
}

/** All of libuv's thread pool (`UV_THREADPOOL_SIZE`, 4 by default) but one thread, at least 1. */
export function defaultPoolReads(env: NodeJS.ProcessEnv = process.env): number {
  const size = Number(env.UV_THREADPOOL_SIZE);
  const pool = Number.isInteger(size) && size >= 1 ? Math.min(size, 1024) : 4;
  return Math.max(1, pool - 1);
}
