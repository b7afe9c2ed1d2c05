/**
 * Math and logic (RethinkDB's arith.cc, logic.cc): comparisons, arithmetic, NOT, OR, AND.
 */
import { queryLogic } from '../../errors.js';
import type { Node } from '../compiler.js';
import { compareDatums, type Datum, datumsEqual, datumTypeName, isTime, makeTime, truthy } from '../datum.js';
import type { Evaluator } from '../evaluator.js';
import { T } from '../names.js';
import { INF, type TermDef, type TermFamily } from '../registry.js';
import type { Env } from '../values.js';

async function datums(ev: Evaluator, args: Node[], env: Env | null): Promise<Datum[]> {
  const vals: Datum[] = [];
  for (const n of args) vals.push(await ev.evalDatum(n, env));
  return vals;
}

function comparison(type: number): TermDef {
  return { min: 1, max: INF, eval: async (ev, node, env) => compareChain(type, await datums(ev, node.args, env)) };
}

function arith(type: number, min = 1, max = INF): TermDef {
  return { min, max, eval: async (ev, node, env) => arithmetic(type, await datums(ev, node.args, env)) };
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

function arithmetic(type: number, vals: Datum[]): Datum {
  const first = vals[0] as Datum;
  if (type === T.ADD && typeof first === 'string') {
    return vals
      .map((v) => {
        if (typeof v !== 'string') throw queryLogic(`Expected type STRING but found ${datumTypeName(v)}.`);
        return v;
      })
      .join('');
  }
  if (type === T.ADD && Array.isArray(first)) {
    return vals.flatMap((v) => {
      if (!Array.isArray(v)) throw queryLogic(`Expected type ARRAY but found ${datumTypeName(v)}.`);
      return v;
    });
  }
  if (type === T.ADD && isTime(first)) {
    const secs = vals.slice(1).reduce<number>((s, v) => s + (typeof v === 'number' ? v : 0), 0);
    return makeTime(first.epoch_time + secs, first.timezone);
  }
  const nums = vals.map((v) => {
    if (typeof v !== 'number') throw queryLogic(`Expected type NUMBER but found ${datumTypeName(v)}.`);
    return v;
  });
  let acc = nums[0] as number;
  for (const n of nums.slice(1)) {
    switch (type) {
      case T.ADD:
        acc += n;
        break;
      case T.SUB:
        acc -= n;
        break;
      case T.MUL:
        acc *= n;
        break;
      case T.DIV:
        if (n === 0) throw queryLogic('Cannot divide by zero.');
        acc /= n;
        break;
      default:
        if (n === 0) throw queryLogic('Cannot take a number modulo 0.');
        if (!Number.isInteger(acc) || !Number.isInteger(n)) throw queryLogic('Number not an integer.');
        acc %= n;
    }
  }
  return acc;
}
