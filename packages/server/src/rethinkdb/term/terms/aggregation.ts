/**
 * Aggregation (RethinkDB's seq.cc reductions and shards.cc terminals): count, sum, avg, min,
 * max, reduce, fold, group, ungroup.
 */
import { nonExistence, queryLogic, ReqlRuntimeError } from '../../errors.js';
import { ErrorType } from '../../protocol.js';
import type { Node, TermNode } from '../compiler.js';
import {
  compareDatums,
  type Datum,
  type DatumObject,
  datumsEqual,
  datumTypeName,
  field,
  isBinary,
  isPlainObject,
  truthy,
  typeError,
} from '../datum.js';
import type { Evaluator } from '../evaluator.js';
import { T } from '../names.js';
import { matchesAsObject, matchesObject } from '../objects.js';
import { INF, type TermDef, type TermFamily } from '../registry.js';
import { type Env, Func, Grouped, Seq, SingleSelection, TableRef, type Value } from '../values.js';

const isNonExistence = (err: unknown): boolean =>
  err instanceof ReqlRuntimeError && err.errorType === ErrorType.NON_EXISTENCE;

/** A function argument, where a string means "that field" (RethinkDB's GET_FIELD_SHORTCUT). */
async function accessor(
  ev: Evaluator,
  node: Node | undefined,
  env: Env | null,
): Promise<((row: Datum) => Promise<Datum>) | null> {
  if (node === undefined) return null;
  const f = await ev.eval(node, env);
  if (f instanceof Func) return (row) => ev.callDatum(f, [row]);
  const d = await ev.datum(f);
  if (typeof d === 'string')
    return async (row) => {
      if (!isPlainObject(row))
        throw queryLogic(`Cannot perform get_field on a non-object non-sequence \`${JSON.stringify(row)}\`.`);
      const v = field(row, d);
      if (v === undefined) throw nonExistence(`No attribute \`${d}\` in object:\n${JSON.stringify(row, null, 4)}`);
      return v;
    };
  return async () => d;
}

/** Values of a sequence through an optional accessor, skipping rows it finds no value in. */
async function values(ev: Evaluator, node: TermNode, env: Env | null): Promise<{ rows: Datum[]; vals: Datum[] }> {
  const rows = await ev.seqArray(node.args[0] as Node, env);
  const get = await accessor(ev, node.args[1], env);
  if (get === null) return { rows, vals: rows };
  const keptRows: Datum[] = [];
  const vals: Datum[] = [];
  for (const row of rows) {
    try {
      vals.push(await get(row));
      keptRows.push(row);
    } catch (err) {
      if (!isNonExistence(err)) throw err;
    }
  }
  return { rows: keptRows, vals };
}

/** A predicate function's result: an object literal matches like an object predicate, else truthiness. */
function predicateHolds(pred: Func, result: Datum, row: Datum): boolean {
  return matchesAsObject(pred, result) ? matchesObject(result, row) : truthy(result);
}

function num(v: Datum): number {
  if (typeof v !== 'number') throw typeError('NUMBER', v);
  return v;
}

const optimizing = (name: 'min' | 'max'): TermDef => ({
  min: 1,
  max: 2,
  optargs: ['index'],
  eval: async (ev, node, env) => {
    let index = await ev.optDatum(node, 'index', env);
    const input = await ev.eval(node.args[0] as Node, env);
    // A table with neither function nor index: its primary index (RethinkDB's on_idx).
    if (index === undefined && node.args.length === 1 && input instanceof TableRef) index = input.primaryKey;
    if (index !== undefined) {
      if (node.args.length === 2) throw queryLogic(`Cannot provide both a function and an index to ${name}.`);
      const t = input;
      if (!(t instanceof TableRef))
        throw queryLogic(`Expected type TABLE but found ${datumTypeName(await ev.datum(t))}.`);
      if (typeof index !== 'string') throw typeError('STRING', index);
      const rows = await ev.materialize(ev.seq(t));
      let best: Datum | undefined;
      let bestKey: Datum | undefined;
      for (const row of rows) {
        const k = isPlainObject(row) ? field(row, index) : undefined;
        if (k === undefined) continue;
        const c = bestKey === undefined ? -1 : compareDatums(k, bestKey);
        if (bestKey === undefined || (name === 'min' ? c < 0 : c >= 0)) {
          best = row;
          bestKey = k;
        }
      }
      if (best === undefined) throw nonExistence(`\`${name}\` found no entries in the specified index.`);
      return best;
    }
    const { rows, vals } = await values(
      ev,
      { ...node, args: [{ kind: 'value', value: input, bt: node.bt }, ...node.args.slice(1)] },
      env,
    );
    let best = -1;
    for (let i = 0; i < vals.length; i++) {
      if (best < 0) best = i;
      else {
        const c = compareDatums(vals[i] as Datum, vals[best] as Datum);
        if (name === 'min' ? c < 0 : c > 0) best = i;
      }
    }
    if (best < 0)
      throw nonExistence(
        `Cannot take the ${name} of an empty stream.  (If you passed \`${name}\` a field name, it may be that no elements of the stream had that field.)`,
      );
    return rows[best] as Datum;
  },
});

