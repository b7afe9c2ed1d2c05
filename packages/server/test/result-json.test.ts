import { describe, expect, it } from 'vitest';
import { thrown } from '../../../test/helpers/thrown.js';
import { resultJson } from '../src/rethinkdb/cursor.js';
import { ReqlRuntimeError } from '../src/rethinkdb/errors.js';
import { ErrorType } from '../src/rethinkdb/protocol.js';

function failure(value: unknown): ReqlRuntimeError {
  const err = thrown(() => resultJson(value), ReqlRuntimeError);
  expect(err.errorType).toBe(ErrorType.INTERNAL);
  return err;
}

describe('resultJson: every response body is JSON', () => {
  it('serializes datums, null-prototype objects with a __proto__ key included', () => {
    const o = Object.create(null) as Record<string, unknown>;
    // biome-ignore lint/suspicious/noProto: an own field named __proto__ is what this test serializes
    o.__proto__ = { x: 1 };
    o.a = [1, 'b', null];
    expect(resultJson(o)).toBe('{"__proto__":{"x":1},"a":[1,"b",null]}');
    expect(resultJson(undefined)).toBe('null');
  });

  it('fails with an INTERNAL error for what JSON cannot hold, instead of sending `undefined`', () => {
    expect(failure(Object.prototype.toString).message).toBe(
      'The result cannot be sent as JSON: a value of type function.',
    );
    expect(failure(10n).message).toMatch(/^The result cannot be sent as JSON: /);
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(failure(deep).message).toBe('The result cannot be sent as JSON: it is nested too deeply.');
  });
});
