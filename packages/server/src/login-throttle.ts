/**
 * Failed-login throttling per client address, shared by the HTTP/ws credentials check and the
 * driver port's SCRAM handshake (one budget: an address cannot double its guesses by using both).
 * An address with `perMinute` failures within its current minute is refused (without checking
 * its password) until that minute is over. Successful logins are not counted. The table holds at
 * most MAX_ADDRESSES entries; expired ones are dropped first, then the oldest.
 */

const WINDOW_MS = 60_000;
const MAX_ADDRESSES = 10_000;

interface Entry {
  windowStart: number;
  failures: number;
}

export class LoginThrottle {
  readonly perMinute: number;
  readonly #entries = new Map<string, Entry>();
  readonly #now: () => number;

  constructor(perMinute: number, now: () => number = Date.now) {
    this.perMinute = perMinute;
    this.#now = now;
  }

  #entry(address: string): Entry | undefined {
    const e = this.#entries.get(address);
    if (e !== undefined && this.#now() - e.windowStart >= WINDOW_MS) {
      this.#entries.delete(address);
      return undefined;
    }
    return e;
  }

  /** Seconds until `address` may try again (0: it may try now). */
  retryAfterSeconds(address: string): number {
    const e = this.#entry(address);
    if (e === undefined || e.failures < this.perMinute) return 0;
    return Math.max(1, Math.ceil((e.windowStart + WINDOW_MS - this.#now()) / 1000));
  }

  /** Count one failed login from `address`. */
  fail(address: string): void {
    const e = this.#entry(address);
    if (e !== undefined) {
      e.failures++;
      return;
    }
    if (this.#entries.size >= MAX_ADDRESSES) this.#prune();
    this.#entries.set(address, { windowStart: this.#now(), failures: 1 });
  }

  #prune(): void {
    const now = this.#now();
    for (const [addr, e] of this.#entries) if (now - e.windowStart >= WINDOW_MS) this.#entries.delete(addr);
    // Still full: drop the oldest (Map iterates in insertion order).
    for (const addr of this.#entries.keys()) {
      if (this.#entries.size < MAX_ADDRESSES) break;
      this.#entries.delete(addr);
    }
  }
}
