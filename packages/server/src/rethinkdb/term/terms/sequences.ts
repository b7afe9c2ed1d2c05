/**
 * Sequences and transforms (RethinkDB's seq.cc, sort.cc, slice.cc, transform terms): map,
 * filter, order_by, is_empty, nth, skip, limit.
 */

import type { FilterPredicate, FilterSpec, IndexValue, MatchField } from '@wharf/engine';
import { EmptyUserError, opFailed, queryLogic, ReqlRuntimeError } from '../../errors.js';
import { ErrorType } from '../../protocol.js';
import type { Node, TermNode } from '../compiler.js';
import { compareDatums, type Datum, type DatumObject, datumsEqual, field, isPlainObject, truthy } from '../datum.js';
import type { Evaluator } from '../evaluator.js';
import { sortEntries } from '../function-indexes.js';
import { T } from '../names.js';
import { isLiteral, matchesAsObject, matchesObject } from '../objects.js';
import type { TermDef, TermFamily } from '../registry.js';
import { type Env, expectType, Func, Seq, TableRef, type Value } from '../values.js';

const skipOrLimit = (type: number): TermDef => ({
  min: 2,
  max: 2,
  eval: async (ev, node, env) => {
    const s = ev.seq(await ev.eval(node.args[0] as Node, env));
    const n = await ev.number(node.args[1] as Node, env);
    if (!Number.isInteger(n)) throw queryLogic(`Number not an integer: ${n}`);
    if (n < 0 && type === T.SKIP && s.array === null) throw queryLogic('Cannot use a negative left index on a stream.');
    if (n < 0) throw queryLogic(`${type === T.LIMIT ? 'LIMIT' : 'SKIP'} takes a non-negative argument (got ${n})`);
    return type === T.LIMIT ? limitSeq(s, n) : skipSeq(s, n);
  },
});

export const sequenceTerms: TermFamily = {
  [T.FILTER]: { min: 2, max: 2, optargs: ['default'], eval: filter },
  [T.ORDER_BY]: { min: 1, max: Number.POSITIVE_INFINITY, optargs: ['index'], eval: orderBy },
  [T.IS_EMPTY]: {
    min: 1,
    max: 1,
    eval: async (ev, node, env) => {
      const s = ev.seq(await ev.eval(node.args[0] as Node, env));
      if (s.array) return s.array.length === 0;
      const it = s.open();
      try {
        return (await it.next()).done === true;
      } finally {
        await it.return?.();
      }
    },
  },
  [T.NTH]: {
    min: 2,
    max: 2,
    eval: async (ev, node, env) => {
      const target = await ev.eval(node.args[0] as Node, env);
      const i = await ev.number(node.args[1] as Node, env);
      return ev.nth(target, i);
    },
  },
  [T.SKIP]: skipOrLimit(T.SKIP),
  [T.LIMIT]: skipOrLimit(T.LIMIT),
};

async function filter(ev: Evaluator, node: TermNode, env: Env | null): Promise<Value> {
  const a = node.args;
  const s = ev.seq(await ev.eval(a[0] as Node, env));
  const pred = await ev.eval(a[1] as Node, env);
  const defaultNode = node.optargs.default;
  const test = async (row: Datum): Promise<boolean> => {
    try {
      if (pred instanceof Func) {
        // A function whose body is an object literal filters by that object, as an object predicate does.
        const r = await ev.callDatum(pred, [row]);
        return matchesAsObject(pred, r) ? matchesObject(r, row) : truthy(r);
      }
      const p = await ev.datum(pred);
      if (isLiteral(p)) return datumsEqual(field(p, 'value') ?? null, row);
      if (isPlainObject(p)) return matchesObject(p, row);
      return truthy(p);
    } catch (err) {
      if (!(err instanceof ReqlRuntimeError) || err.errorType !== ErrorType.NON_EXISTENCE) throw err;
      if (defaultNode === undefined) return false;
      try {
        const d = await ev.eval(defaultNode, env);
        return truthy(d instanceof Func ? await ev.callDatum(d, [err.message]) : await ev.datum(d));
      } catch (inner) {
        if (inner instanceof EmptyUserError) throw err;
        throw inner;
      }
    }
  };
  const spec = s.engineRead === null ? null : filterSpec(a[1] as Node, pred, defaultNode);
  const pushed = spec === null ? null : s.engineRead?.filtered(spec, test);
  if (pushed) return pushed.seq();
  return ev.mapSeq(s, async (row) => ((await test(row)) ? row : undefined), true);
}

type CmpOp = 'eq' | 'ne' | 'lt' | 'le' | 'gt' | 'ge';

const CMP_OPS: ReadonlyMap<number, CmpOp> = new Map<number, CmpOp>([
  [T.EQ, 'eq'],
  [T.NE, 'ne'],
  [T.LT, 'lt'],
  [T.LE, 'le'],
  [T.GT, 'gt'],
  [T.GE, 'ge'],
]);

