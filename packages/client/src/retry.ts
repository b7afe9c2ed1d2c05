/** Retry with exponential backoff and full jitter, for transient target failures only. */

export interface RetryOptions {
  /** Attempts after the first one. Default 5. 0 disables retries. */
  retries: number;
  /** First delay. Default 100 ms. */
  minDelayMs: number;
  /** Cap on one delay. Default 5000 ms. */
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryOptions = { retries: 5, minDelayMs: 100, maxDelayMs: 5000 };

/** Delay before retry number `attempt` (1-based): random in [d/2, d], d = min·2^(attempt−1) capped. */
export function backoffDelay(attempt: number, opts: RetryOptions, random: () => number = Math.random): number {
  const d = Math.min(opts.maxDelayMs, opts.minDelayMs * 2 ** (attempt - 1));
  return d / 2 + (random() * d) / 2;
}

/**
 * Runs `fn` until it succeeds, a non-transient error occurs, or retries run out.
 * `onRetry` is told about each retry before its delay.
 */
export async function withRetry<T>(
  fn: (attempt: number) => Promise<T>,
  isTransient: (err: unknown) => boolean,
  opts: RetryOptions,
  onRetry?: (err: unknown, attempt: number, delayMs: number) => void,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (err) {
      if (attempt >= opts.retries || !isTransient(err)) throw err;
      const delay = backoffDelay(attempt + 1, opts);
      onRetry?.(err, attempt + 1, delay);
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}
