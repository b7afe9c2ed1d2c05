import { describe, expect, it } from 'vitest';
import { EventLoopMonitor } from '../src/event-loop.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('EventLoopMonitor', () => {
  it('reports a loop held for 80 ms, and keeps reporting it for the next window', async () => {
    const monitor = new EventLoopMonitor(200);
    try {
      await sleep(50);
      const end = performance.now() + 80;
      while (performance.now() < end); // hold the loop
      await sleep(30);
      expect(monitor.current().eventLoopDelayMaxMs).toBeGreaterThanOrEqual(60);
      await sleep(100); // the window has turned (at 200 ms): still reported, from the previous one
      expect(monitor.current().eventLoopDelayMaxMs).toBeGreaterThanOrEqual(60);
    } finally {
      monitor.close();
    }
  });
});
