/** LoginThrottle (src/login-throttle.ts) with an injected clock: per-address budgets per minute. */
import { describe, expect, it } from 'vitest';
import { LoginThrottle } from '../src/login-throttle.js';

describe('LoginThrottle', () => {
  it('refuses an address past its failures for the rest of its minute, and no other address', () => {
    let now = 1_000_000;
    const t = new LoginThrottle(3, () => now);
    for (let i = 0; i < 2; i++) t.fail('10.0.0.1');
    expect(t.retryAfterSeconds('10.0.0.1')).toBe(0);
    t.fail('10.0.0.1');
    expect(t.retryAfterSeconds('10.0.0.1')).toBe(60);
    expect(t.retryAfterSeconds('10.0.0.2')).toBe(0);
    now += 59_500;
    expect(t.retryAfterSeconds('10.0.0.1')).toBe(1);
    now += 500;
    expect(t.retryAfterSeconds('10.0.0.1')).toBe(0);
    t.fail('10.0.0.1');
    expect(t.retryAfterSeconds('10.0.0.1')).toBe(0);
  });

  it('keeps at most 10,000 addresses, dropping expired ones first, then the oldest', () => {
    let now = 0;
    const t = new LoginThrottle(1, () => now);
    for (let i = 0; i < 10_000; i++) t.fail(`a${i}`);
    expect(t.retryAfterSeconds('a0')).toBeGreaterThan(0);
    t.fail('newcomer');
    // Full and nothing expired: the oldest went.
    expect(t.retryAfterSeconds('a0')).toBe(0);
    expect(t.retryAfterSeconds('a1')).toBeGreaterThan(0);
    expect(t.retryAfterSeconds('newcomer')).toBeGreaterThan(0);
    now += 60_000;
    t.fail('later');
    expect(t.retryAfterSeconds('later')).toBeGreaterThan(0);
    expect(t.retryAfterSeconds('a1')).toBe(0);
  });
});
