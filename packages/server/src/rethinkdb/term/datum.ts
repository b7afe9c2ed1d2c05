/**
 * ReQL datums: plain JSON values where objects with a `$reql_type$` key are pseudo-types
 * (TIME, BINARY). Type names, the total order used by comparisons and ORDER_BY, equality,
 * truthiness, and TIME helpers.
 */
import { nonExistence, queryLogic, type ReqlRuntimeError } from '../errors.js';

export type Datum = null | boolean | number | string | Datum[] | { [key: string]: Datum };
export type DatumObject = { [key: string]: Datum };

export type TimeDatum = DatumObject & {
  $reql_type$: 'TIME';
  epoch_time: number;
  timezone: string;
};

/**
 * A JSON object: what JSON.parse makes (Object.prototype) or what the evaluator builds (no
 * prototype). Nothing else (class instances, functions) is a datum.
 */
export function isObject(v: unknown): v is DatumObject {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === null || proto === Object.prototype;
}

export function isPlainObject(v: Datum): v is DatumObject {
  return isObject(v) && !hasField(v, '$reql_type$');
}

export function isTime(v: unknown): v is TimeDatum {
  return isObject(v) && field(v, '$reql_type$') === 'TIME';
}

/** `{"$reql_type$": "BINARY", "data": BASE64}`: bytes, as the drivers' r.binary sends them. */
export function isBinary(v: unknown): v is DatumObject & { data: string } {
  return isObject(v) && field(v, '$reql_type$') === 'BINARY' && typeof field(v, 'data') === 'string';
}

// ---- user data never meets JS prototypes ----
//
// Field names are user data: `constructor`, `toString`, `__proto__` are keys like any other.
// Objects from JSON.parse (queries, engine rows) inherit from Object.prototype, so a field is
// read only when it is the object's own; objects built here have no prototype, so assigning
// `__proto__` stores a field instead of changing the prototype.

/** Does the object have this field of its own (never an inherited property)? */
export function hasField(obj: DatumObject, key: string): boolean {
  return Object.hasOwn(obj, key);
}

/** The object's own field, or undefined. */
export function field(obj: DatumObject, key: string): Datum | undefined {
  return Object.hasOwn(obj, key) ? obj[key] : undefined;
}

/** A new empty object without a prototype. */
export function newObject(): DatumObject {
  return Object.create(null) as DatumObject;
}

/** A shallow copy without a prototype (every own field, `__proto__` included). */
export function copyObject(obj: DatumObject): DatumObject {
  const out = newObject();
  for (const k of Object.keys(obj)) out[k] = obj[k] as Datum;
  return out;
}

/** An object without a prototype holding these fields (for results built in code). */
export function objectOf(fields: Record<string, Datum>): DatumObject {
  return copyObject(fields);
}

// ---- nesting depth ----

/**
 * The deepest nesting of objects and arrays in a document (`{"a":[1]}` is 2 levels): the
 * engine's `MAX_DOCUMENT_DEPTH`, the same at every entry (HTTP, ws, driver, import).
 */
export const MAX_DOCUMENT_DEPTH = 128;

/**
 * Levels of objects and arrays in `v` (0 for a scalar), or `limit + 1` as soon as it is known to
 * be deeper than `limit`. Iterative (an explicit stack): no input overflows the call stack.
 */
export function nestingDepth(v: unknown, limit: number): number {
  if (v === null || typeof v !== 'object') return 0;
  let max = 0;
  const stack: [unknown, number][] = [[v, 1]];
  while (stack.length > 0) {
    const [x, depth] = stack.pop() as [unknown, number];
    if (depth > limit) return limit + 1;
    if (depth > max) max = depth;
    const children = Array.isArray(x) ? x : Object.values(x as object);
    for (const c of children) if (c !== null && typeof c === 'object') stack.push([c, depth + 1]);
  }
  return max;
}

