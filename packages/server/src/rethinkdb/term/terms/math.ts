/**
 * Math and logic (RethinkDB's arith.cc, logic.cc): comparisons, arithmetic, NOT, OR, AND.
 */
import { arrayOverLimit, queryLogic } from '../../errors.js';
import type { Node, TermNode } from '../compiler.js';
import {
  checkInteger,
  compareDatums,
  type Datum,
  datumsEqual,
  isTime,
  makeTime,
  reconstructableDouble,
  type TimeDatum,
  truthy,
  typeError,
} from '../datum.js';
import type { Evaluator } from '../evaluator.js';
import { T } from '../names.js';
import { INF, type TermDef, type TermFamily } from '../registry.js';
import { type Env, expectType, Seq, TableRef } from '../values.js';

async function datums(ev: Evaluator, args: Node[], env: Env | null): Promise<Datum[]> {
  const vals: Datum[] = [];
  for (const n of args) {
    const v = await ev.eval(n, env);
    // A table or stream is not a datum here (r.expr(5).add(table) is a type error).
    if (v instanceof TableRef || (v instanceof Seq && v.array === null)) expectType(v, 'DATUM');
    vals.push(await ev.datum(v));
  }
  return vals;
}

function comparison(type: number): TermDef {
  return { min: 1, max: INF, eval: async (ev, node, env) => compareChain(type, await datums(ev, node.args, env)) };
}

function arith(type: number, min = 1, max = INF): TermDef {
  return {
    min,
    max,
    eval: async (ev, node, env) => arithmetic(type, await datums(ev, node.args, env), ev.deps.arrayLimit),
  };
}

export const mathTerms: TermFamily = {
  [T.EQ]: comparison(T.EQ),
  [T.NE]: comparison(T.NE),
  [T.LT]: comparison(T.LT),
  [T.LE]: comparison(T.LE),
  [T.GT]: comparison(T.GT),
  [T.GE]: comparison(T.GE),
  [T.NOT]: { min: 1, max: 1, eval: async (ev, node, env) => !truthy(await ev.evalDatum(node.args[0] as Node, env)) },
  [T.ADD]: arith(T.ADD),
  [T.SUB]: arith(T.SUB),
  [T.MUL]: arith(T.MUL),
  [T.DIV]: arith(T.DIV),
  [T.MOD]: arith(T.MOD, 2, 2),
  [T.OR]: {
    min: 0,
    max: INF,
    eval: async (ev, node, env) => {
      let last: Datum = false;
      for (const n of node.args) {
        last = await ev.evalDatum(n, env);
        if (truthy(last)) return last;
      }
      return last;
    },
  },
  [T.AND]: {
    min: 0,
    max: INF,
    eval: async (ev, node, env) => {
      let last: Datum = true;
      for (const n of node.args) {
        last = await ev.evalDatum(n, env);
        if (!truthy(last)) return last;
      }
      return last;
    },
  },
};

function compareChain(type: number, vals: Datum[]): boolean {
  if (type === T.NE) {
    for (let i = 0; i + 1 < vals.length; i++) if (!datumsEqual(vals[i] as Datum, vals[i + 1] as Datum)) return true;
    return false;
  }
  for (let i = 0; i + 1 < vals.length; i++) {
    const x = vals[i] as Datum;
    const y = vals[i + 1] as Datum;
    let ok: boolean;
    switch (type) {
      case T.EQ:
        ok = datumsEqual(x, y);
        break;
      case T.LT:
        ok = compareDatums(x, y) < 0;
        break;
      case T.LE:
        ok = compareDatums(x, y) <= 0;
        break;
      case T.GT:
        ok = compareDatums(x, y) > 0;
        break;
      default:
        ok = compareDatums(x, y) >= 0;
    }
    if (!ok) return false;
  }
  return true;
}

/** A finite number, or RethinkDB's `Non-finite number` error. */
export function finite(n: number): number {
  if (!Number.isFinite(n)) throw queryLogic(`Non-finite number: ${reconstructableDouble(n)}`);
  return n;
}

function num(v: Datum): number {
  if (typeof v !== 'number') throw typeError('NUMBER', v);
  return v;
}

function timeWith(t: TimeDatum, epoch: number): TimeDatum {
  return makeTime(finite(epoch), t.timezone);
}

function arith2(type: number, x: Datum, y: Datum, arrayLimit: number): Datum {
  switch (type) {
    case T.ADD:
      if (isTime(x)) return timeWith(x, x.epoch_time + num(y));
      if (isTime(y)) return timeWith(y, y.epoch_time + num(x));
      if (typeof x === 'number') return finite(x + num(y));
      if (typeof x === 'string') {
        if (typeof y !== 'string') throw typeError('STRING', y);
        return x + y;
      }
      if (Array.isArray(x)) {
        if (!Array.isArray(y)) throw typeError('ARRAY', y);
        return checkArraySize([...x, ...y], arrayLimit);
      }
      return num(x);
    case T.SUB:
      // time - time is rounded to milliseconds, as RethinkDB's sanitize_epoch_sec does.
      if (isTime(x))
        return isTime(y)
          ? Math.round(finite(x.epoch_time - y.epoch_time) * 1000) / 1000
          : timeWith(x, x.epoch_time - num(y));
      return finite(num(x) - num(y));
    case T.MUL: {
      if (Array.isArray(x) || Array.isArray(y)) {
        const arr = (Array.isArray(x) ? x : y) as Datum[];
        const copies = checkInteger(num(Array.isArray(x) ? y : x));
        if (copies < 0) throw queryLogic('Cannot multiply an ARRAY by a negative number.');
        const out: Datum[] = [];
        for (let j = 0; j < copies; j++) {
          for (const v of arr) out.push(v);
          checkArraySize(out, arrayLimit);
        }
        return out;
      }
      return finite(num(x) * num(y));
    }
    case T.DIV: {
      const a = num(x);
      const b = num(y);
      if (b === 0) throw queryLogic('Cannot divide by zero.');
      return finite(a / b);
    }
    default: {
      const a = checkInteger(num(x));
      const b = checkInteger(num(y));
      if (b === 0) throw queryLogic('Cannot take a number modulo 0.');
      const r = a % b;
      return r === 0 ? 0 : r;
    }
  }
}

