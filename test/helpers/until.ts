/**
 * Waiting in tests for something that must happen: a condition polled until it holds. The bound
 * is no timing assertion (tests never assert on time, see test/README.md): it is far above any
 * normal wait and only ends a wait that a bug would make endless, with a message naming what
 * never happened.
 */
import { vi } from 'vitest';

/** The bound of every wait: reached only when what is awaited never comes. */
export const NEVER_MS = 30_000;

/** Resolves once `condition()` holds, checking it every `intervalMs`; fails naming `what` if it never does. */
export async function until(what: string, condition: () => boolean | Promise<boolean>, intervalMs = 5): Promise<void> {
  try {
    await vi.waitUntil(condition, { timeout: NEVER_MS, interval: intervalMs });
  } catch (err) {
    throw new Error(`still waiting after ${NEVER_MS / 1000} s for ${what}`, { cause: err });
  }
}