/** The error for a document nested deeper than MAX_DOCUMENT_DEPTH; `what` says where. */
export function tooDeepMessage(what: string): string {
  return `${what} is nested deeper than the limit of ${MAX_DOCUMENT_DEPTH} levels of objects and arrays (MAX_DOCUMENT_DEPTH).`;
}

/** RethinkDB's name of a datum's type (as in TYPE_OF and in error messages). */
export function datumTypeName(v: Datum): string {
  if (v === null) return 'NULL';
  switch (typeof v) {
    case 'boolean':
      return 'BOOL';
    case 'number':
      return 'NUMBER';
    case 'string':
      return 'STRING';
  }
  if (Array.isArray(v)) return 'ARRAY';
  const rt = field(v as DatumObject, '$reql_type$');
  return typeof rt === 'string' ? `PTYPE<${rt}>` : 'OBJECT';
}

/** Only `false` and `null` are falsy. */
export function truthy(v: Datum): boolean {
  return v !== false && v !== null;
}

function rank(v: Datum): number {
  if (v === null) return 4;
  switch (typeof v) {
    case 'boolean':
      return 3;
    case 'number':
      return 5;
    case 'string':
      return 8;
  }
  if (Array.isArray(v)) return 1;
  const rt = field(v as DatumObject, '$reql_type$');
  // r.minval / r.maxval inside a compound index bound, e.g. [1, r.minval].
  if (rt === 'MINVAL') return 0;
  if (rt === 'MAXVAL') return 9;
  if (rt === 'BINARY') return 6.5;
  if (typeof rt === 'string') return 7;
  return 6;
}

function compareStrings(a: string, b: string): number {
  // UTF-8 byte order is code point order; JS `<` compares UTF-16 units, which differs only
  // around surrogates.
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const ca = a.codePointAt(i) as number;
    const cb = b.codePointAt(i) as number;
    if (ca !== cb) return ca < cb ? -1 : 1;
    if (ca > 0xffff) i++;
  }
  return a.length < b.length ? -1 : a.length > b.length ? 1 : 0;
}

/**
 * The total order: arrays < booleans < null < numbers < objects < BINARY < TIME (and other
 * pseudo-types) < strings: a pseudo-type sorts by its type name, `PTYPE<…>` (RethinkDB's
 * cmp_unchecked_stack). Arrays compare element-wise, objects by sorted keys then values.
 */
export function compareDatums(a: Datum, b: Datum): number {
  const ra = rank(a);
  const rb = rank(b);
  if (ra !== rb) return ra < rb ? -1 : 1;
  switch (ra) {
    case 3:
      return a === b ? 0 : a ? 1 : -1;
    case 4:
      return 0;
    case 5:
      return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
    case 8:
      return compareStrings(a as string, b as string);
    case 1: {
      const x = a as Datum[];
      const y = b as Datum[];
      const n = Math.min(x.length, y.length);
      for (let i = 0; i < n; i++) {
        const c = compareDatums(x[i] as Datum, y[i] as Datum);
        if (c !== 0) return c;
      }
      return x.length - y.length < 0 ? -1 : x.length > y.length ? 1 : 0;
    }
    case 7: {
      const x = a as DatumObject;
      const y = b as DatumObject;
      if (isTime(x) && isTime(y)) return x.epoch_time < y.epoch_time ? -1 : x.epoch_time > y.epoch_time ? 1 : 0;
      return compareObjects(x, y);
    }
    case 6.5:
      // Bytes in order (base64 text does not sort like its bytes).
      return Math.sign(
        Buffer.compare(
          Buffer.from(String(field(a as DatumObject, 'data')), 'base64'),
          Buffer.from(String(field(b as DatumObject, 'data')), 'base64'),
        ),
      );
    default:
      return compareObjects(a as DatumObject, b as DatumObject);
  }
}