function checkArraySize(arr: Datum[], limit: number): Datum[] {
  if (arr.length > limit) throw arrayOverLimit(limit);
  return arr;
}

function arithmetic(type: number, vals: Datum[], arrayLimit: number): Datum {
  let acc = vals[0] as Datum;
  for (let i = 1; i < vals.length; i++) acc = arith2(type, acc, vals[i] as Datum, arrayLimit);
  if (vals.length === 1 && type !== T.ADD) num(acc);
  return acc;
}

const MAX_BIT_INT = 2 ** 53;
function bitInt(v: Datum): bigint {
  const i = checkInteger(num(v));
  if (i < -MAX_BIT_INT || i >= MAX_BIT_INT) throw queryLogic(`Integer too large: ${i}`);
  return BigInt(i);
}

function bitArith(op: (a: bigint, b: bigint) => bigint): TermDef {
  return {
    min: 1,
    max: INF,
    eval: async (ev, node, env) => {
      const vals = await datums(ev, node.args, env);
      let acc = bitInt(vals[0] as Datum);
      for (const v of vals.slice(1)) acc = op(acc, bitInt(v));
      return Number(acc);
    },
  };
}

function bitShift(left: boolean): TermDef {
  return {
    min: 2,
    max: 2,
    eval: async (ev, node, env) => {
      const lhs = bitInt(await ev.evalDatum(node.args[0] as Node, env));
      const rhs = await ev.integer(node.args[1] as Node, env);
      if (rhs < 0) throw queryLogic('Cannot bit-shift by a negative value');
      // Zero shifted any distance is zero (0 × 2^3000 would be 0 × Infinity).
      if (left) return lhs === 0n ? 0 : finite(Number(lhs) * 2 ** rhs);
      if (rhs > 63) return lhs < 0n ? -1 : 0;
      return Number(lhs >> BigInt(rhs));
    },
  };
}

function rounding(f: (n: number) => number): TermDef {
  return { min: 1, max: 1, eval: async (ev, node, env) => f(await ev.number(node.args[0] as Node, env)) };
}

/** C's round(): halves away from zero (Math.round rounds -2.5 to -2). */
const roundHalfAway = (n: number): number => (n < 0 ? -Math.round(-n) : Math.round(n));

async function random(ev: Evaluator, node: TermNode, env: Env | null): Promise<Datum> {
  const a = node.args;
  const floatOpt = await ev.optDatum(node, 'float', env);
  if (floatOpt !== undefined && typeof floatOpt !== 'boolean') throw typeError('BOOL', floatOpt);
  const useFloat = floatOpt ?? a.length === 0;
  const bounds: number[] = [];
  for (const n of a) bounds.push(await ev.number(n, env));
  if (useFloat) {
    let lower = 0;
    let upper = 1;
    if (bounds.length === 1) upper = bounds[0] as number;
    else if (bounds.length === 2) [lower, upper] = bounds as [number, number];
    let result = lower + Math.random() * (upper - lower);
    if (upper > lower ? result >= upper : result <= upper) result = lower;
    return finite(result);
  }
  if (bounds.length === 0) throw queryLogic('Generating a random integer requires one or two bounds.');
  const asBound = (d: number, which: string): number => {
    if (Number.isInteger(d) && Math.abs(d) <= 2 ** 53) return d;
    throw queryLogic(`${which} bound (${reconstructableDouble(d)}) could not be safely converted to an integer.`);
  };
  const lower = bounds.length === 1 ? 0 : asBound(bounds[0] as number, 'Lower');
  const upper = asBound(bounds[bounds.length - 1] as number, 'Upper');
  if (lower >= upper) throw queryLogic(`Lower bound (${lower}) is not less than upper bound (${upper}).`);
  return lower + Math.floor(Math.random() * (upper - lower));
}

export const numberTerms: TermFamily = {
  [T.FLOOR]: rounding(Math.floor),
  [T.CEIL]: rounding(Math.ceil),
  [T.ROUND]: rounding(roundHalfAway),
  [T.RANDOM]: { min: 0, max: 2, optargs: ['float'], eval: random },
  [T.BIT_AND]: bitArith((x, y) => x & y),
  [T.BIT_OR]: bitArith((x, y) => x | y),
  [T.BIT_XOR]: bitArith((x, y) => x ^ y),
  [T.BIT_NOT]: {
    min: 1,
    max: 1,
    eval: async (ev, node, env) => Number(~bitInt(await ev.evalDatum(node.args[0] as Node, env))),
  },
  [T.BIT_SAL]: bitShift(true),
  [T.BIT_SAR]: bitShift(false),
};
