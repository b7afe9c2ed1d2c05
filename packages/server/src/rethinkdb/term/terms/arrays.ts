/**
 * Arrays (RethinkDB's arr.cc): append, prepend, slice, difference, set_*, insert_at,
 * splice_at, delete_at, change_at, offsets_of, contains.
 */
import { arrayOverLimit, nonExistence, queryLogic } from '../../errors.js';
import type { Node, TermNode } from '../compiler.js';
import { type Datum, datumsEqual, datumTypeName, isBinary, objectOf, truthy, typeError } from '../datum.js';
import type { Evaluator } from '../evaluator.js';
import { T } from '../names.js';
import { INF, type TermDef, type TermFamily } from '../registry.js';
import { type Env, expectType, Func, Seq, SingleSelection, TableRef, typeName, type Value } from '../values.js';

/** A possibly negative index into `size` items (RethinkDB's canonicalize). */
function canonicalize(index: number, size: number): { index: number; oob: boolean } {
  if (index >= 0) return { index, oob: false };
  if (-index > size) return { index: 0, oob: true };
  return { index: size + index, oob: false };
}

function canonicalOrFail(index: number, size: number): number {
  const c = canonicalize(index, size);
  if (c.oob) throw nonExistence(`Index out of bounds: ${index}`);
  return c.index;
}

const outOfBounds = (index: number, size: number) =>
  nonExistence(`Index \`${index}\` out of bounds for array of size: \`${size}\`.`);

export function checkSize(ev: Evaluator, arr: Datum[]): Datum[] {
  if (arr.length > ev.deps.arrayLimit) throw arrayOverLimit(ev.deps.arrayLimit);
  return arr;
}

function distinctPush(out: Datum[], v: Datum): void {
  if (!out.some((x) => datumsEqual(x, v))) out.push(v);
}

function setTerm(op: (a: Datum[], b: Datum[]) => Datum[]): TermDef {
  return {
    min: 2,
    max: 2,
    eval: async (ev, node, env) => {
      const a = await ev.array(node.args[0] as Node, env);
      const b = await ev.array(node.args[1] as Node, env);
      return checkSize(ev, op(a, b));
    },
  };
}

async function boundOpen(ev: Evaluator, node: TermNode, name: string, dflt: string, env: Env | null): Promise<boolean> {
  const v = (await ev.optDatum(node, name, env)) ?? dflt;
  if (v === 'open') return true;
  if (v === 'closed') return false;
  if (typeof v !== 'string') throw typeError('STRING', v);
  throw queryLogic(`Expected \`open\` or \`closed\` for optarg \`${name}\` (got \`${v}\`).`);
}

async function slice(ev: Evaluator, node: TermNode, env: Env | null): Promise<Value> {
  const a = node.args;
  const v = await ev.eval(a[0] as Node, env);
  const leftOpen = await boundOpen(ev, node, 'left_bound', 'closed', env);
  const l = await ev.integer(a[1] as Node, env);
  const rightOpen = a.length === 3 ? await boundOpen(ev, node, 'right_bound', 'open', env) : false;
  const r = a.length === 3 ? await ev.integer(a[2] as Node, env) : -1;
  const range = (size: number): [number, number] => {
    const cl = canonicalize(l, size);
    const cr = canonicalize(r, size);
    let lo = cl.index;
    let hi = cr.index;
    if (leftOpen && !cl.oob) lo += 1;
    if (!rightOpen && !cr.oob) hi += 1;
    return [lo, Math.min(hi, size)];
  };
  if ((v instanceof Seq && v.array === null) || v instanceof TableRef) {
    const stream = ev.seq(v);
    if (l < 0) throw queryLogic('Cannot use a negative left index on a stream.');
    if (r < -1) throw queryLogic('Cannot use a right index < -1 on a stream.');
    if (r === -1 && rightOpen) throw queryLogic('Cannot slice to an open right index of -1 on a stream.');
    const from = l + (leftOpen ? 1 : 0);
    const to = r === -1 ? INF : r + (rightOpen ? 0 : 1);
    const open = stream.open;
    return Seq.fromStream(async function* () {
      const it = open();
      try {
        for (let i = 0; i < to; i++) {
          const next = await it.next();
          if (next.done) return;
          if (i >= from) yield next.value;
        }
      } finally {
        await it.return?.();
      }
    }, stream.table);
  }
  if (v instanceof SingleSelection || (!(v instanceof Seq) && !(v instanceof TableRef) && !isDatumLike(v)))
    throw queryLogic(`Cannot slice non-sequences.`);
  const table = v instanceof Seq ? v.table : v instanceof TableRef ? v : null;
  const d = v instanceof TableRef ? await ev.materialize(ev.seq(v)) : await ev.datum(v);
  if (Array.isArray(d)) {
    const [lo, hi] = range(d.length);
    const out = lo < hi ? d.slice(lo, hi) : [];
    return table ? Seq.fromArray(out, table) : out;
  }
  if (typeof d === 'string') {
    const cps = [...d];
    const [lo, hi] = range(cps.length);
    return lo <= hi ? cps.slice(lo, hi).join('') : '';
  }
  if (isBinary(d)) {
    const bytes = Buffer.from(d.data, 'base64');
    const [lo, hi] = range(bytes.length);
    return objectOf({
      $reql_type$: 'BINARY',
      data: (lo <= hi ? bytes.subarray(lo, hi) : Buffer.alloc(0)).toString('base64'),
    });
  }
  throw queryLogic(`Expected ARRAY, BINARY, or STRING, but found ${datumTypeName(d)}.`);
}

function isDatumLike(v: Value): boolean {
  return typeName(v) !== 'FUNCTION' && typeName(v) !== 'DB';
}

