/**
 * EventLoopMonitor's windows, on recorded delays and fake timers: what it reports is decided by
 * which window a delay fell in, not by how fast this machine runs. (That perf_hooks measures the
 * loop is Node's part; the served figures are checked on a real server in test/server/http.test.ts.)
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type DelayHistogram, EventLoopMonitor } from '../src/event-loop.js';

const NS_PER_MS = 1e6;
const WINDOW_MS = 200;

/** Loop delays as perf_hooks' histogram holds them (ns): the test records them by hand. */
class RecordedDelays implements DelayHistogram {
  #delaysNs: number[] = [];
  enabled = false;

  record(ms: number): void {
    this.#delaysNs.push(ms * NS_PER_MS);
  }
  get count(): number {
    return this.#delaysNs.length;
  }
  get max(): number {
    return Math.max(0, ...this.#delaysNs);
  }
  percentile(p: number): number {
    const sorted = [...this.#delaysNs].sort((a, b) => a - b);
    return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
  }
  reset(): void {
    this.#delaysNs = [];
  }
  enable(): boolean {
    this.enabled = true;
    return true;
  }
  disable(): boolean {
    this.enabled = false;
    return true;
  }
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('EventLoopMonitor', () => {
  it('reports a long delay in its window and in the next one, then forgets it', () => {
    const delays = new RecordedDelays();
    const monitor = new EventLoopMonitor(WINDOW_MS, delays);
    expect(delays.enabled).toBe(true);
    expect(monitor.current()).toEqual({ eventLoopDelayP99Ms: 0, eventLoopDelayMaxMs: 0 });

    for (let i = 0; i < 99; i++) delays.record(1);
    delays.record(80.123456); // the loop held once
    expect(monitor.current()).toEqual({ eventLoopDelayP99Ms: 1, eventLoopDelayMaxMs: 80.12 });

    vi.advanceTimersByTime(WINDOW_MS); // the window turns: the spike is still reported, from the previous one
    expect(delays.count).toBe(0);
    delays.record(2);
    expect(monitor.current()).toEqual({ eventLoopDelayP99Ms: 2, eventLoopDelayMaxMs: 80.12 });

    vi.advanceTimersByTime(WINDOW_MS); // two turns later it is gone
    expect(monitor.current()).toEqual({ eventLoopDelayP99Ms: 2, eventLoopDelayMaxMs: 2 });
    vi.advanceTimersByTime(WINDOW_MS);
    expect(monitor.current()).toEqual({ eventLoopDelayP99Ms: 0, eventLoopDelayMaxMs: 0 });

    monitor.close();
    expect(delays.enabled).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });
});