/** The operator with its operands swapped (`5 < x` is `x > 5`). */
const SWAPPED = { eq: 'eq', ne: 'ne', lt: 'gt', le: 'ge', gt: 'lt', ge: 'le' } as const;

function isScalarConstant(v: Datum): v is IndexValue {
  return v === null || typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));
}

/**
 * The filter as a predicate the engine evaluates (`FilterSpec`), or null when it is not simple
 * enough: an object of constants (ReQL's subset match), or a one-argument function whose body
 * compares field paths of its argument with scalar constants, joined by and, or, not. What the
 * engine leaves undecided for a row (errors, arrays on a path, a default that is not a
 * constant) it hands back to `test`, so the results are the JS evaluator's.
 */
function filterSpec(predNode: Node, pred: Value, defaultNode: Node | undefined): FilterSpec | null {
  let missing: FilterSpec['missing'] = 'skip';
  if (defaultNode !== undefined) {
    if (defaultNode.kind !== 'datum' || Array.isArray(defaultNode.value)) missing = 'defer';
    else missing = truthy(defaultNode.value) ? 'keep' : 'skip';
  }
  if (pred instanceof Func) {
    if (pred.params.length !== 1) return null;
    const predicate = predicateOf(pred.body, pred.params[0] as number, 0);
    return predicate === null ? null : { predicate, missing };
  }
  if (predNode.kind !== 'datum' || !isPlainObject(pred as Datum)) return null;
  const fields = matchFields(pred as DatumObject, 0);
  return fields === null ? null : { predicate: { match: fields }, missing };
}

/** Deepest predicate translated (the engine refuses deeper ones; JS evaluates them). */
const MAX_PREDICATE_DEPTH = 32;

function matchFields(obj: DatumObject, depth: number): MatchField[] | null {
  if (depth > MAX_PREDICATE_DEPTH) return null;
  const out: MatchField[] = [];
  // Object.entries' order: the order matchesObject checks the fields in.
  for (const [k, want] of Object.entries(obj)) {
    if (isPlainObject(want)) {
      const nested = matchFields(want, depth + 1);
      if (nested === null) return null;
      out.push([k, { match: nested }]);
    } else if (isScalarConstant(want)) out.push([k, want]);
    else return null;
  }
  return out;
}

function predicateOf(n: Node, param: number, depth: number): FilterPredicate | null {
  if (n.kind !== 'term' || depth > MAX_PREDICATE_DEPTH || Object.keys(n.optargs).length > 0) return null;
  const op = CMP_OPS.get(n.type);
  if (op !== undefined) {
    if (n.args.length !== 2) return null;
    const [x, y] = n.args as [Node, Node];
    const left = fieldPath(x, param);
    if (left !== null && left.length > 0 && y.kind === 'datum' && isScalarConstant(y.value))
      return { cmp: op, path: left, value: y.value };
    const right = fieldPath(y, param);
    if (right !== null && right.length > 0 && x.kind === 'datum' && isScalarConstant(x.value))
      return { cmp: SWAPPED[op], path: right, value: x.value };
    return null;
  }
  if (n.type === T.AND || n.type === T.OR) {
    const items: FilterPredicate[] = [];
    for (const arg of n.args) {
      const p = predicateOf(arg, param, depth + 1);
      if (p === null) return null;
      items.push(p);
    }
    return n.type === T.AND ? { and: items } : { or: items };
  }
  if (n.type === T.NOT && n.args.length === 1) {
    const p = predicateOf(n.args[0] as Node, param, depth + 1);
    return p === null ? null : { not: p };
  }
  return null;
}

/** `row('a')('b')` (bracket or get_field with string keys) of the parameter: ['a', 'b']. */
function fieldPath(n: Node, param: number): string[] | null {
  if (n.kind === 'var') return n.id === param ? [] : null;
  if (n.kind !== 'term' || (n.type !== T.BRACKET && n.type !== T.GET_FIELD) || n.args.length !== 2) return null;
  const key = n.args[1] as Node;
  if (key.kind !== 'datum' || typeof key.value !== 'string') return null;
  const base = fieldPath(n.args[0] as Node, param);
  return base === null ? null : [...base, key.value];
}

/** The sort key of a row without the field: before every value (as RethinkDB orders them). */
const MISSING: Datum = { $reql_type$: 'MINVAL' };

