import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLoader } from '../src/index.js';
import { InflightWindow } from '../src/window.js';
import { EngineTarget, settle } from './engine-target.js';

const BATCH_BYTES = 75_000;

/**
 * A target that serves one batch at a time, each taking `serviceMs` (its apply time, or the
 * interval a write-rate limit allows): with `size` batches in flight each one waits for the
 * others, so its latency is size × serviceMs, and one is acknowledged every serviceMs.
 * Returns the window's sizes after each ack.
 */
function drive(w: InflightWindow, clock: { now: number }, serviceMs: number, acks: number): number[] {
  const sizes: number[] = [];
  for (let i = 0; i < acks; i++) {
    clock.now += serviceMs;
    sizes.push(w.onAck(w.size * serviceMs, BATCH_BYTES, w.size, clock.now));
  }
  return sizes;
}

/** Batches that never wait: the target is faster than the producer. */
function unhurried(w: InflightWindow, clock: { now: number }, latencyMs: number, acks: number): number[] {
  const sizes: number[] = [];
  for (let i = 0; i < acks; i++) {
    clock.now += 4 * latencyMs;
    sizes.push(w.onAck(latencyMs, BATCH_BYTES, w.size, clock.now));
  }
  return sizes;
}

describe('InflightWindow (how many batches to keep in flight)', () => {
  it('stays at the configured concurrency while batches do not wait', () => {
    const clock = { now: 0 };
    const w = new InflightWindow(4, clock.now);
    expect(unhurried(w, clock, 1.5, 200).every((s) => s === 4)).toBe(true);
  });

  it('drops to one batch in flight under a write-rate limit, and returns to the maximum after it', () => {
    const clock = { now: 0 };
    const w = new InflightWindow(4, clock.now);
    unhurried(w, clock, 1.5, 200); // apply time 1.5 ms: the base
    // The engine paces: one 500-document batch every 6 ms, whatever is in flight.
    const paced = drive(w, clock, 6, 2000); // 12 s
    expect(paced.slice(0, 3)).toEqual([4, 4, 4]);
    expect(paced.slice(20).every((s) => s === 1)).toBe(true);
    // Pacing over: batches stop waiting, and the window opens one step per window's worth of acks.
    const after = unhurried(w, clock, 1.5, 20);
    expect(after.at(-1)).toBe(4);
  });

  it('keeps one batch waiting while the target is busy with no pause (no idle gap between batches)', () => {
    const clock = { now: 0 };
    const w = new InflightWindow(4, clock.now);
    unhurried(w, clock, 1.5, 10); // the load's first batches, which find the target idle
    const sizes = drive(w, clock, 1.5, 400);
    expect(sizes.slice(50).every((s) => s === 2)).toBe(true);
  });

  it('does not take a small batch for a fast target', () => {
    const clock = { now: 0 };
    const w = new InflightWindow(4, clock.now);
    // The first batch, closed by the flush timer with a tenth of the documents, came back fast.
    clock.now += 1;
    w.onAck(0.3, BATCH_BYTES / 10, 1, clock.now);
    // Full batches that did not wait: 1.5 ms each. The window must stay open.
    expect(unhurried(w, clock, 1.5, 100).every((s) => s === 4)).toBe(true);
  });

  it('never leaves 1 to max', () => {
    const clock = { now: 0 };
    const one = new InflightWindow(1, clock.now);
    expect(drive(one, clock, 5, 100).every((s) => s === 1)).toBe(true);
    const w = new InflightWindow(3, clock.now);
    unhurried(w, clock, 1, 50);
    expect(drive(w, clock, 50, 200).every((s) => s >= 1 && s <= 3)).toBe(true);
  });
});

describe('loader: batches in flight', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('feeds the window every acknowledgement and keeps in flight what it answers', async () => {
    // The window's decisions on given latencies are pinned above, on a virtual clock; here, on
    // the real engine, that the loader hands it each batch and follows its answer.
    const onAck = vi.spyOn(InflightWindow.prototype, 'onAck'); // records, and calls the real one
    const target = await EngineTarget.create();
    const loader = createLoader({
      target,
      table: 't',
      batchSize: 10,
      concurrency: 4,
      flushMs: 0,
      adaptiveConcurrency: true,
    });
    for (let i = 0; i < 600; i++) {
      await loader.write({ id: i });
      const answered = onAck.mock.results.at(-1)?.value as number | undefined;
      expect(loader.progress().inFlightLimit).toBe(answered ?? 4);
    }
    const summary = await loader.end();
    expect(summary.documents.written).toBe(600);
    expect(await target.count()).toBe(600);
    expect(onAck).toHaveBeenCalledTimes(60);
    const sizes = new Set(target.calls.map((c) => Buffer.byteLength(c.payload)));
    for (const [latencyMs, bytes, inFlight] of onAck.mock.calls) {
      expect(latencyMs).toBeGreaterThanOrEqual(0);
      expect(sizes.has(bytes)).toBe(true);
      expect(inFlight).toBeGreaterThanOrEqual(1);
      expect(inFlight).toBeLessThanOrEqual(4);
    }
  });

  it('keeps `concurrency` in flight when adaptiveConcurrency is false', async () => {
    const onAck = vi.spyOn(InflightWindow.prototype, 'onAck');
    const target = await EngineTarget.create();
    target.hold = true;
    const loader = createLoader({
      target,
      table: 't',
      batchSize: 10,
      concurrency: 4,
      flushMs: 0,
      adaptiveConcurrency: false,
    });
    const writes = (async () => {
      for (let i = 0; i < 600; i++) await loader.write({ id: i });
    })();
    await target.untilHeld(4);
    await settle();
    expect(target.heldCount()).toBe(4);
    expect(loader.progress().inFlightLimit).toBe(4);
    target.release(0); // one acknowledgement frees one slot: the next batch takes it
    await target.untilHeld(4);
    await settle();
    expect(target.heldCount()).toBe(4);
    target.releaseAll();
    await writes;
    const summary = await loader.end();
    expect(summary.documents.written).toBe(600);
    expect(target.maxActive).toBe(4);
    expect(onAck).not.toHaveBeenCalled();
  });
});
