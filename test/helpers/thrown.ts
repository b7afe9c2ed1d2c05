/** Synchronous failures in tests: what a call threw, checked to be of the expected class. */
import { expect } from 'vitest';

/** Calls `fn`, which must throw an instance of `type`; returns what it threw. */
export function thrown<E extends Error>(fn: () => unknown, type: abstract new (...args: never[]) => E): E {
  let result: unknown;
  try {
    result = fn();
  } catch (err) {
    expect(err).toBeInstanceOf(type);
    return err as E;
  }
  throw new Error(`expected ${type.name} to be thrown; the call returned ${JSON.stringify(result)}`);
}
