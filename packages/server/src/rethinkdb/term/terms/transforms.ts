/**
 * More sequence terms (RethinkDB's seq.cc, sort.cc, random.cc, obj_or_seq.cc): range, union,
 * concat_map, distinct, sample, with_fields, for_each, and map over several sequences.
 */
import { queryLogic } from '../../errors.js';
import type { Node, TermNode } from '../compiler.js';
import { compareDatums, type Datum, datumsEqual, datumTypeName, isObject, isPlainObject, typeError } from '../datum.js';
import type { Evaluator } from '../evaluator.js';
import { T } from '../names.js';
import { buildSelector, hasFields, pluck } from '../objects.js';
import { INF, type TermFamily } from '../registry.js';
import { arrayIterator, type Env, expectType, Func, Seq, SingleSelection, TableRef, type Value } from '../values.js';
import { checkSize } from './arrays.js';

async function map(ev: Evaluator, node: TermNode, env: Env | null): Promise<Value> {
  const a = node.args;
  const f = await ev.eval(a[a.length - 1] as Node, env);
  if (!(f instanceof Func)) expectType(f, 'FUNCTION');
  const n = a.length - 1;
  if (f.params.length !== 0 && f.params.length !== n) {
    throw queryLogic(
      `The function passed to \`map\` expects ${f.params.length} argument${f.params.length === 1 ? '' : 's'}, but ${n} sequence${n === 1 ? ' was' : 's were'} found.`,
    );
  }
  const s = ev.seq(await ev.eval(a[0] as Node, env));
  if (n === 1) return ev.mapSeq(s, (row) => ev.callDatum(f, [row]));
  const seqs = [s];
  for (const x of a.slice(1, -1)) seqs.push(ev.seq(await ev.eval(x, env)));
  if (seqs.every((x) => x.array !== null)) {
    const arrays = seqs.map((x) => x.array as Datum[]);
    const len = Math.min(...arrays.map((x) => x.length));
    const out: Datum[] = [];
    for (let i = 0; i < len; i++)
      out.push(
        await ev.callDatum(
          f,
          arrays.map((x) => x[i] as Datum),
        ),
      );
    return out;
  }
  // Lazily, so infinite ranges zip with finite sequences.
  return Seq.fromStream(
    async function* () {
      const its = seqs.map((x) => x.open());
      try {
        for (;;) {
          const row: Datum[] = [];
          for (const it of its) {
            const r = await it.next();
            if (r.done) return;
            row.push(r.value);
          }
          yield await ev.callDatum(f, row);
        }
      } finally {
        for (const it of its) await it.return?.();
      }
    },
    null,
    seqs.every((x) => x.infinite),
  );
}

function rangeSeq(start: number, stop: number, infinite: boolean): Seq {
  return Seq.fromStream(
    async function* () {
      for (let i = start; infinite || i < stop; i++) yield i;
    },
    null,
    infinite,
  );
}