function compareObjects(x: DatumObject, y: DatumObject): number {
  const kx = Object.keys(x).sort(compareStrings);
  const ky = Object.keys(y).sort(compareStrings);
  const n = Math.min(kx.length, ky.length);
  for (let i = 0; i < n; i++) {
    const c = compareStrings(kx[i] as string, ky[i] as string);
    if (c !== 0) return c;
    const v = compareDatums(x[kx[i] as string] as Datum, y[ky[i] as string] as Datum); // own keys (Object.keys)
    if (v !== 0) return v;
  }
  return kx.length < ky.length ? -1 : kx.length > ky.length ? 1 : 0;
}

export function datumsEqual(a: Datum, b: Datum): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  return compareDatums(a, b) === 0;
}

/** Pretty JSON as the reference server prints it in messages (tab-indented). */
export function pretty(v: Datum | undefined, indent = ''): string {
  // rapidjson's PrettyWriter as RethinkDB configures it: tabs, `"key":\tvalue`, keys in order.
  if (v === undefined || v === null || typeof v !== 'object') return JSON.stringify(v ?? null);
  const inner = `${indent}\t`;
  if (Array.isArray(v)) {
    if (v.length === 0) return '[]';
    return `[\n${v.map((x) => inner + pretty(x, inner)).join(',\n')}\n${indent}]`;
  }
  const keys = Object.keys(v).sort();
  if (keys.length === 0) return '{}';
  return `{\n${keys.map((k) => `${inner}${JSON.stringify(k)}:\t${pretty(v[k] as Datum, inner)}`).join(',\n')}\n${indent}}`;
}

// ---- TIME ----

function tzString(offsetMinutes: number): string {
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  return `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}

export function makeTime(epochSeconds: number, timezone = '+00:00'): TimeDatum {
  return objectOf({ $reql_type$: 'TIME', epoch_time: Math.round(epochSeconds * 1000) / 1000, timezone }) as TimeDatum;
}

/** RethinkDB's timezone check (pseudo_time.cc sanitize::tz): `±HH[:MM]` or `Z`, as `±HH:MM`. */
export function sanitizeTimezone(s: string): string {
  if (s === '-00' || s === '-00:00') throw queryLogic(`\`${s}\` is not a valid time offset.`);
  if (s === 'Z') return '+00:00';
  if (s[0] !== '-' && s[0] !== '+') throw queryLogic(`Timezone \`${s}\` does not start with \`-\` or \`+\`.`);
  const m = /^([+-])(\d{2})(?::?(\d{2}))?(.*)$/.exec(s);
  if (!m) throw queryLogic(`Invalid timezone string \`${s}\`.`);
  if (m[4]) throw queryLogic(`Garbage characters \`${m[4]}\` at end of timezone string \`${s}\`.`);
  const hh = m[2] as string;
  const mm = m[3] ?? '00';
  if (!(/^[01]\d$/.test(hh) || /^2[0-4]$/.test(hh))) throw queryLogic(`Hours out of range in \`${s}\`.`);
  if (!/^[0-5]\d$/.test(mm)) throw queryLogic(`Minutes out of range in \`${s}\`.`);
  return `${m[1]}${hh}:${mm}`;
}

/** Parse a timezone into minutes east of UTC. */
export function parseTimezone(tz: string): number {
  const m = /^([+-])(\d{2}):(\d{2})$/.exec(sanitizeTimezone(tz === 'z' ? 'Z' : tz)) as RegExpExecArray;
  const minutes = Number(m[2]) * 60 + Number(m[3]);
  return m[1] === '-' ? -minutes : minutes;
}

export function normalizeTimezone(tz: string): string {
  return tzString(parseTimezone(tz));
}

/**
 * ISO 8601 (term 99): dates `YYYY-MM-DD` / `YYYYMMDD`, optional `T` time `hh:mm[:ss[.fff]]`,
 * optional timezone (else `default_timezone`, else an error, as in the reference server).
 */
