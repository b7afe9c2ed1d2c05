/**
 * Datums, objects and types (RethinkDB's datum_terms.cc, obj.cc, obj_or_seq.cc, type_manip.cc,
 * json.cc, uuid.cc): field access, pluck/without/merge, keys, object, json, coerce_to, type_of,
 * uuid, minval/maxval.
 */
import { createHash, randomUUID } from 'node:crypto';
import { queryLogic, resourceLimit } from '../../errors.js';
import type { Node } from '../compiler.js';
import {
  type Datum,
  datumTypeName,
  field,
  isBinary,
  isObject,
  MAX_DOCUMENT_DEPTH,
  nestingDepth,
  newObject,
  tooDeepMessage,
} from '../datum.js';
import { T } from '../names.js';
import { buildSelector, deepMerge, hasFields, pluck, without } from '../objects.js';
import { INF, type TermDef, type TermFamily } from '../registry.js';
import { Bound, Seq, TableRef, typeName, type Value } from '../values.js';

const UUID_NAMESPACE = Buffer.from('91461c99f89d49d2af96d8e2e14e9b58', 'hex');

const bracket = (strictField: boolean): TermDef => ({
  min: 2,
  max: 2,
  eval: async (ev, node, env) => {
    const target = await ev.eval(node.args[0] as Node, env);
    const key = await ev.evalDatum(node.args[1] as Node, env);
    return ev.bracket(target, key, strictField);
  },
});

const pluckOrWithout = (type: number): TermDef => ({
  min: 1,
  max: INF,
  eval: async (ev, node, env) => {
    const a = node.args;
    const target = await ev.eval(a[0] as Node, env);
    const paths: Datum[] = [];
    for (const n of a.slice(1)) paths.push(await ev.evalDatum(n, env));
    const sel = buildSelector(paths);
    const op = type === T.PLUCK ? pluck : without;
    if (target instanceof TableRef || target instanceof Seq)
      return ev.mapSeq(ev.seq(target), async (row) => op(row, sel));
    const d = await ev.datum(target);
    if (Array.isArray(d)) return d.map((row) => op(row, sel));
    return op(d, sel);
  },
});

export const datumTerms: TermFamily = {
  [T.GET_FIELD]: bracket(true),
  [T.BRACKET]: bracket(false),
  [T.HAS_FIELDS]: {
    min: 1,
    max: INF,
    eval: async (ev, node, env) => {
      const a = node.args;
      const target = await ev.eval(a[0] as Node, env);
      const paths: Datum[] = [];
      for (const n of a.slice(1)) paths.push(await ev.evalDatum(n, env));
      const sel = buildSelector(paths);
      if (target instanceof TableRef || target instanceof Seq) {
        return ev.mapSeq(ev.seq(target), async (row) => (hasFields(row, sel) ? row : undefined), true);
      }
      return hasFields(await ev.datum(target), sel);
    },
  },
  [T.PLUCK]: pluckOrWithout(T.PLUCK),
  [T.WITHOUT]: pluckOrWithout(T.WITHOUT),
  [T.MERGE]: {
    min: 1,
    max: INF,
    eval: async (ev, node, env) => {
      const a = node.args;
      const target = await ev.eval(a[0] as Node, env);
      const patches: Value[] = [];
      for (const n of a.slice(1)) patches.push(await ev.eval(n, env));
      const merge = async (row: Datum): Promise<Datum> => {
        let out = row;
        for (const p of patches) out = deepMerge(out, await ev.callDatum(p, [out]));
        return out;
      };
      if (target instanceof TableRef || target instanceof Seq) return ev.mapSeq(ev.seq(target), merge);
      const d = await ev.datum(target);
      if (Array.isArray(d)) return Promise.all(d.map(merge));
      return merge(d);
    },
  },
  [T.KEYS]: {
    min: 1,
    max: 1,
    eval: async (ev, node, env) => {
      const d = await ev.evalDatum(node.args[0] as Node, env);
      if (!isObject(d)) throw queryLogic(`Expected type OBJECT but found ${datumTypeName(d)}.`);
      return Object.keys(d).sort();
    },
  },
  [T.OBJECT]: {
    min: 0,
    max: INF,
    eval: async (ev, node, env) => {
      const a = node.args;
      if (a.length % 2 !== 0) throw queryLogic(`OBJECT expects an even number of arguments (but found ${a.length}).`);
      const out = newObject();
      for (let i = 0; i < a.length; i += 2) {
        const key = await ev.string(a[i] as Node, env);
        const value = await ev.evalDatum(a[i + 1] as Node, env);
        const existing = field(out, key);
        if (existing !== undefined) {
          throw queryLogic(
            `Duplicate key ${JSON.stringify(key)} in object.  (got ${JSON.stringify(existing)} and ${JSON.stringify(value)} as values)`,
          );
        }
        out[key] = value;
      }
      return out;
    },
  },
  [T.JSON]: {
    min: 1,
    max: 1,
    eval: async (ev, node, env) => {
      const text = await ev.string(node.args[0] as Node, env);
      let parsed: Datum;
      try {
        parsed = JSON.parse(text) as Datum; // iterative in V8: no depth overflows it
      } catch (err) {
        throw queryLogic(
          `Failed to parse "${text.length > 200 ? `${text.slice(0, 200)}...` : text}" as JSON: ${(err as Error).message}`,
        );
      }
      if (nestingDepth(parsed, MAX_DOCUMENT_DEPTH) > MAX_DOCUMENT_DEPTH)
        throw resourceLimit(tooDeepMessage('The JSON text given to r.json'));
      return parsed;
    },
  },
  [T.COERCE_TO]: {
    min: 2,
    max: 2,
    eval: async (ev, node, env) => {
      // Only to 'string' from a string or BINARY (its bytes as UTF-8): what a loader sends as
      // r.json(r.binary(BYTES).coerceTo('string')). Other conversions are not supported.
      const v = await ev.evalDatum(node.args[0] as Node, env);
      const to = await ev.evalDatum(node.args[1] as Node, env);
      if (typeof to !== 'string') throw queryLogic(`Expected type STRING but found ${datumTypeName(to)}.`);
      if (to.toLowerCase() === 'string') {
        if (typeof v === 'string') return v;
        if (isBinary(v)) return Buffer.from(v.data, 'base64').toString('utf8');
      }
      throw queryLogic(`Wharf does not support COERCE_TO from ${datumTypeName(v)} to ${to.toUpperCase()}.`);
    },
  },
  [T.TYPE_OF]: { min: 1, max: 1, eval: async (ev, node, env) => typeName(await ev.eval(node.args[0] as Node, env)) },
  [T.UUID]: {
    min: 0,
    max: 1,
    eval: async (ev, node, env) => {
      if (node.args.length === 0) return randomUUID();
      const name = await ev.string(node.args[0] as Node, env);
      const h = createHash('sha1').update(UUID_NAMESPACE).update(name).digest();
      h[6] = ((h[6] as number) & 0x0f) | 0x50;
      h[8] = ((h[8] as number) & 0x3f) | 0x80;
      const x = h.subarray(0, 16).toString('hex');
      return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
    },
  },
  [T.MINVAL]: { min: 0, max: 0, eval: async () => Bound.MIN },
  [T.MAXVAL]: { min: 0, max: 0, eval: async () => Bound.MAX },
};
