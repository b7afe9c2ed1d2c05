import { describe, expect, it } from 'vitest';
import { thrown } from '../../../test/helpers/thrown.js';
import { ReqlCompileError } from '../src/rethinkdb/errors.js';
import { compile } from '../src/rethinkdb/term/compiler.js';

function compileError(term: unknown): { message: string; backtrace: unknown[] } {
  const err = thrown(() => compile(term), ReqlCompileError);
  return { message: err.message, backtrace: err.backtrace };
}

describe('term compiler', () => {
  it('folds literal objects and MAKE_ARRAY into one datum', () => {
    expect(compile({ a: 1, b: { c: [2, [1, 2, { d: [2, [3]] }]] } })).toEqual({
      kind: 'datum',
      value: { a: 1, b: { c: [1, 2, { d: [3] }] } },
      depth: 5,
    });
    expect(compile('x')).toEqual({ kind: 'datum', value: 'x', depth: 0 });
    expect(compile([1, [{ a: [2, [1]] }]])).toEqual({ kind: 'datum', value: { a: [2, [1]] }, depth: 3 });
  });

  it('keeps terms inside objects and arrays', () => {
    const n = compile({ a: [103, []], b: 1 });
    expect(n.kind).toBe('obj');
  });

  it('builds terms with args and optargs (both drivers’ shapes)', () => {
    const js = compile([56, [[15, ['t']], { id: 1 }], { durability: 'soft' }]);
    const ts = compile([56, [[15, [[14, ['test']], 't']], { id: 1 }], { durability: 'soft' }]);
    expect(js).toMatchObject({ kind: 'term', type: 56, optargs: { durability: { kind: 'datum', value: 'soft' } } });
    expect(ts).toMatchObject({
      kind: 'term',
      type: 56,
      args: [
        { type: 15, args: [{ type: 14 }, { value: 't' }] },
        { kind: 'datum', value: { id: 1 } },
      ],
    });
    expect(compile([59])).toMatchObject({ kind: 'term', type: 59, args: [] });
    expect(compile([59, []])).toMatchObject({ kind: 'term', type: 59, args: [] });
  });

  it('binds r.row to the enclosing one-argument function and checks variables', () => {
    const f = compile([
      39,
      [
        [15, ['t']],
        [
          69,
          [
            [2, [7]],
            [21, [[170, [[13, []], 'age']], 5]],
          ],
        ],
      ],
    ]);
    expect(JSON.stringify(f)).toContain('"kind":"var","id":7');
    expect(compileError([13, []]).message).toBe('r.row is not defined in this context.');
    expect(
      compileError([
        69,
        [
          [2, [1, 2]],
          [13, []],
        ],
      ]).message,
    ).toBe('r.row is not defined in this context.');
    expect(compileError([10, [3]]).message).toBe('Variable name not found.');
    // rethinkdb-ts reuses ids in sibling functions; each is scoped lexically.
    expect(() =>
      compile([
        67,
        [
          [
            64,
            [
              [
                69,
                [
                  [2, [1]],
                  [10, [1]],
                ],
              ],
              1,
            ],
          ],
          [
            64,
            [
              [
                69,
                [
                  [2, [1]],
                  [10, [1]],
                ],
              ],
              2,
            ],
          ],
        ],
      ]),
    ).not.toThrow();
  });

  it('names unknown and unsupported terms, wrong arity and unknown optargs, with a backtrace', () => {
    expect(compileError([9999, []]).message).toBe('Unrecognized TermType: 9999.');
    const unsupported = compileError([36, [[15, ['t']], 1, 2]]);
    expect(unsupported.message).toBe('Wharf does not support the term BETWEEN_DEPRECATED (36).');
    expect(
      compileError([
        39,
        [
          [15, ['t']],
          [36, [[15, ['t']], 1, 2]],
        ],
      ]).backtrace,
    ).toEqual([1]);
    expect(compileError([16, [[15, ['t']]]]).message).toBe('Expected 2 arguments but found 1.');
    expect(compileError([15, []]).message).toBe('Expected between 1 and 2 arguments but found 0.');
    expect(compileError([78, []]).message).toBe('Expected 1 or more arguments but found 0.');
    expect(compileError([56, [[15, ['t']], {}], { bogus: 1 }]).message).toBe('Unrecognized optional argument `bogus`.');
    expect(compileError([73, ['a']]).message).toBe('ASC may only be used as an argument to ORDER_BY or UNION.');
    expect(() =>
      compile([
        41,
        [
          [15, ['t']],
          [74, ['a']],
        ],
      ]),
    ).not.toThrow();
    expect(() => compile([41, [[15, ['t']]], { index: [74, ['id']] }])).not.toThrow();
    expect(compileError([1, 2, 3, 4]).message).toBe('Expected between 1 and 3 elements in a raw term, but found 4.');
  });
});
