/** Object operations: pluck/without paths, merge, has_fields, filter-object matching. */
import { nonExistence, queryLogic } from '../errors.js';
import {
  copyObject,
  type Datum,
  type DatumObject,
  datumsEqual,
  field,
  hasField,
  isPlainObject,
  newObject,
  pretty,
  typeError,
} from './datum.js';
import type { Func } from './values.js';

/** A selector: true (take the whole field) or nested selectors. */
type Selector = true | Map<string, Selector>;

/** Turn pluck/without arguments (strings, arrays of paths, nested objects) into a selector tree. */
export function buildSelector(paths: Datum[]): Map<string, Selector> {
  const root = new Map<string, Selector>();
  const add = (into: Map<string, Selector>, p: Datum): void => {
    if (typeof p === 'string') {
      into.set(p, true);
    } else if (Array.isArray(p)) {
      for (const q of p) add(into, q);
    } else if (isPlainObject(p)) {
      for (const [k, v] of Object.entries(p)) {
        if (v === true) {
          into.set(k, true);
        } else if (v === false) {
        } else {
          const existing = into.get(k);
          const child = existing instanceof Map ? existing : new Map<string, Selector>();
          if (existing !== true) {
            add(child, v);
            into.set(k, child);
          }
        }
      }
    } else {
      throw queryLogic(`Invalid path argument \`${JSON.stringify(p)}\`.`);
    }
  };
  for (const p of paths) add(root, p);
  return root;
}

export function pluck(obj: Datum, sel: Map<string, Selector>): Datum {
  // Called per element of a sequence: an element that is itself a sequence.
  if (Array.isArray(obj)) throw queryLogic('Cannot perform pluck on a sequence of sequences.');
  if (!isPlainObject(obj))
    throw queryLogic(`Cannot perform pluck on a non-object non-sequence \`${JSON.stringify(obj)}\`.`);
  const out = newObject();
  for (const [k, s] of sel) {
    if (!hasField(obj, k)) continue;
    const v = obj[k] as Datum;
    if (s === true) out[k] = v;
    else if (isPlainObject(v)) out[k] = pluck(v, s);
    else if (Array.isArray(v)) out[k] = v.filter(isPlainObject).map((x) => pluck(x, s));
  }
  return out;
}

export function without(obj: Datum, sel: Map<string, Selector>): Datum {
  if (!isPlainObject(obj))
    throw queryLogic(`Cannot perform without on a non-object non-sequence \`${JSON.stringify(obj)}\`.`);
  const out = copyObject(obj);
  for (const [k, s] of sel) {
    if (!hasField(out, k)) continue;
    if (s === true) delete out[k];
    else {
      const v = out[k] as Datum;
      if (isPlainObject(v)) out[k] = without(v, s);
    }
  }
  return out;
}

/** `r.literal(v)` in a merge or update patch: the pseudo-type RethinkDB uses for it. */
export function isLiteral(v: Datum | undefined): v is DatumObject {
  return (
    v !== null && typeof v === 'object' && !Array.isArray(v) && field(v as DatumObject, '$reql_type$') === 'LITERAL'
  );
}

/** A patch's value where there is nothing to merge into: literals unwrapped, throughout. */
function unwrapLiterals(v: Datum): Datum | undefined {
  if (isLiteral(v)) return field(v, 'value');
  if (!isPlainObject(v)) return v;
  const out = copyObject(v);
  for (const [k, x] of Object.entries(v)) {
    const u = unwrapLiterals(x);
    if (u === undefined) delete out[k];
    else out[k] = u;
  }
  return out;
}

/**
 * RethinkDB's merge/update: nested objects merge recursively; anything else replaces;
 * `r.literal(v)` replaces without merging (and `r.literal()` removes the field).
 */
export function deepMerge(base: Datum, patch: Datum): Datum {
  if (isLiteral(patch)) return field(patch, 'value') ?? null;
  if (!isPlainObject(base) || !isPlainObject(patch)) return unwrapLiterals(patch) ?? null;
  const out = copyObject(base);
  for (const [k, v] of Object.entries(patch)) {
    const cur = field(out, k);
    const merged = cur !== undefined && isPlainObject(cur) && isPlainObject(v) ? deepMerge(cur, v) : unwrapLiterals(v);
    if (merged === undefined) delete out[k];
    else out[k] = merged;
  }
  return out;
}

export function getField(obj: Datum, name: string): Datum {
  if (!isPlainObject(obj)) {
    throw queryLogic(`Cannot perform get_field on a non-object non-sequence \`${JSON.stringify(obj)}\`.`);
  }
  const v = field(obj, name);
  if (v === undefined) throw nonExistence(`No attribute \`${name}\` in object:\n${pretty(obj)}`);
  return v;
}

/** Does every field of `pred` exist in `row` with an equal value (nested objects recursively)? */
/**
 * Does a predicate function's result filter like an object predicate? Only when the function's
 * body is an object literal (RethinkDB's `filter_helper`: a MAKE_OBJ or DATUM body); any other
 * object (`row('a').match(...)`) is just truthy.
 */
export function matchesAsObject(f: Func, result: Datum): result is DatumObject {
  return (f.body.kind === 'datum' || f.body.kind === 'obj') && isPlainObject(result);
}

export function matchesObject(pred: DatumObject, row: Datum): boolean {
  if (!isPlainObject(row)) throw typeError('OBJECT', row);
  for (const [k, want] of Object.entries(pred)) {
    const have = field(row, k);
    if (have === undefined) throw nonExistence(`No attribute \`${k}\` in object:\n${pretty(row)}`);
    // r.literal(v) matches v exactly (no subset matching inside it).
    if (isLiteral(want)) {
      if (!datumsEqual(field(want, 'value') ?? null, have)) return false;
    } else if (isPlainObject(want)) {
      if (!matchesObject(want, have)) return false;
    } else if (!datumsEqual(want, have)) {
      return false;
    }
  }
  return true;
}

export function hasFields(obj: Datum, sel: Map<string, Selector>): boolean {
  if (!isPlainObject(obj)) return false;
  for (const [k, s] of sel) {
    const v = field(obj, k);
    if (v === undefined || v === null) return false;
    if (s !== true && !hasFields(v, s)) return false;
  }
  return true;
}