async function group(ev: Evaluator, node: TermNode, env: Env | null): Promise<Value> {
  const a = node.args;
  const input = await ev.eval(a[0] as Node, env);
  const index = await ev.optDatum(node, 'index', env);
  const multi = (await ev.optDatum(node, 'multi', env)) ?? false;
  if (typeof multi !== 'boolean') throw typeError('BOOL', multi);
  const getters: ((row: Datum) => Promise<Datum>)[] = [];
  for (const n of a.slice(1)) getters.push((await accessor(ev, n, env)) as (row: Datum) => Promise<Datum>);
  if (index !== undefined) {
    if (typeof index !== 'string') throw typeError('STRING', index);
    // The index's value is the last part of the group (as RethinkDB gives it).
    getters.push(async (row) => (isPlainObject(row) ? (field(row, index) ?? null) : null));
  }
  if (getters.length === 0) throw queryLogic('Cannot group by nothing.');
  const rows = await ev.materialize(ev.seq(input));
  const groups = new Map<string, { key: Datum; value: Value }>();
  const add = (key: Datum, row: Datum): void => {
    const k = JSON.stringify(canonical(key));
    const g = groups.get(k);
    if (g) (g.value as Datum[]).push(row);
    else groups.set(k, { key, value: [row] });
  };
  for (const row of rows) {
    const keys: Datum[] = [];
    for (const get of getters) {
      try {
        keys.push(await get(row));
      } catch (err) {
        if (!isNonExistence(err)) throw err;
        keys.push(null);
      }
    }
    if (!multi) {
      add(keys.length === 1 ? (keys[0] as Datum) : keys, row);
      continue;
    }
    // multi: an array a grouping gives puts the row in one group per element (an empty one in
    // the null group; a repeated element twice, as RethinkDB's group_trans_t does); several
    // groupings give every combination.
    let combos: Datum[][] = [[]];
    for (const k of keys) {
      const options = Array.isArray(k) ? (k.length > 0 ? k : [null]) : [k];
      combos = combos.flatMap((c) => options.map((o) => [...c, o]));
    }
    for (const c of combos) add(c.length === 1 ? (c[0] as Datum) : c, row);
  }
  return new Grouped(groups, input instanceof TableRef || (input instanceof Seq && input.array === null));
}

/** A datum with object keys sorted, so equal datums give equal JSON. */
function canonical(v: Datum): Datum {
  if (Array.isArray(v)) return v.map(canonical);
  if (v !== null && typeof v === 'object') {
    const out: DatumObject = {};
    for (const k of Object.keys(v).sort()) out[k] = canonical((v as DatumObject)[k] as Datum);
    return out;
  }
  return v;
}

async function reduce(ev: Evaluator, rows: Datum[], f: Value): Promise<Datum> {
  if (rows.length === 0) throw nonExistence('Cannot reduce over an empty stream.');
  let acc = rows[0] as Datum;
  for (const row of rows.slice(1)) acc = await ev.callDatum(f, [acc, row]);
  return acc;
}

