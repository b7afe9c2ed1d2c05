/**
 * Primary-key values as RethinkDB allows them (`datum_t::print_primary`): strings without a NUL
 * byte, numbers, booleans, arrays of those (nested), times and binary. The engine keys them all
 * and orders them as RethinkDB does (arrays < booleans < numbers < binary < times < strings;
 * `packages/engine/core/src/key.rs`); this module gives RethinkDB's errors for the rest, and its
 * length limit, measured as RethinkDB measures it (the length of its key encoding).
 */
import { type Datum, datumTypeName, field, isBinary, isObject, isTime, reconstructableDouble } from './datum.js';

/** RethinkDB's MAX_PRIMARY_KEY_SIZE: its key encoding may be this long; messages say one less. */
const MAX_PRIMARY_KEY_SIZE = 128;

/** Compact JSON as RethinkDB prints a datum in one line (`datum_t::print`). */
function print(v: Datum): string {
  return JSON.stringify(v);
}

/** RethinkDB's `trunc_print`: the datum, cut to 300 characters with `...`. */
function truncPrint(v: Datum): string {
  const s = print(v);
  return s.length > 300 ? `${s.slice(0, 297)}...` : s;
}

function nulByteError(s: string): string {
  const at = Buffer.from(s, 'utf8').indexOf(0);
  const shown = JSON.stringify(s.length > 20 ? s.slice(0, 20) : s).replace(/\\u0000/g, '\\x00');
  return `String ${shown} (truncated) contains NULL byte at offset ${at} in index key.`;
}

/** The length of RethinkDB's key encoding of a value, or the error it gives for the value. */
function encodedLength(v: Datum, inArray: boolean): number | string {
  if (typeof v === 'number') return 1 + 16 + 1 + reconstructableDouble(v === 0 ? 0 : v).length;
  if (typeof v === 'string') {
    if (v.includes('\u0000')) return nulByteError(v);
    return 1 + Buffer.byteLength(v, 'utf8');
  }
  if (typeof v === 'boolean') return 2;
  if (Array.isArray(v)) {
    let n = 1;
    for (const item of v) {
      if (item === null || (isObject(item) && field(item, '$reql_type$') === undefined))
        return `Array keys can only contain numbers, strings, bools,  pseudotypes, or arrays (got ${print(item)} of type ${datumTypeName(item)}).`;
      const m = encodedLength(item, true);
      if (typeof m === 'string') return m;
      n += m + 1;
    }
    return n;
  }
  if (isTime(v)) {
    const t = field(v, 'epoch_time');
    return 'PTIME:'.length + (encodedLength(typeof t === 'number' ? t : 0, inArray) as number);
  }
  if (isBinary(v)) {
    const bytes = Buffer.from(v.data, 'base64');
    let escaped = 0;
    for (const b of bytes) escaped += b <= 1 ? 2 : 1;
    return 'PBINARY:'.length + escaped;
  }
  if (isObject(v) && typeof field(v, '$reql_type$') === 'string') {
    const type = field(v, '$reql_type$') as string;
    if (type === 'GEOMETRY')
      return 'Cannot use a geometry value as a key value in a primary or non-geospatial secondary index.';
    return `Cannot use pseudotype ${datumTypeName(v)} as a primary or secondary key value .`;
  }
  return `Primary keys must be either a number, string, bool, pseudotype or array (got type ${datumTypeName(v)}):\n${truncPrint(v)}`;
}

/** Why a value cannot be a primary key (RethinkDB's words), or null when it can. */
export function primaryKeyError(v: Datum): string | null {
  const n = encodedLength(v, false);
  if (typeof n === 'string') return n;
  if (n > MAX_PRIMARY_KEY_SIZE) return `Primary key too long (max ${MAX_PRIMARY_KEY_SIZE - 1} characters): ${print(v)}`;
  return null;
}