function atTerm(
  min: number,
  max: number,
  spaces: boolean,
  modify: (ev: Evaluator, node: TermNode, env: Env | null, arr: Datum[], index: number, raw: number) => Promise<void>,
): TermDef {
  return {
    min,
    max,
    eval: async (ev, node, env) => {
      const arr = [...(await ev.array(node.args[0] as Node, env))];
      const raw = await ev.integer(node.args[1] as Node, env);
      const index = canonicalOrFail(raw, arr.length + (spaces ? 1 : 0));
      await modify(ev, node, env, arr, index, raw);
      return checkSize(ev, arr);
    },
  };
}

export const arrayTerms: TermFamily = {
  [T.APPEND]: {
    min: 2,
    max: 2,
    eval: async (ev, node, env) =>
      checkSize(ev, [...(await ev.array(node.args[0] as Node, env)), await ev.evalDatum(node.args[1] as Node, env)]),
  },
  [T.PREPEND]: {
    min: 2,
    max: 2,
    eval: async (ev, node, env) => {
      const arr = await ev.array(node.args[0] as Node, env);
      return checkSize(ev, [await ev.evalDatum(node.args[1] as Node, env), ...arr]);
    },
  },
  [T.SLICE]: { min: 2, max: 3, optargs: ['left_bound', 'right_bound'], eval: slice },
  [T.DIFFERENCE]: setTerm((a, b) => a.filter((x) => !b.some((y) => datumsEqual(x, y)))),
  [T.SET_INSERT]: {
    min: 2,
    max: 2,
    eval: async (ev, node, env) => {
      const out: Datum[] = [];
      for (const x of await ev.array(node.args[0] as Node, env)) distinctPush(out, x);
      distinctPush(out, await ev.evalDatum(node.args[1] as Node, env));
      return checkSize(ev, out);
    },
  },
  [T.SET_UNION]: setTerm((a, b) => {
    const out: Datum[] = [];
    for (const x of [...a, ...b]) distinctPush(out, x);
    return out;
  }),
  [T.SET_INTERSECTION]: setTerm((a, b) => {
    const out: Datum[] = [];
    for (const x of a) if (b.some((y) => datumsEqual(x, y))) distinctPush(out, x);
    return out;
  }),
  [T.SET_DIFFERENCE]: setTerm((a, b) => {
    const out: Datum[] = [];
    for (const x of a) if (!b.some((y) => datumsEqual(x, y))) distinctPush(out, x);
    return out;
  }),
  [T.INSERT_AT]: atTerm(3, 3, true, async (ev, node, env, arr, index) => {
    const v = await ev.evalDatum(node.args[2] as Node, env);
    if (index > arr.length) throw outOfBounds(index, arr.length);
    arr.splice(index, 0, v);
  }),
  [T.SPLICE_AT]: atTerm(3, 3, true, async (ev, node, env, arr, index) => {
    const vs = await ev.array(node.args[2] as Node, env);
    if (index > arr.length) throw outOfBounds(index, arr.length);
    arr.splice(index, 0, ...vs);
  }),
  [T.DELETE_AT]: atTerm(2, 3, false, async (ev, node, env, arr, index) => {
    if (node.args.length === 2) {
      if (index >= arr.length) throw outOfBounds(index, arr.length);
      arr.splice(index, 1);
      return;
    }
    const end = canonicalOrFail(await ev.integer(node.args[2] as Node, env), arr.length);
    if (index > arr.length) throw outOfBounds(index, arr.length);
    if (end > arr.length) throw outOfBounds(end, arr.length);
    if (index > end) throw nonExistence(`Start index \`${index}\` is greater than end index \`${end}\`.`);
    arr.splice(index, end - index);
  }),
  [T.CHANGE_AT]: atTerm(3, 3, false, async (ev, node, env, arr, index) => {
    const v = await ev.evalDatum(node.args[2] as Node, env);
    if (index >= arr.length) throw outOfBounds(index, arr.length);
    arr[index] = v;
  }),
  [T.OFFSETS_OF]: {
    min: 2,
    max: 2,
    eval: async (ev, node, env) => {
      const items = await ev.seqArray(node.args[0] as Node, env);
      const pred = await ev.eval(node.args[1] as Node, env);
      // A value to find is a datum (a table is a type error, as in RethinkDB), read once.
      if (pred instanceof TableRef) expectType(pred, 'DATUM');
      const want = pred instanceof Func ? null : await ev.datum(pred);
      const out: Datum[] = [];
      for (let i = 0; i < items.length; i++) {
        const x = items[i] as Datum;
        const hit = pred instanceof Func ? truthy(await ev.callDatum(pred, [x])) : datumsEqual(want, x);
        if (hit) out.push(i);
      }
      return out;
    },
  },
  [T.CONTAINS]: {
    min: 1,
    max: INF,
    eval: async (ev, node, env) => {
      const items = await ev.seqArray(node.args[0] as Node, env);
      const wanted: Value[] = [];
      for (const n of node.args.slice(1)) wanted.push(await ev.eval(n, env));
      // Bag semantics (arr.cc): an element satisfies at most one wanted value and one predicate.
      const values: Datum[] = [];
      const funcs: Func[] = [];
      for (const w of wanted) {
        if (w instanceof Func) funcs.push(w);
        else values.push(await ev.datum(w));
      }
      if (values.length === 0 && funcs.length === 0) return true;
      for (const x of items) {
        const vi = values.findIndex((v) => datumsEqual(v, x));
        if (vi >= 0) values.splice(vi, 1);
        for (let i = 0; i < funcs.length; i++) {
          if (truthy(await ev.callDatum(funcs[i] as Func, [x]))) {
            funcs.splice(i, 1);
            break;
          }
        }
        if (values.length === 0 && funcs.length === 0) return true;
      }
      return false;
    },
  },
};
