/**
 * Secondary indexes on the driver port: INDEX_CREATE / DROP / LIST / STATUS / WAIT, and the
 * indexed reads GET_ALL, BETWEEN and ORDER_BY({index}) on an index other than the primary key.
 *
 * The engine indexes one field path per index, so INDEX_CREATE accepts only index functions
 * that read a plain field path: a field-name string, `r.row('a')('b')`, or `function (d) {
 * return d('a')('b') }` (`getField`/bracket, string keys). Anything else is a COMPILE_ERROR
 * saying what is supported.
 */
import type { IndexInfo, IndexValue } from '@wharf/engine';
import { opFailed, queryLogic, ReqlCompileError } from '../errors.js';
import type { Node } from './compiler.js';
import { type Datum, type DatumObject, datumTypeName, typeError } from './datum.js';
import { T } from './names.js';
import type { TableRef } from './values.js';

export const SUPPORTED_INDEX_FUNCTIONS =
  "Wharf supports index functions that read one field path only: a field name (index_create('city')), " +
  "r.row('address')('city'), or a function of one argument such as function (doc) { return doc('address')('city') }.";

const INDEX_NAME = /^[A-Za-z0-9_.-]{1,127}$/;

export function checkIndexName(name: Datum): string {
  if (typeof name !== 'string') throw typeError('STRING', name);
  if (!INDEX_NAME.test(name)) {
    throw queryLogic(`Index name \`${name}\` invalid (Wharf index names are 1 to 127 of A-Z, a-z, 0-9, _, - and .).`);
  }
  return name;
}

/**
 * The dotted field path an index function reads, from its compiled node (not evaluated).
 * `fieldName` is the index's name, used when INDEX_CREATE got no function.
 */
export function indexFieldPath(fn: Node | undefined, fieldName: string): string {
  if (fn === undefined) return fieldName;
  if (fn.kind === 'datum') {
    if (typeof fn.value === 'string' && fn.value.length > 0) return fn.value;
    throw new ReqlCompileError(SUPPORTED_INDEX_FUNCTIONS);
  }
  if (fn.kind !== 'func' || fn.params.length !== 1) throw new ReqlCompileError(SUPPORTED_INDEX_FUNCTIONS, fn.bt);
  const param = fn.params[0] as number;
  const path: string[] = [];
  let n: Node = fn.body;
  for (;;) {
    if (n.kind === 'var' && n.id === param) break;
    if (n.kind !== 'term' || (n.type !== T.BRACKET && n.type !== T.GET_FIELD) || Object.keys(n.optargs).length > 0) {
      throw new ReqlCompileError(SUPPORTED_INDEX_FUNCTIONS, fn.bt);
    }
    const key = n.args[1] as Node;
    if (key.kind !== 'datum' || typeof key.value !== 'string' || key.value.length === 0) {
      throw new ReqlCompileError(SUPPORTED_INDEX_FUNCTIONS, fn.bt);
    }
    if (key.value.includes('.')) {
      throw new ReqlCompileError(
        `Wharf index paths are dotted, so a field name cannot contain \`.\` (got \`${key.value}\`). ${SUPPORTED_INDEX_FUNCTIONS}`,
        fn.bt,
      );
    }
    path.unshift(key.value);
    n = n.args[0] as Node;
  }
  if (path.length === 0) throw new ReqlCompileError(SUPPORTED_INDEX_FUNCTIONS, fn.bt);
  return path.join('.');
}

/** A datum usable as an index value (engine values are scalars). */
export function indexValue(v: Datum): IndexValue {
  if (v === null || typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v)))
    return v;
  throw queryLogic(
    `Wharf secondary indexes hold strings, numbers, booleans and null; got a value of type ${datumTypeName(v)}.`,
  );
}

/** RethinkDB's index_status entry (no `function`/`query`: Wharf indexes are field paths). */
export function indexStatus(info: IndexInfo, documents: number | undefined): DatumObject {
  const out: DatumObject = { index: info.name, ready: info.ready, multi: info.multi, geo: false, outdated: false };
  if (!info.ready && documents !== undefined) out.progress = documents > 0 ? Math.min(1, info.indexed / documents) : 0;
  return out;
}

/** Picks the named indexes (all when none are named), erroring like RethinkDB on an unknown one. */
export function selectIndexes(all: IndexInfo[], names: string[], t: TableRef): IndexInfo[] {
  if (names.length === 0) return [...all].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return names.map((n) => {
    const info = all.find((i) => i.name === n);
    if (!info) throw opFailed(`Index \`${n}\` was not found on table \`${t.fullName}\`.`);
    return info;
  });
}
