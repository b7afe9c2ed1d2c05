/**
 * A server-wide budget of bytes held in memory on behalf of clients (request bodies being
 * received). take() fails once the total would pass the limit, so the caller refuses the
 * request (503) instead of buffering more: memory stays bounded however many clients hold
 * unfinished bodies.
 */
export class ByteBudget {
  readonly limit: number;
  #used = 0;

  constructor(limit: number) {
    this.limit = limit;
  }

  get used(): number {
    return this.#used;
  }

  /** Reserve `n` bytes; false (nothing reserved) when that would pass the limit. */
  take(n: number): boolean {
    if (this.#used + n > this.limit) return false;
    this.#used += n;
    return true;
  }

  release(n: number): void {
    this.#used = Math.max(0, this.#used - n);
  }
}
