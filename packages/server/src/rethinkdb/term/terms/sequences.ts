/**
 * Sequences and transforms (RethinkDB's seq.cc, sort.cc, slice.cc, transform terms): map,
 * filter, order_by, is_empty, nth, skip, limit.
 */
import { EmptyUserError, opFailed, queryLogic, ReqlRuntimeError } from '../../errors.js';
import { ErrorType } from '../../protocol.js';
import type { Node, TermNode } from '../compiler.js';
import { compareDatums, type Datum, datumsEqual, field, isPlainObject, truthy } from '../datum.js';
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
  return ev.mapSeq(s, async (row) => ((await test(row)) ? row : undefined), true);
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
