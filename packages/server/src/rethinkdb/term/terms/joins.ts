/**
 * Joins (RethinkDB's seq.cc eq_join, rewrites.cc inner/outer join, zip).
 */
import type { Key } from '@wharf/engine';
import { queryLogic, ReqlRuntimeError } from '../../errors.js';
import { ErrorType } from '../../protocol.js';
import type { Node, TermNode } from '../compiler.js';
import { copyObject, type Datum, type DatumObject, field, isPlainObject, newObject, truthy } from '../datum.js';
import type { Evaluator } from '../evaluator.js';
import { indexValue } from '../indexes.js';
import { T } from '../names.js';
import { primaryKeyError } from '../primary-keys.js';
import type { TermFamily } from '../registry.js';
import { type Env, expectType, Func, Seq, TableRef, type Value } from '../values.js';
import { checkSize } from './arrays.js';

function pair(left: Datum, right?: Datum): DatumObject {
  const out = newObject();
  out.left = left;
  if (right !== undefined) out.right = right;
  return out;
}

async function eqJoin(ev: Evaluator, node: TermNode, env: Env | null): Promise<Value> {
  const left = await ev.seqArray(node.args[0] as Node, env);
  const key = await ev.eval(node.args[1] as Node, env);
  const t = await ev.eval(node.args[2] as Node, env);
  if (!(t instanceof TableRef)) expectType(t, 'TABLE');
  const index = await ev.secondaryIndex(node, t, env);
  // `ordered`: results in the left sequence's order, which the loop below always keeps.
  await ev.optDatum(node, 'ordered', env);
  const keyOf = async (row: Datum): Promise<Datum | undefined> => {
    if (key instanceof Func) {
      // A row the key function finds nothing in joins nothing.
      try {
        return await ev.callDatum(key, [row]);
      } catch (err) {
        if (err instanceof ReqlRuntimeError && err.errorType === ErrorType.NON_EXISTENCE) return undefined;
        throw err;
      }
    }
    const k = await ev.datum(key);
    if (typeof k !== 'string') throw queryLogic(`Expected type STRING but found ${typeof k}.`);
    return isPlainObject(row) ? field(row, k) : undefined;
  };
  const out: { k: Datum; v: DatumObject }[] = [];
  for (const row of left) {
    const k = await keyOf(row);
    if (k === undefined || k === null) continue;
    let matches: object[];
    try {
      if (index === null) {
        if (typeof k !== 'number' && primaryKeyError(k) !== null) continue; // no document has such a key
        const r = await t.engine.get(k as Key);
        matches = r === null ? [] : [r];
      } else {
        matches = await t.engine.getAll(index, [indexValue(k)]);
      }
    } catch (err) {
      throw ev.engineError(err, t, index ?? undefined);
    }
    for (const m of matches) out.push({ k, v: pair(row, m as Datum) });
  }
  return Seq.fromArray(
    checkSize(
      ev,
      out.map((x) => x.v),
    ),
  );
}

async function join(ev: Evaluator, node: TermNode, env: Env | null, outer: boolean): Promise<Value> {
  const left = await ev.seqArray(node.args[0] as Node, env);
  const right = await ev.seqArray(node.args[1] as Node, env);
  const pred = await ev.eval(node.args[2] as Node, env);
  const out: Datum[] = [];
  for (const l of left) {
    let matched = false;
    for (const r of right) {
      if (truthy(await ev.callDatum(pred, [l, r]))) {
        matched = true;
        out.push(pair(l, r));
        checkSize(ev, out);
      }
    }
    if (outer && !matched) out.push(pair(l));
  }
  return Seq.fromArray(out);
}

export const joinTerms: TermFamily = {
  [T.EQ_JOIN]: { min: 3, max: 3, optargs: ['index', 'ordered'], eval: eqJoin },
  [T.INNER_JOIN]: { min: 3, max: 3, eval: (ev, node, env) => join(ev, node, env, false) },
  [T.OUTER_JOIN]: { min: 3, max: 3, eval: (ev, node, env) => join(ev, node, env, true) },
  [T.ZIP]: {
    min: 1,
    max: 1,
    eval: async (ev, node, env) => {
      const s = ev.seq(await ev.eval(node.args[0] as Node, env));
      return ev.mapSeq(s, async (row) => {
        const l = isPlainObject(row) ? field(row, 'left') : undefined;
        if (!isPlainObject(row) || l === undefined) throw queryLogic('ZIP can only be called on the result of a join.');
        const r = field(row, 'right');
        if (!isPlainObject(l)) return l;
        const merged = copyObject(l);
        if (isPlainObject(r ?? null)) for (const [k, v] of Object.entries(r as DatumObject)) merged[k] = v;
        return merged;
      });
    },
  },
};