export function parseIso8601(text: string, defaultTimezone?: string): TimeDatum {
  const m =
    /^(\d{4})-?(\d{2})-?(\d{2})(?:[T ](\d{2}):?(\d{2})(?::?(\d{2})(?:\.(\d+))?)?)?(Z|z|[+-]\d{2}(?::?\d{2})?)?$/.exec(
      text.trim(),
    );
  if (!m) throw queryLogic(`Invalid date string \`${text}\`.`);
  const [, y, mo, d, h = '0', mi = '0', s = '0', frac = '', tz] = m;
  const zone = tz ?? defaultTimezone;
  if (zone === undefined) throw queryLogic(`ISO 8601 string has no time zone, and no default time zone was provided.`);
  const offset = parseTimezone(zone);
  const utcMs = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s));
  if (Number.isNaN(utcMs) || Number(mo) < 1 || Number(mo) > 12 || Number(d) < 1 || Number(d) > 31) {
    throw queryLogic(`Invalid date string \`${text}\`.`);
  }
  const seconds = utcMs / 1000 + (frac ? Number(`0.${frac}`) : 0) - offset * 60;
  return makeTime(seconds, tzString(offset));
}

/** Check a TIME pseudo-type from the wire: both fields required, nothing else. */
export function validateTime(v: DatumObject): TimeDatum {
  for (const k of Object.keys(v)) {
    if (k !== '$reql_type$' && k !== 'epoch_time' && k !== 'timezone')
      throw queryLogic(`Invalid time object constructed (unknown field \`${k}\`).`);
  }
  const epoch = field(v, 'epoch_time');
  const timezone = field(v, 'timezone');
  if (typeof epoch !== 'number') throw queryLogic('Invalid time object constructed (no field `epoch_time`).');
  if (typeof timezone !== 'string') throw queryLogic('Invalid time object constructed (no field `timezone`).');
  return makeTime(epoch, normalizeTimezone(timezone));
}

/** TIME term (136): (year, month, day[, hour, minute, second], timezone). */
export function timeFromParts(parts: number[], timezone: string): TimeDatum {
  const [y, mo, d, h = 0, mi = 0, s = 0] = parts as [number, number, number, number?, number?, number?];
  const offset = parseTimezone(timezone);
  const ms = Date.UTC(y, mo - 1, d, h, mi, 0) + s * 1000;
  return makeTime(ms / 1000 - offset * 60, tzString(offset));
}

/** C's `%.20g`: how RethinkDB prints a number in messages (PR_RECONSTRUCTABLE_DOUBLE). */
export function reconstructableDouble(d: number): string {
  if (!Number.isFinite(d)) return String(d);
  let t = d.toPrecision(20);
  if (t.includes('e')) {
    const [m, e] = t.split('e') as [string, string];
    const mant = m.includes('.') ? m.replace(/0+$/, '').replace(/\.$/, '') : m;
    const exp = Number(e);
    return `${mant}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  }
  if (t.includes('.')) t = t.replace(/0+$/, '').replace(/\.$/, '');
  return t;
}

const MAX_DBL_INT = 2 ** 53;

/** A number as an integer, or RethinkDB's `Number not an integer` error. */
export function checkInteger(d: number): number {
  if (d >= -MAX_DBL_INT && d <= MAX_DBL_INT && Number.isInteger(d)) return d;
  const range = d < -MAX_DBL_INT ? ' (<-2^53)' : d > MAX_DBL_INT ? ' (>2^53)' : '';
  throw queryLogic(`Number not an integer${range}: ${reconstructableDouble(d)}`);
}

/**
 * `Expected type X but found Y.`: a type error on a datum, of type NON_EXISTENCE when the datum
 * is null (RethinkDB's datum_t::type_error), so `default()` catches it.
 */
export function typeError(want: string, v: Datum): ReqlRuntimeError {
  const message = `Expected type ${want} but found ${datumTypeName(v)}.`;
  return v === null ? nonExistence(message) : queryLogic(message);
}