async function union(ev: Evaluator, node: TermNode, env: Env | null): Promise<Value> {
  const parts: Seq[] = [];
  for (const n of node.args) parts.push(ev.seq(await ev.eval(n, env)));
  const interleave = node.optargs.interleave;
  let orderBy: { by: string | Func; desc: boolean }[] | null = null;
  if (interleave !== undefined) {
    const specs =
      interleave.kind === 'array'
        ? interleave.items
        : interleave.kind === 'datum' && Array.isArray(interleave.value)
          ? []
          : [interleave];
    const keys: { by: string | Func; desc: boolean }[] = [];
    for (const spec of specs) {
      let desc = false;
      let n: Node = spec;
      if (n.kind === 'term' && (n.type === T.ASC || n.type === T.DESC)) {
        desc = n.type === T.DESC;
        n = n.args[0] as Node;
      }
      const v = await ev.eval(n, env);
      if (typeof v === 'boolean' && specs.length === 1 && n === spec) {
        keys.length = 0;
        break;
      }
      if (typeof v !== 'string' && !(v instanceof Func))
        throw queryLogic(`Expected type STRING but found ${datumTypeName(v as Datum)}.`);
      keys.push({ by: v, desc });
    }
    if (interleave.kind === 'datum' && Array.isArray(interleave.value)) {
      for (const v of interleave.value) {
        if (typeof v !== 'string') throw typeError('STRING', v);
        keys.push({ by: v, desc: false });
      }
    }
    if (keys.length > 0) orderBy = keys;
  }
  if (orderBy === null) {
    if (parts.every((p) => p.array !== null))
      return Seq.fromArray(
        checkSize(
          ev,
          parts.flatMap((p) => p.array as Datum[]),
        ),
      );
    return Seq.fromStream(async function* () {
      for (const p of parts) {
        const it = p.open();
        try {
          for (;;) {
            const r = await it.next();
            if (r.done) break;
            yield r.value;
          }
        } finally {
          await it.return?.();
        }
      }
    });
  }
  // Merge sequences each already in that order (RethinkDB's ordered union).
  const arrays: Datum[][] = [];
  for (const p of parts) arrays.push(await ev.materialize(p));
  const keyOf = async (row: Datum): Promise<Datum[]> => {
    const out: Datum[] = [];
    for (const k of orderBy as { by: string | Func; desc: boolean }[]) {
      if (typeof k.by === 'string') out.push(isPlainObject(row) ? (row[k.by] ?? null) : null);
      else out.push(await ev.callDatum(k.by, [row]));
    }
    return out;
  };
  const compareKeys = (x: Datum[], y: Datum[]): number => {
    for (let j = 0; j < x.length; j++) {
      let c = compareDatums(x[j] as Datum, y[j] as Datum);
      if ((orderBy as { desc: boolean }[])[j]?.desc) c = -c;
      if (c !== 0) return c;
    }
    return 0;
  };
  for (const arr of arrays) {
    let prev: Datum[] | null = null;
    for (const row of arr) {
      const k = await keyOf(row);
      if (prev !== null && compareKeys(prev, k) > 0)
        throw queryLogic('The streams given as arguments are not ordered by given ordering.');
      prev = k;
    }
  }
  const idx = arrays.map(() => 0);
  const out: Datum[] = [];
  for (;;) {
    let best = -1;
    let bestKey: Datum[] = [];
    for (let i = 0; i < arrays.length; i++) {
      const arr = arrays[i] as Datum[];
      if ((idx[i] as number) >= arr.length) continue;
      const key = await keyOf(arr[idx[i] as number] as Datum);
      if (best < 0) {
        best = i;
        bestKey = key;
        continue;
      }
      let c = 0;
      for (let j = 0; j < key.length && c === 0; j++) {
        c = compareDatums(key[j] as Datum, bestKey[j] as Datum);
        if ((orderBy as { desc: boolean }[])[j]?.desc) c = -c;
      }
      if (c < 0) {
        best = i;
        bestKey = key;
      }
    }
    if (best < 0) break;
    out.push((arrays[best] as Datum[])[idx[best] as number] as Datum);
    idx[best] = (idx[best] as number) + 1;
  }
  return Seq.fromArray(checkSize(ev, out));
}

