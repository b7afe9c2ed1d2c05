/**
 * Datums, objects and types (RethinkDB's datum_terms.cc, obj.cc, obj_or_seq.cc, type_manip.cc,
 * json.cc, uuid.cc): field access, pluck/without/merge, keys, object, json, coerce_to, type_of,
 * uuid, minval/maxval.
 */
import { createHash, randomUUID } from 'node:crypto';
import { queryLogic, resourceLimit } from '../../errors.js';
import { nameUuid } from '../catalog.js';
import type { Node, TermNode } from '../compiler.js';
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
  typeError,
} from '../datum.js';
import type { Evaluator } from '../evaluator.js';
import { jsonErrorText, jsonParseFailure, mayHideJsonError } from '../json-errors.js';
import { T } from '../names.js';
import { buildSelector, deepMerge, hasFields, isLiteral, pluck, without } from '../objects.js';
import { INF, type TermDef, type TermFamily } from '../registry.js';
import {
  Bound,
  DbRef,
  type Env,
  Grouped,
  isDatumValue,
  Seq,
  SingleSelection,
  TableRef,
  typeName,
  type Value,
} from '../values.js';

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

/** The first argument evaluated, and the rest as a field selector (pluck, without, has_fields). */
async function targetAndSelector(ev: Evaluator, node: TermNode, env: Env | null) {
  const target = await ev.eval(node.args[0] as Node, env);
  const paths: Datum[] = [];
  for (const n of node.args.slice(1)) paths.push(await ev.evalDatum(n, env));
  return { target, sel: buildSelector(paths) };
}

const pluckOrWithout = (type: number): TermDef => ({
  min: 1,
  max: INF,
  eval: async (ev, node, env) => {
    const { target, sel } = await targetAndSelector(ev, node, env);
    const op = type === T.PLUCK ? pluck : without;
    if (target instanceof TableRef || target instanceof Seq)
      return ev.mapSeq(ev.seq(target), async (row) => op(row, sel));
    const d = await ev.datum(target);
    if (Array.isArray(d)) return d.map((row) => op(row, sel));
    return op(d, sel);
  },
});

const STRAY_LITERAL =
  'Stray literal keyword found: literal is only legal inside of the object passed to merge or update and cannot nest inside other literals.';

export const datumTerms: TermFamily = {
  [T.GET_FIELD]: bracket(true),
  [T.BRACKET]: bracket(false),
  [T.HAS_FIELDS]: {
    min: 1,
    max: INF,
    eval: async (ev, node, env) => {
      const { target, sel } = await targetAndSelector(ev, node, env);
      if (target instanceof TableRef || target instanceof Seq) {
        return ev.mapSeq(ev.seq(target), async (row) => (hasFields(row, sel) ? row : undefined), true);
      }
      const d = await ev.datum(target);
      if (Array.isArray(d)) return d.filter((row) => hasFields(row, sel));
      if (!isObject(d))
        throw queryLogic(`Cannot perform has_fields on a non-object non-sequence \`${JSON.stringify(d)}\`.`);
      return hasFields(d, sel);
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
        for (const p of patches) {
          const patch = await ev.callDatum(p, [out]);
          // A literal is legal inside the patch object, not as the patch itself.
          if (isLiteral(patch)) throw queryLogic(STRAY_LITERAL);
          out = deepMerge(out, patch);
        }
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
      if (!isObject(d)) throw typeError('OBJECT', d);
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
        // RethinkDB's words (RapidJSON's), else V8's.
        if (text.includes('\0')) throw queryLogic('Encountered unescaped null byte in JSON string.');
        throw queryLogic(jsonParseFailure(text, jsonErrorText(text) ?? (err as Error).message));
      }
      if (mayHideJsonError(text)) {
        const why = jsonErrorText(text);
        if (why !== undefined) throw queryLogic(jsonParseFailure(text, why));
      }
      if (nestingDepth(parsed, MAX_DOCUMENT_DEPTH) > MAX_DOCUMENT_DEPTH)
        throw resourceLimit(tooDeepMessage('The JSON text given to r.json'));
      return parsed;
    },
  },
  [T.COERCE_TO]: { min: 2, max: 2, eval: coerceTo },
  [T.INFO]: { min: 1, max: 1, eval: info },
  [T.LITERAL]: {
    min: 0,
    max: 1,
    eval: async (ev, node, env) => {
      if (node.strayLiteral) throw queryLogic(STRAY_LITERAL);
      const out = newObject();
      out.$reql_type$ = 'LITERAL';
      if (node.args.length === 1) out.value = await ev.evalDatum(node.args[0] as Node, env);
      return out;
    },
  },
  [T.VALUES]: {
    min: 1,
    max: 1,
    eval: async (ev, node, env) => {
      const d = await ev.evalDatum(node.args[0] as Node, env);
      if (!isObject(d)) throw typeError('OBJECT', d);
      return Object.keys(d)
        .sort()
        .map((k) => d[k] as Datum);
    },
  },
  [T.BINARY]: {
    min: 1,
    max: 1,
    eval: async (ev, node, env) => {
      const d = await ev.evalDatum(node.args[0] as Node, env);
      if (isBinary(d)) return d;
      if (typeof d !== 'string') throw typeError('STRING', d);
      return binaryOf(Buffer.from(d, 'utf8'));
    },
  },
  [T.TO_JSON_STRING]: {
    min: 1,
    max: 1,
    eval: async (ev, node, env) => toJson(await ev.evalDatum(node.args[0] as Node, env)),
  },
  [T.TYPE_OF]: { min: 1, max: 1, eval: async (ev, node, env) => typeOf(await ev.eval(node.args[0] as Node, env)) },
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

