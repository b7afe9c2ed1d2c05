/**
 * How late the server's event loop runs. Every HTTP request, ingest frame, driver query and
 * acknowledgement waits behind whatever holds the loop: a long synchronous task, a GC pause, or
 * the CPU being taken by other threads (the engine's, or other processes on a small machine).
 *
 * perf_hooks' monitorEventLoopDelay (an HdrHistogram fed by a 10-ms timer), in windows of
 * `windowMs`; the figures cover the current window and the one before it, so a reader that polls
 * now and then does not miss a spike.
 */
import { type IntervalHistogram, monitorEventLoopDelay } from 'node:perf_hooks';

/** What the monitor reads of perf_hooks' histogram (nanoseconds); tests pass their own recordings. */
export type DelayHistogram = Pick<IntervalHistogram, 'count' | 'max' | 'percentile' | 'reset' | 'enable' | 'disable'>;

export interface EventLoopDelay {
  /** p99 of the loop's delay over the last one or two windows (ms). */
  eventLoopDelayP99Ms: number;
  /** The longest delay over the last one or two windows (ms). */
  eventLoopDelayMaxMs: number;
}

const NS_PER_MS = 1e6;

export class EventLoopMonitor {
  readonly #histogram: DelayHistogram;
  readonly #timer: NodeJS.Timeout;
  #previous: EventLoopDelay = { eventLoopDelayP99Ms: 0, eventLoopDelayMaxMs: 0 };

  constructor(windowMs = 10_000, histogram: DelayHistogram = monitorEventLoopDelay({ resolution: 10 })) {
    this.#histogram = histogram;
    this.#histogram.enable();
    this.#timer = setInterval(() => {
      this.#previous = this.#window();
      this.#histogram.reset();
    }, windowMs).unref();
  }

  current(): EventLoopDelay {
    const now = this.#window();
    return {
      eventLoopDelayP99Ms: Math.max(now.eventLoopDelayP99Ms, this.#previous.eventLoopDelayP99Ms),
      eventLoopDelayMaxMs: Math.max(now.eventLoopDelayMaxMs, this.#previous.eventLoopDelayMaxMs),
    };
  }

  close(): void {
    clearInterval(this.#timer);
    this.#histogram.disable();
  }

  #window(): EventLoopDelay {
    const h = this.#histogram;
    if (h.count === 0) return { eventLoopDelayP99Ms: 0, eventLoopDelayMaxMs: 0 };
    const ms = (ns: number) => Math.round((ns / NS_PER_MS) * 100) / 100;
    return { eventLoopDelayP99Ms: ms(h.percentile(99)), eventLoopDelayMaxMs: ms(h.max) };
  }
}