export const transformTerms: TermFamily = {
  [T.MAP]: { min: 2, max: INF, eval: map },
  [T.RANGE]: {
    min: 0,
    max: 2,
    eval: async (ev, node, env) => {
      const a = node.args;
      if (a.length === 0) return rangeSeq(0, 0, true);
      if (a.length === 1) return rangeSeq(0, await ev.integer(a[0] as Node, env), false);
      return rangeSeq(await ev.integer(a[0] as Node, env), await ev.integer(a[1] as Node, env), false);
    },
  },
  [T.UNION]: { min: 0, max: INF, optargs: ['interleave'], eval: union },
  [T.CONCAT_MAP]: {
    min: 2,
    max: 2,
    eval: async (ev, node, env) => {
      const s = ev.seq(await ev.eval(node.args[0] as Node, env));
      const f = await ev.eval(node.args[1] as Node, env);
      const rows = await ev.materialize(s);
      const out: Datum[] = [];
      for (const row of rows) {
        const v = await ev.call(f, [row]);
        const items = v instanceof Seq || v instanceof TableRef ? await ev.materialize(ev.seq(v)) : await ev.datum(v);
        if (!Array.isArray(items)) throw queryLogic(`Cannot convert ${datumTypeName(items)} to SEQUENCE`);
        out.push(...items);
        checkSize(ev, out);
      }
      return out;
    },
  },
  [T.DISTINCT]: {
    min: 1,
    max: 1,
    optargs: ['index'],
    eval: async (ev, node, env) => {
      const input = await ev.eval(node.args[0] as Node, env);
      const index = await ev.optDatum(node, 'index', env);
      let rows: Datum[];
      if (index !== undefined) {
        if (!(input instanceof TableRef) && !(input instanceof Seq && input.slice))
          throw queryLogic('Can only perform an indexed distinct on a TABLE.');
        if (typeof index !== 'string') throw typeError('STRING', index);
        const all = await ev.materialize(ev.seq(input));
        rows = [];
        for (const r of all) {
          const v = isPlainObject(r) ? r[index] : undefined;
          if (v === undefined) continue;
          rows.push(v);
        }
      } else rows = await ev.materialize(ev.seq(input));
      const sorted = [...rows].sort(compareDatums);
      const out: Datum[] = [];
      for (const v of sorted) if (out.length === 0 || !datumsEqual(out[out.length - 1] as Datum, v)) out.push(v);
      // The distinct values of a stream (a table, a slice) are a stream, of an array an array.
      if (input instanceof TableRef || (input instanceof Seq && input.array === null))
        return Seq.fromStream(() => arrayIterator(out));
      return out;
    },
  },
  [T.SAMPLE]: {
    min: 2,
    max: 2,
    eval: async (ev, node, env) => {
      const s = ev.seq(await ev.eval(node.args[0] as Node, env));
      const n = await ev.integer(node.args[1] as Node, env);
      if (n < 0) throw queryLogic(`Number of items to sample must be non-negative, got \`${n}\`.`);
      const rows = [...(await ev.materialize(s))];
      for (let i = rows.length - 1; i > 0; i--) {
        const j = Math.floor(Math.random() * (i + 1));
        [rows[i], rows[j]] = [rows[j] as Datum, rows[i] as Datum];
      }
      return Seq.fromArray(rows.slice(0, n), s.table);
    },
  },
  [T.WITH_FIELDS]: {
    min: 1,
    max: INF,
    eval: async (ev, node, env) => {
      const input = await ev.eval(node.args[0] as Node, env);
      if (!(input instanceof Seq || input instanceof TableRef || Array.isArray(input)))
        throw queryLogic(
          `Cannot perform has_fields on a non-object non-sequence \`${JSON.stringify(await ev.datum(input))}\`.`,
        );
      const s = ev.seq(input);
      const paths: Datum[] = [];
      for (const n of node.args.slice(1)) paths.push(await ev.evalDatum(n, env));
      const sel = buildSelector(paths);
      return ev.mapSeq(s, async (row) => (hasFields(row, sel) ? pluck(row, sel) : undefined));
    },
  },
  [T.FOR_EACH]: {
    min: 2,
    max: 2,
    eval: async (ev, node, env) => {
      const rows = await ev.seqArray(node.args[0] as Node, env);
      const f = await ev.eval(node.args[1] as Node, env);
      const total: Record<string, Datum> = {};
      const FAIL = 'FOR_EACH expects one or more basic write queries.';
      for (const row of rows) {
        const v = await ev.call(f, [row]);
        // Not a datum (a table, a stream, a function…): RethinkDB gives the bare message.
        if (
          !(v instanceof SingleSelection) &&
          !(v instanceof Seq && v.array !== null) &&
          typeof v === 'object' &&
          v !== null &&
          !isObject(v) &&
          !Array.isArray(v)
        )
          throw queryLogic(FAIL);
        const d = await ev.datum(v);
        if (!isObject(d) && !Array.isArray(d))
          throw queryLogic(`${FAIL}  Expected type ARRAY but found ${datumTypeName(d)}.`);
        for (const r of isObject(d) ? [d] : d) {
          if (!isPlainObject(r)) throw queryLogic(`${FAIL}  Expected type OBJECT but found ${datumTypeName(r)}.`);
          mergeWriteResults(total, r);
        }
      }
      return total;
    },
  },
};

/** Sum two write results as RethinkDB's for_each does (counters add, lists concatenate). */
function mergeWriteResults(total: Record<string, Datum>, r: Record<string, Datum>): void {
  for (const [k, v] of Object.entries(r)) {
    const t = total[k];
    if (t === undefined) total[k] = Array.isArray(v) ? [...v] : v;
    else if (typeof t === 'number' && typeof v === 'number') total[k] = t + v;
    else if (Array.isArray(t) && Array.isArray(v)) t.push(...v);
    else if (k === 'first_error') continue;
    else total[k] = v;
  }
}