function binaryOf(bytes: Buffer): Datum {
  const out = newObject();
  out.$reql_type$ = 'BINARY';
  out.data = bytes.toString('base64');
  return out;
}

/** RethinkDB's JSON text of a datum: compact, object keys in order. */
export function toJson(v: Datum): string {
  if (isObject(v)) {
    const rt = field(v, '$reql_type$');
    if (rt === 'MINVAL' || rt === 'MAXVAL')
      throw queryLogic(`Cannot convert \`r.${rt === 'MINVAL' ? 'minval' : 'maxval'}\` to JSON.`);
  }
  if (Array.isArray(v)) return `[${v.map(toJson).join(',')}]`;
  if (v !== null && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${toJson(v[k] as Datum)}`)
      .join(',')}}`;
  return JSON.stringify(v);
}

function typeOf(v: Value): string {
  if (v instanceof Grouped) return v.stream ? 'GROUPED_STREAM' : 'GROUPED_DATA';
  if (v instanceof TableRef) return 'TABLE';
  return typeName(v);
}

/** The coerce_to name of a value's type (type_manip.cc's map). */
function coerceName(v: Value): string {
  if (isDatumValue(v)) {
    const d = v as Datum;
    if (isBinary(d)) return 'BINARY';
    const t = datumTypeName(d);
    return t.startsWith('PTYPE<') ? 'OBJECT' : t;
  }
  return typeName(v);
}

const COERCE_TYPES = new Set([
  'DB',
  'TABLE',
  'TABLE_SLICE',
  'SELECTION<STREAM>',
  'SELECTION<ARRAY>',
  'STREAM',
  'SELECTION<OBJECT>',
  'DATUM',
  'FUNCTION',
  'GROUPED_DATA',
  'NULL',
  'BINARY',
  'BOOL',
  'NUMBER',
  'STRING',
  'ARRAY',
  'OBJECT',
  'MINVAL',
  'MAXVAL',
]);

async function coerceTo(ev: Evaluator, node: TermNode, env: Env | null): Promise<Value> {
  const v = await ev.eval(node.args[0] as Node, env);
  const toName = await ev.string(node.args[1] as Node, env);
  const to = toName.toUpperCase();
  if (!COERCE_TYPES.has(to)) throw queryLogic(`Unknown Type: ${to}`);
  if (v instanceof Bound && to === 'STRING') throw queryLogic(`Cannot convert \`r.${v.which}val\` to JSON.`);
  const from = coerceName(v);
  if (from === to) return v;
  const isSeq = v instanceof Seq || v instanceof TableRef;
  if (to === 'DATUM' && (isDatumValue(v) || v instanceof SingleSelection)) return v;
  if (to === 'BOOL') return !(isDatumValue(v) && v === null);
  if (isDatumValue(v) || v instanceof SingleSelection) {
    const d = await ev.datum(v);
    if (from === 'BINARY' && to === 'STRING')
      return Buffer.from((d as { data: string }).data, 'base64').toString('utf8');
    if (from === 'STRING' && to === 'BINARY') return binaryOf(Buffer.from(d as string, 'utf8'));
    if (to === 'STRING') return toJson(d);
    if (from === 'OBJECT' && to === 'ARRAY' && isObject(d))
      return Object.keys(d)
        .sort()
        .map((k) => [k, d[k] as Datum]);
    if (from === 'STRING' && to === 'NUMBER') {
      const text = d as string;
      const m =
        /^\s*([+-]?(?:0[xX][0-9a-fA-F]+(?:\.[0-9a-fA-F]*)?(?:[pP][+-]?\d+)?|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan))$/i.exec(
          text,
        );
      if (!m) throw queryLogic(`Could not coerce \`${text}\` to NUMBER.`);
      const body = m[1] as string;
      const n = /^[+-]?0x/i.test(body)
        ? parseHexFloat(body)
        : Number(body.replace(/^([+-]?)inf(inity)?$/i, '$1Infinity'));
      if (!Number.isFinite(n)) throw queryLogic(`Non-finite number: ${body.toLowerCase().replace('infinity', 'inf')}`);
      return n;
    }
  }
  if (isSeq || (isDatumValue(v) && Array.isArray(v))) {
    const rows = await ev.materialize(ev.seq(v));
    if (to === 'ARRAY' || to === 'DATUM') return rows;
    if (to === 'OBJECT') {
      const out = newObject();
      for (const pair of rows) {
        if (!Array.isArray(pair)) throw typeError('ARRAY', pair);
        if (pair.length !== 2) throw queryLogic(`Expected array of size 2, but got size ${pair.length}.`);
        const key = pair[0] as Datum;
        if (typeof key !== 'string') throw typeError('STRING', key);
        const existing = field(out, key);
        if (existing !== undefined)
          throw queryLogic(
            `Duplicate key ${JSON.stringify(key)} in coerced object.  (got ${toJson(existing)} and ${toJson(pair[1] as Datum)} as values)`,
          );
        out[key] = pair[1] as Datum;
      }
      return out;
    }
  }
  throw queryLogic(`Cannot coerce ${from} to ${to}.`);
}

function parseHexFloat(s: string): number {
  const m = /^([+-]?)0x([0-9a-f]*)(?:\.([0-9a-f]*))?(?:p([+-]?\d+))?$/i.exec(s);
  if (!m) return Number.NaN;
  const int = m[2] ? Number.parseInt(m[2], 16) : 0;
  const frac = m[3] ? Number.parseInt(m[3], 16) / 16 ** m[3].length : 0;
  const v = (int + frac) * 2 ** Number(m[4] ?? 0);
  return m[1] === '-' ? -v : v;
}

async function info(ev: Evaluator, node: TermNode, env: Env | null): Promise<Value> {
  const v = await ev.eval(node.args[0] as Node, env);
  const out = newObject();
  out.type = typeOf(v);
  if (v instanceof DbRef) {
    ev.deps.catalog.requireDb(v.name);
    out.name = v.name;
    out.id = nameUuid(`db:${v.name}`);
  } else if (v instanceof TableRef) {
    out.name = v.name;
    out.primary_key = v.primaryKey;
    out.db = { type: 'DB', name: v.db, id: nameUuid(`db:${v.db}`) };
    out.id = nameUuid(v.engineName);
    let count = 0;
    let indexes: string[] = [];
    try {
      count = await v.engine.count();
      indexes = (await v.engine.listIndexes()).map((i) => i.name).sort();
    } catch (err) {
      throw ev.engineError(err, v);
    }
    out.doc_count_estimates = [count];
    out.indexes = indexes;
  } else if (v instanceof SingleSelection) {
    out.table = (await info(ev, { ...node, args: [{ kind: 'value', value: v.table, bt: node.bt }] }, env)) as Datum;
  } else if (v instanceof Seq && v.table) {
    out.table = (await info(ev, { ...node, args: [{ kind: 'value', value: v.table, bt: node.bt }] }, env)) as Datum;
  } else if (isDatumValue(v)) {
    out.value = toJson(v as Datum);
  }
  return out;
}
