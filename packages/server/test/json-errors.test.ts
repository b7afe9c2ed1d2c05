/**
 * r.json's parse errors in RethinkDB's words (term/json-errors.ts). The table's texts are what
 * RethinkDB 2.4.4 answered for the same `r.json(TEXT)` queries (its parser is RapidJSON); the
 * properties hold the walk to JSON.parse: no error for a text JSON.parse takes (lone surrogates
 * and numbers past a double aside), always a reason for one it refuses.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonErrorText, jsonParseFailure, mayHideJsonError } from '../src/rethinkdb/term/json-errors.js';

const RETHINKDB: [string, string][] = [
  ['[1,2', "Missing a comma or ']' after an array element."],
  ['', 'The document is empty.'],
  ['   ', 'The document is empty.'],
  ['{', 'Missing a name for object member.'],
  ['{"a"', 'Missing a colon after a name of object member.'],
  ['{"a":', 'Invalid value.'],
  ['{"a":1', "Missing a comma or '}' after an object member."],
  ['{"a":1,}', 'Missing a name for object member.'],
  ['[1,]', 'Invalid value.'],
  ['nul', 'Invalid value.'],
  ['-', 'Invalid value.'],
  ['1.', 'Miss fraction part in number.'],
  ['1e+', 'Miss exponent in number.'],
  ['01', 'The document root must not follow by other values.'],
  ['{"a":1}}', 'The document root must not follow by other values.'],
  ['"abc', 'Missing a closing quotation mark in string.'],
  ['"\\x"', 'Invalid escape character in string.'],
  ['"\\u12G4"', 'Incorrect hex digit after \\u escape in string.'],
  ['"\\ud800"', 'The surrogate pair in string is invalid.'],
  ['"\\ud800\\u0041"', 'The surrogate pair in string is invalid.'],
  ['"a\tb"', 'Invalid escape character in string.'],
  ['1e400', 'Number too big to be stored in double.'],
  ['[1}', "Missing a comma or ']' after an array element."],
  ['{1:2}', 'Missing a name for object member.'],
  ['NaN', 'Invalid value.'],
];

describe('jsonErrorText', () => {
  it.each(RETHINKDB)('%j: as RethinkDB 2.4.4 says', (text, why) => {
    expect(jsonErrorText(text)).toBe(why);
  });

  it('cuts a long text as RethinkDB does', () => {
    expect(jsonParseFailure('x'.repeat(41), 'Invalid value.')).toBe(
      `Failed to parse "${'x'.repeat(37)}..." as JSON: Invalid value.`,
    );
    expect(jsonParseFailure('x'.repeat(40), 'Invalid value.')).toBe(
      `Failed to parse "${'x'.repeat(40)}" as JSON: Invalid value.`,
    );
  });

  it('finds no error in what JSON.stringify writes, and a surrogate pair is fine', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        expect(jsonErrorText(JSON.stringify(v))).toBeUndefined();
        expect(jsonErrorText(JSON.stringify(v, null, 2))).toBeUndefined();
      }),
    );
    expect(jsonErrorText('"\\ud83d\\ude00"')).toBeUndefined();
  });

  it('gives a reason for every text JSON.parse refuses, and looks again at what it may have taken wrongly', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.nat(), fc.string({ maxLength: 3 }), (v, at, insert) => {
        const text = JSON.stringify(v);
        const cut = at % (text.length + 1);
        const broken = text.slice(0, cut) + insert + text.slice(cut + 1);
        let parsed = true;
        try {
          JSON.parse(broken);
        } catch {
          parsed = false;
        }
        if (!parsed) expect(jsonErrorText(broken)).toEqual(expect.any(String));
        else if (jsonErrorText(broken) !== undefined) expect(mayHideJsonError(broken)).toBe(true);
      }),
    );
  });
});