export const aggregationTerms: TermFamily = {
  [T.COUNT]: {
    min: 1,
    max: 2,
    eval: async (ev, node, env) => {
      const a = node.args;
      const target = await ev.eval(a[0] as Node, env);
      if (a.length === 1) {
        if (target instanceof TableRef) {
          try {
            return await target.engine.count();
          } catch (err) {
            throw ev.engineError(err, target);
          }
        }
        if (typeof target === 'string') return [...target].length;
        if (target instanceof SingleSelection) return target.row === null ? 0 : Object.keys(target.row).length;
        if (isBinary(target as Datum)) return Buffer.from((target as { data: string }).data, 'base64').length;
        if (isPlainObject(target as never)) return Object.keys(target as DatumObject).length;
      }
      const s = ev.seq(target);
      if (s.infinite) await ev.materialize(s); // the infinite-stream error
      if (a.length === 1 && s.engineRead !== null) return s.engineRead.count(); // counted in the engine
      const pred = a.length === 2 ? await ev.eval(a[1] as Node, env) : undefined;
      let n = 0;
      const it = s.open();
      try {
        for (;;) {
          const r = await it.next();
          if (r.done) break;
          if (pred === undefined) n++;
          else if (
            pred instanceof Func
              ? predicateHolds(pred, await ev.callDatum(pred, [r.value]), r.value)
              : datumsEqual(await ev.datum(pred), r.value)
          )
            n++;
        }
      } finally {
        await it.return?.();
      }
      return n;
    },
  },
  [T.SUM]: {
    min: 1,
    max: 2,
    eval: async (ev, node, env) => {
      const reducingGroup = ev.reducingGroup;
      const { vals } = await values(ev, node, env);
      if (vals.length === 0 && reducingGroup) throw nonExistence('Cannot take the sum of an empty group.');
      let total = 0;
      for (const v of vals) total += num(v);
      return total;
    },
  },
  [T.AVG]: {
    min: 1,
    max: 2,
    eval: async (ev, node, env) => {
      const { vals } = await values(ev, node, env);
      if (vals.length === 0)
        throw nonExistence(
          'Cannot take the average of an empty stream.  (If you passed `avg` a field name, it may be that no elements of the stream had that field.)',
        );
      let total = 0;
      for (const v of vals) total += num(v);
      return total / vals.length;
    },
  },
  [T.MIN]: optimizing('min'),
  [T.MAX]: optimizing('max'),
  [T.REDUCE]: {
    min: 2,
    max: 2,
    eval: async (ev, node, env) => {
      const rows = await ev.seqArray(node.args[0] as Node, env);
      return reduce(ev, rows, await ev.eval(node.args[1] as Node, env));
    },
  },
  [T.FOLD]: {
    min: 3,
    max: 3,
    optargs: ['emit', 'final_emit'],
    eval: async (ev, node, env) => {
      const input = ev.seq(await ev.eval(node.args[0] as Node, env));
      const acc0 = await ev.evalDatum(node.args[1] as Node, env);
      const f = await ev.eval(node.args[2] as Node, env);
      if (f instanceof Func && f.params.length !== 0 && f.params.length !== 2)
        throw queryLogic(
          `The accumulator function passed to \`fold\` should expect 2 arguments, but it expects ${f.params.length}.`,
        );
      const emitNode = node.optargs.emit;
      const finalNode = node.optargs.final_emit;
      let acc = acc0;
      if (emitNode === undefined) {
        for (const row of await ev.materialize(input)) acc = await ev.callDatum(f, [acc, row]);
        if (finalNode !== undefined) return ev.callDatum(await ev.eval(finalNode, env), [acc]);
        return acc;
      }
      const emit = await ev.eval(emitNode, env);
      const final = finalNode === undefined ? undefined : await ev.eval(finalNode, env);
      const emitted = async (v: Datum): Promise<Datum[]> => {
        if (!Array.isArray(v)) throw typeError('ARRAY', v);
        return v;
      };
      // A stream, evaluated as it is read (so `r.range().fold(…, {emit}).limit(n)` ends).
      return Seq.fromStream(
        async function* () {
          let state = acc;
          const it = input.open();
          try {
            for (;;) {
              const r = await it.next();
              if (r.done) break;
              const next = await ev.callDatum(f, [state, r.value]);
              yield* await emitted(await ev.callDatum(emit, [state, r.value, next]));
              state = next;
            }
          } finally {
            await it.return?.();
          }
          if (final !== undefined) yield* await emitted(await ev.callDatum(final, [state]));
        },
        null,
        input.infinite,
      );
    },
  },
  [T.GROUP]: { min: 1, max: INF, optargs: ['index', 'multi'], eval: group },
  [T.UNGROUP]: {
    min: 1,
    max: 1,
    eval: async (ev, node, env) => {
      const g = await ev.eval(node.args[0] as Node, env);
      if (!(g instanceof Grouped))
        throw queryLogic(`Expected type GROUPED_DATA but found ${datumTypeName(await ev.datum(g))}.`);
      const entries = [...g.groups.values()].sort((x, y) => compareDatums(x.key, y.key));
      const out: Datum[] = [];
      for (const e of entries) out.push({ group: e.key, reduction: await ev.datum(e.value) });
      return out;
    },
  },
};
