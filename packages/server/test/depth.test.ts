/**
 * The depth scan of HTTP and ws batches (src/depth.ts) against the real depth of parsed values
 * (fast-check): for any documents, as NDJSON or a JSON array, the scan names the first document
 * deeper than the limit, by line or element, and no other; strings full of brackets, quotes and
 * escapes do not fool it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { findTooDeep } from '../src/depth.js';

/** Levels of objects and arrays, the document itself counting as 1 (the engine's rule). */
function depthOf(v: unknown): number {
  if (v === null || typeof v !== 'object') return 0;
  const children = Array.isArray(v) ? v : Object.values(v as Record<string, unknown>);
  return 1 + children.reduce<number>((m, c) => Math.max(m, depthOf(c)), 0);
}

const tricky = fc.string({ unit: fc.constantFrom('{', '[', '}', ']', '"', '\\', ',', 'a', '\n', ' ') });
const leaf = fc.oneof(fc.integer(), tricky, fc.boolean(), fc.constant(null));
const { value } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'large', withCrossShrink: true },
    leaf,
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(tricky, tie('value'), { maxKeys: 3 }),
  ),
}));
const doc = fc.dictionary(tricky, value, { maxKeys: 3 });

describe('findTooDeep', () => {
  it('finds the first document deeper than the limit, in NDJSON and in JSON arrays', () => {
    fc.assert(
      fc.property(fc.array(doc, { minLength: 1, maxLength: 6 }), fc.integer({ min: 1, max: 6 }), (docs, max) => {
        const expected = docs.findIndex((d) => depthOf(d) > max);
        const ndjson = findTooDeep(Buffer.from(docs.map((d) => JSON.stringify(d)).join('\n')), max, true);
        const array = findTooDeep(Buffer.from(JSON.stringify(docs)), max, false);
        if (expected === -1) {
          expect(ndjson).toBeNull();
          expect(array).toBeNull();
        } else {
          expect(ndjson).toEqual({ index: expected, unit: 'line' });
          expect(array).toEqual({ index: expected, unit: 'element' });
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('counts a lone object as element 0, and accepts exactly the limit', () => {
    const nested = (d: number) => `${'{"a":'.repeat(d - 1)}{}${'}'.repeat(d - 1)}`;
    expect(findTooDeep(Buffer.from(nested(128)), 128, false)).toBeNull();
    expect(findTooDeep(Buffer.from(nested(129)), 128, false)).toEqual({ index: 0, unit: 'element' });
    expect(findTooDeep(Buffer.from(`{"x":1}\n\n${nested(10_000)}`), 128, true)).toEqual({ index: 2, unit: 'line' });
  });

  it('looks past a line whose brackets sit in strings, to the deep line after it', () => {
    // Line 0 holds 300 opening brackets, all inside a string: more than the limit, 1 level deep.
    const brackets = JSON.stringify({ s: '{['.repeat(150) });
    const nested = `${'['.repeat(129)}${']'.repeat(129)}`;
    expect(findTooDeep(Buffer.from(`${brackets}\n{"a":${nested}}\n`), 128, true)).toEqual({ index: 1, unit: 'line' });
    expect(findTooDeep(Buffer.from(`${brackets}\n${brackets}\n`), 128, true)).toBeNull();
    // A Uint8Array view into a larger buffer is read at its own offset.
    const whole = Buffer.from(`${nested}\n{"b":1}\n`);
    expect(findTooDeep(new Uint8Array(whole.buffer, whole.byteOffset + 259, 8), 128, true)).toBeNull();
    expect(findTooDeep(new Uint8Array(whole.buffer, whole.byteOffset, 259), 128, true)).toEqual({
      index: 0,
      unit: 'line',
    });
  });
});