async function orderBy(ev: Evaluator, node: TermNode, env: Env | null): Promise<Value> {
  const a = node.args;
  const input = await ev.eval(a[0] as Node, env);
  type Key = { by: string | Func; desc: boolean };
  const keys: Key[] = [];
  const readKey = async (n: Node): Promise<Key> => {
    if (n.kind === 'term' && (n.type === T.ASC || n.type === T.DESC)) {
      const inner = await ev.eval(n.args[0] as Node, env);
      if (typeof inner !== 'string' && !(inner instanceof Func)) expectType(inner, 'STRING');
      return { by: inner, desc: n.type === T.DESC };
    }
    const v = await ev.eval(n, env);
    if (typeof v !== 'string' && !(v instanceof Func)) expectType(v, 'STRING');
    return { by: v, desc: false };
  };
  for (const n of a.slice(1)) keys.push(await readKey(n));
  const indexNode = node.optargs.index;
  let seq: Seq;
  /** With an index: each row's index value, sorted on first (RethinkDB orders by the index, then by the keys). */
  let indexOf: ((row: Datum) => Promise<Datum>) | null = null;
  let indexDesc = false;
  if (indexNode !== undefined) {
    const table = input instanceof TableRef ? input : input instanceof Seq && input.slice ? input.table : null;
    if (input instanceof Seq && input.indexOrdered)
      throw queryLogic('Cannot perform multiple indexed ORDER_BYs on the same table.');
    if (table === null)
      throw queryLogic(
        'Indexed order_by can only be performed on a TABLE or TABLE_SLICE. Make sure order_by comes before any transformations (such as map) or filters.',
      );
    const index = await readKey(indexNode);
    if (typeof index.by !== 'string')
      throw opFailed(`Index \`function\` was not found on table \`${table.fullName}\`.`);
    const name = index.by;
    indexDesc = index.desc;
    if (input instanceof TableRef && keys.length === 0) {
      if (name === input.primaryKey) seq = ev.tableSeq(input, { reverse: index.desc });
      else {
        const src = await ev.indexSource(input, name);
        if (src.kind === 'engine') seq = ev.indexSeq(input, name, null, null, { reverse: index.desc });
        else
          seq = Seq.fromArray(
            sortEntries(await ev.indexEntries(input, src), index.desc).map((e) => e.row),
            input,
          );
      }
      seq.indexOrdered = true;
      return seq;
    }
    seq = ev.seq(input);
    if (name === table.primaryKey) indexOf = async (row) => (isPlainObject(row) ? (field(row, name) ?? null) : null);
    else {
      const src = await ev.indexSource(table, name);
      indexOf = async (row) => {
        const entries = await ev.indexEntries(table, src, [row]);
        return entries.length === 0 ? null : (entries[0] as { value: Datum }).value;
      };
    }
  } else {
    if (keys.length === 0) throw queryLogic('Must specify something to order by.');
    seq = ev.seq(input);
  }
  const rows = await ev.materialize(seq);
  const sortKeys: Datum[][] = [];
  if (indexOf !== null) keys.unshift({ by: '', desc: indexDesc });
  for (const row of rows) {
    const ks: Datum[] = [];
    if (indexOf !== null) ks.push(await indexOf(row));
    for (const k of indexOf !== null ? keys.slice(1) : keys) {
      if (typeof k.by === 'string') {
        // Only a missing field is MISSING: a null value sorts as null, after it.
        const v = isPlainObject(row) ? field(row, k.by) : undefined;
        ks.push(v === undefined ? MISSING : v);
      } else {
        try {
          ks.push(await ev.callDatum(k.by, [row]));
        } catch (err) {
          if (err instanceof ReqlRuntimeError && err.errorType === ErrorType.NON_EXISTENCE) ks.push(MISSING);
          else throw err;
        }
      }
    }
    sortKeys.push(ks);
  }
  const order = rows.map((_, i) => i);
  order.sort((x, y) => {
    const kx = sortKeys[x] as Datum[];
    const ky = sortKeys[y] as Datum[];
    for (let i = 0; i < keys.length; i++) {
      const c = compareDatums(kx[i] as Datum, ky[i] as Datum);
      if (c !== 0) return (keys[i] as Key).desc ? -c : c;
    }
    return x - y;
  });
  return Seq.fromArray(
    order.map((i) => rows[i] as Datum),
    seq.table,
  );
}

export function limitSeq(s: Seq, n: number): Seq {
  if (s.array) return Seq.fromArray(s.array.slice(0, n), s.table);
  if (s.engineRead !== null && n > 0) return s.engineRead.limited(n).seq();
  const open = s.open;
  return Seq.fromStream(async function* () {
    if (n === 0) return;
    const it = open();
    let taken = 0;
    try {
      for (;;) {
        const r = await it.next();
        if (r.done) return;
        yield r.value;
        if (++taken >= n) return;
      }
    } finally {
      await it.return?.();
    }
  }, s.table);
}

export function skipSeq(s: Seq, n: number): Seq {
  if (s.array) return Seq.fromArray(s.array.slice(n), s.table);
  const open = s.open;
  return Seq.fromStream(async function* () {
    const it = open();
    let skipped = 0;
    try {
      for (;;) {
        const r = await it.next();
        if (r.done) return;
        if (skipped < n) skipped++;
        else yield r.value;
      }
    } finally {
      await it.return?.();
    }
  }, s.table);
}
