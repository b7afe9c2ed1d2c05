/**
 * How many batches to keep in flight: a delay-based window (TCP Vegas's rule) between 1 and the
 * configured concurrency.
 *
 * A second batch in flight helps while the target would otherwise sit idle between batches.
 * Once the target is the bottleneck (its own apply rate, or the engine's write-rate limit while
 * its background merges catch up), more batches only wait in its queue: throughput stays the
 * same, and every insert's latency grows with the queue. The window estimates that queue from
 * latencies alone, so it works the same over every target. Latencies are taken per payload
 * byte, so that a small batch (the last one, or one the flush timer closed) does not pass for a
 * fast target. With `base` the least latency per byte seen lately (a batch that did not wait),
 * and `rtt` and `load` the mean latency per byte and the mean number of batches in flight over
 * the last window's worth of batches, about `load × (1 − base / rtt)` of them were waiting. More
 * than QUEUE_HIGH: one batch fewer; less than QUEUE_LOW, with the window in use: one more.
 */

/** Batches waiting at the target, as estimated, below which the window grows … */
export const QUEUE_LOW = 0.5;
/** … and above which it shrinks. One waiting batch keeps a busy target busy. */
export const QUEUE_HIGH = 1.5;
/** `base` is the least latency per byte of the current and the previous period of this length. */
export const BASE_PERIOD_MS = 10_000;

export class InflightWindow {
  readonly max: number;
  #size: number;
  #acks = 0;
  #sumLatency = 0;
  #sumInFlight = 0;
  #minNow = Number.POSITIVE_INFINITY;
  #minBefore = Number.POSITIVE_INFINITY;
  #periodStart: number;

  constructor(max: number, now: number) {
    this.max = max;
    this.#size = max;
    this.#periodStart = now;
  }

  /** Batches that may be in flight now. */
  get size(): number {
    return this.#size;
  }

  /**
   * A batch of `bytes` was acknowledged `latencyMs` after it was sent with `inFlight` batches in
   * flight (itself included). Returns the new size.
   */
  onAck(latencyMs: number, bytes: number, inFlight: number, now: number): number {
    const perByte = latencyMs / Math.max(1, bytes);
    if (now - this.#periodStart >= BASE_PERIOD_MS) {
      this.#minBefore = this.#minNow;
      this.#minNow = Number.POSITIVE_INFINITY;
      this.#periodStart = now;
    }
    this.#minNow = Math.min(this.#minNow, perByte);
    this.#sumLatency += perByte;
    this.#sumInFlight += inFlight;
    if (++this.#acks < this.#size) return this.#size;
    const rtt = this.#sumLatency / this.#acks;
    const load = this.#sumInFlight / this.#acks;
    const base = Math.min(this.#minNow, this.#minBefore);
    const queued = rtt > 0 ? load * (1 - base / rtt) : 0;
    if (queued > QUEUE_HIGH && this.#size > 1) this.#size--;
    else if (queued < QUEUE_LOW && load > this.#size - 0.5 && this.#size < this.max) this.#size++;
    this.#acks = 0;
    this.#sumLatency = 0;
    this.#sumInFlight = 0;
    return this.#size;
  }
}
