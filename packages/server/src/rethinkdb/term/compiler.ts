/**
 * Wire JSON → checked AST. A term is `[type, args?, optargs?]`; a JSON object is MAKE_OBJ
 * (its values are terms); scalars are datums; literal arrays come as MAKE_ARRAY. Subtrees
 * without terms are folded into one datum, so a document being inserted costs one walk.
 *
 * Checked here, before evaluation (COMPILE_ERROR, naming the term): unknown or unsupported
 * term types, arity, unknown optional arguments, variables out of scope, r.row outside a
 * one-argument function, ASC/DESC outside ORDER_BY, terms nested deeper than MAX_TERM_DEPTH and
 * datums nested deeper than MAX_DOCUMENT_DEPTH (so nothing after this recurses without bound).
 * No I/O, no sockets.
 *
 * Objects made here have no prototype: their keys are user data (see datum.ts).
 */
import { type Frame, queryLogic, ReqlCompileError } from '../errors.js';
import { type Datum, type DatumObject, MAX_DOCUMENT_DEPTH, nestingDepth, newObject, tooDeepMessage } from './datum.js';
import { T, TERM_NAMES, termName } from './names.js';
import { arityText } from './registry.js';
import { TERMS } from './terms/index.js';

export interface DatumNode {
  kind: 'datum';
  value: Datum;
  /** Levels of objects and arrays in `value` (0 for a scalar), at most MAX_DOCUMENT_DEPTH. */
  depth: number;
}
export interface TermNode {
  kind: 'term';
  type: number;
  args: Node[];
  optargs: Record<string, Node>;
  /** Backtrace frames from the root to this term. */
  bt: Frame[];
  /** An r.literal outside the object passed to merge/update/filter (an error when evaluated). */
  strayLiteral?: true;
}
export interface FuncNode {
  kind: 'func';
  params: number[];
  body: Node;
  bt: Frame[];
}
export interface VarNode {
  kind: 'var';
  id: number;
  bt: Frame[];
}
export interface ObjNode {
  kind: 'obj';
  fields: Record<string, Node>;
  bt: Frame[];
}
export interface ArrayNode {
  kind: 'array';
  items: Node[];
  bt: Frame[];
}
/**
 * A value already evaluated, standing in for a term's first argument when the evaluator applies a
 * term to each group of GROUPED_DATA (never produced by the compiler).
 */
export interface ValueNode {
  kind: 'value';
  value: unknown;
  bt: Frame[];
}
export type Node = DatumNode | TermNode | FuncNode | VarNode | ObjNode | ArrayNode | ValueNode;

/**
 * The deepest nesting of terms in a query (each argument, optional argument and object field is
 * one level). Compiling and evaluating recurse once per level, so this bounds their stack use;
 * it leaves room for a document of MAX_DOCUMENT_DEPTH levels written as terms (the drivers send
 * arrays as MAKE_ARRAY terms) inside a query. Measured: a cold server process (interpreted
 * frames) overflowed its stack at 800 levels of ADD, so the limit keeps a margin of 2 to 3.
 */
export const MAX_TERM_DEPTH = 256;

interface Scope {
  /** Parameter ids of each enclosing FUNC, innermost last. */
  funcs: number[][];
  /** Nesting depth inside ORDER_BY arguments (ASC/DESC are allowed there only). */
  orderByArg: boolean;
  /** Inside a function a stream operation (map, filter, …) runs per row: no writes there. */
  streamFunc?: boolean;
  /**
   * Where r.literal may stand: an argument of MERGE, UPDATE, REPLACE or FILTER after the first,
   * through the objects and functions that give it (RethinkDB's LITERAL_OK evaluation flag).
   */
  literalOk?: boolean;
  /** The array r.args splices: its items stand where r.args stands (literals too). */
  spliceArray?: boolean;
}

/** Terms whose later arguments may hold r.literal (RethinkDB passes them LITERAL_OK). */
const LITERAL_HOSTS: ReadonlySet<number> = new Set([T.MERGE, T.UPDATE, T.REPLACE, T.FILTER]);

/** The scope with literalOk set as given (the same object when it already is). */
function withLiteralOk(scope: Scope, ok: boolean): Scope {
  return (scope.literalOk ?? false) === ok ? scope : { ...scope, literalOk: ok };
}

/** Terms whose later arguments run once per row of a stream (RethinkDB forbids writes there). */
const STREAM_OPS: ReadonlySet<number> = new Set([
  T.MAP,
  T.CONCAT_MAP,
  T.FILTER,
  T.REDUCE,
  T.FOLD,
  T.ORDER_BY,
  T.GROUP,
  T.INNER_JOIN,
  T.OUTER_JOIN,
  T.EQ_JOIN,
  T.MERGE,
  T.SUM,
  T.AVG,
  T.MIN,
  T.MAX,
  T.COUNT,
  T.DISTINCT,
  T.CONTAINS,
  T.OFFSETS_OF,
]);
/** Writes and meta operations. */
const WRITES: ReadonlySet<number> = new Set([
  T.INSERT,
  T.UPDATE,
  T.REPLACE,
  T.DELETE,
  T.DB_CREATE,
  T.DB_DROP,
  T.TABLE_CREATE,
  T.TABLE_DROP,
  T.INDEX_CREATE,
  T.INDEX_DROP,
  T.INDEX_RENAME,
  T.SYNC,
  T.RECONFIGURE,
  T.REBALANCE,
]);

export function compile(wire: unknown): Node {
  return compileNode(wire, [], { funcs: [], orderByArg: false });
}

function isConst(n: Node): n is DatumNode {
  return n.kind === 'datum';
}

function compileNode(wire: unknown, bt: Frame[], scope: Scope): Node {
  if (bt.length > MAX_TERM_DEPTH) {
    throw new ReqlCompileError(
      `Query is nested deeper than the limit of ${MAX_TERM_DEPTH} levels of terms (MAX_TERM_DEPTH).`,
      bt.slice(0, 16),
    );
  }
  if (wire === null || typeof wire !== 'object') {
    if (typeof wire === 'number' && !Number.isFinite(wire))
      throw new ReqlCompileError('Non-finite number in query.', bt);
    return { kind: 'datum', value: wire as Datum, depth: 0 };
  }
  if (!Array.isArray(wire)) return compileObject(wire as Record<string, unknown>, bt, scope);

  if (wire.length < 1 || wire.length > 3) {
    throw new ReqlCompileError(`Expected between 1 and 3 elements in a raw term, but found ${wire.length}.`, bt);
  }
  const type = wire[0];
  if (typeof type !== 'number' || !Number.isInteger(type))
    throw new ReqlCompileError(`Expected a TermType as a number, but found ${JSON.stringify(type)}.`, bt);
  let rawArgs: unknown[] = [];
  let rawOptargs: Record<string, unknown> = {};
  for (const part of wire.slice(1)) {
    if (Array.isArray(part)) rawArgs = part;
    else if (part !== null && typeof part === 'object') rawOptargs = part as Record<string, unknown>;
    else
      throw new ReqlCompileError(
        `Expected an array of arguments or an object of optional arguments in a raw term, but found ${JSON.stringify(part)}.`,
        bt,
      );
  }

  switch (type) {
    case T.DATUM: {
      const value = rawArgs[0] ?? null;
      const depth = nestingDepth(value, MAX_DOCUMENT_DEPTH);
      if (depth > MAX_DOCUMENT_DEPTH) throw new ReqlCompileError(tooDeepMessage('A datum in the query'), bt);
      return { kind: 'datum', value: value as Datum, depth };
    }
    case T.MAKE_ARRAY: {
      const itemScope = withLiteralOk(
        scope.spliceArray ? { ...scope, spliceArray: false } : scope,
        scope.spliceArray === true && scope.literalOk === true,
      );
      const items = rawArgs.map((a, i) => compileNode(a, [...bt, i], itemScope));
      if (items.every(isConst))
        return constant(
          items.map((n) => n.value),
          items,
          bt,
        );
      return { kind: 'array', items, bt };
    }
    case T.MAKE_OBJ:
      return compileObject(rawOptargs, bt, scope);
    case T.VAR: {
      const id = rawArgs[0];
      if (typeof id !== 'number' || !scope.funcs.some((f) => f.includes(id)))
        throw new ReqlCompileError('Variable name not found.', bt);
      return { kind: 'var', id, bt };
    }
    case T.IMPLICIT_VAR: {
      const inner = scope.funcs[scope.funcs.length - 1];
      if (inner === undefined || inner.length !== 1)
        throw new ReqlCompileError('r.row is not defined in this context.', bt);
      if (scope.funcs.length > 1)
        throw new ReqlCompileError('Cannot use r.row in nested queries.  Use functions instead.', bt);
      return { kind: 'var', id: inner[0] as number, bt };
    }
    case T.FUNC: {
      if (rawArgs.length !== 2) throw new ReqlCompileError(`Expected 2 arguments but found ${rawArgs.length}.`, bt);
      const paramsNode = compileNode(rawArgs[0], [...bt, 0], scope);
      const params = isConst(paramsNode) ? paramsNode.value : null;
      if (!Array.isArray(params) || !params.every((p) => typeof p === 'number' && Number.isInteger(p) && p >= 0)) {
        throw new ReqlCompileError('FUNC parameters must be an array of non-negative integers.', bt);
      }
      const inner: Scope = {
        funcs: [...scope.funcs, params as number[]],
        orderByArg: false,
        streamFunc: scope.streamFunc,
        literalOk: scope.literalOk,
      };
      return { kind: 'func', params: params as number[], body: compileNode(rawArgs[1], [...bt, 1], inner), bt };
    }
  }

  const spec = TERMS.get(type);
  if (spec === undefined) {
    if (TERM_NAMES[type] === undefined) throw new ReqlCompileError(`Unrecognized TermType: ${type}.`, bt);
    throw new ReqlCompileError(`Wharf does not support the term ${termName(type)} (${type}).`, bt);
  }
  if (scope.streamFunc && WRITES.has(type)) {
    throw new ReqlCompileError('Cannot nest writes or meta ops in stream operations.  Use FOR_EACH instead.', bt);
  }
  if ((type === T.ASC || type === T.DESC) && !scope.orderByArg) {
    throw new ReqlCompileError(`${termName(type)} may only be used as an argument to ORDER_BY or UNION.`, bt);
  }
  // r.args(array) splices its elements into the arguments at run time: arity is checked then.
  const splices = rawArgs.some((a) => Array.isArray(a) && a[0] === T.ARGS);
  if (!splices && (rawArgs.length < spec.min || rawArgs.length > spec.max)) {
    throw new ReqlCompileError(`Expected ${arityText(spec)} but found ${rawArgs.length}.`, bt);
  }
  const allowed = spec.optargs ?? [];
  for (const k of Object.keys(rawOptargs)) {
    if (!allowed.includes(k)) throw new ReqlCompileError(`Unrecognized optional argument \`${k}\`.`, bt);
  }
  const args = rawArgs.map((a, i) => {
    let argScope =
      type === T.ORDER_BY && i > 0
        ? { ...scope, orderByArg: true }
        : scope.orderByArg
          ? { ...scope, orderByArg: false }
          : scope;
    if (i > 0 && STREAM_OPS.has(type)) argScope = { ...argScope, streamFunc: true };
    else if (type === T.FOR_EACH && i > 0) argScope = { ...argScope, streamFunc: false };
    if (type === T.ARGS) argScope = { ...argScope, spliceArray: true };
    else {
      if (argScope.spliceArray) argScope = { ...argScope, spliceArray: false };
      argScope = withLiteralOk(argScope, i > 0 && LITERAL_HOSTS.has(type));
    }
    return compileNode(a, [...bt, i], argScope);
  });
  const optargs = Object.create(null) as Record<string, Node>;
  for (const [k, v] of Object.entries(rawOptargs)) {
    const optScope =
      (type === T.ORDER_BY && k === 'index') || (type === T.UNION && k === 'interleave')
        ? { ...scope, orderByArg: true }
        : scope;
    optargs[k] = compileNode(v, [...bt, k], withLiteralOk(optScope, false));
  }
  if (type === T.LITERAL && !scope.literalOk) return { kind: 'term', type, args, optargs, bt, strayLiteral: true };
  return { kind: 'term', type, args, optargs, bt };
}

function compileObject(obj: Record<string, unknown>, bt: Frame[], scope: Scope): Node {
  // Fast path: an object with no arrays anywhere below is a datum as it stands.
  const pureDepth = pureDatumDepth(obj, bt);
  if (pureDepth >= 0) return { kind: 'datum', value: obj as DatumObject, depth: pureDepth };
  const fields = Object.create(null) as Record<string, Node>;
  let allConstant = true;
  for (const [k, v] of Object.entries(obj)) {
    const n = compileNode(v, [...bt, k], scope);
    fields[k] = n;
    if (!isConst(n)) allConstant = false;
  }
  if (allConstant && obj.$reql_type$ !== 'TIME') {
    const value = newObject();
    for (const [k, n] of Object.entries(fields)) value[k] = (n as DatumNode).value;
    return constant(value, Object.values(fields) as DatumNode[], bt);
  }
  return { kind: 'obj', fields, bt };
}

/** A BINARY pseudo-type from the wire: RethinkDB's checks and words (base64.cc's decode_base64). */
function checkBinary(v: Record<string, unknown>): void {
  const data = v.data;
  if (typeof data !== 'string') throw queryLogic('Invalid binary pseudotype: lacking `data` key.');
  // Almost always well formed: one linear test, then the character-by-character reading only
  // to find what is wrong.
  if (/^[A-Za-z0-9+/]*={0,2}$/.test(data) && data.replace(/=+$/, '').length % 4 !== 1) return;
  let filled = 0;
  let i = 0;
  for (; i < data.length && data[i] !== '='; i++) {
    const c = data[i] as string;
    if (c === '\r' || c === '\n' || c === ' ' || c === '\t') continue;
    if (!/[A-Za-z0-9+/]/.test(c)) throw queryLogic(`Invalid base64 character found: '${c}'.`);
    filled = (filled + 1) % 4;
  }
  if (filled === 1) throw queryLogic('Invalid base64 length: 1 character remaining, cannot decode a full byte.');
  for (; i < data.length; i++)
    if (!'=\r\n \t'.includes(data[i] as string))
      throw queryLogic("Invalid base64 format, data found after padding character '='.");
}

/** An array or object folded from constant parts, checked against the document depth limit. */
function constant(value: Datum, parts: DatumNode[], bt: Frame[]): DatumNode {
  let depth = 1;
  for (const p of parts) if (p.depth + 1 > depth) depth = p.depth + 1;
  if (depth > MAX_DOCUMENT_DEPTH) throw new ReqlCompileError(tooDeepMessage('A datum in the query'), bt);
  return { kind: 'datum', value, depth };
}

/**
 * If this JSON value is a datum as it stands (no arrays, so no terms, and finite numbers): its
 * nesting depth; otherwise -1. Throws past MAX_DOCUMENT_DEPTH levels instead of recursing on.
 */
function pureDatumDepth(v: unknown, bt: Frame[], level = 0): number {
  if (v === null || typeof v !== 'object') return typeof v !== 'number' || Number.isFinite(v) ? 0 : -1;
  if (Array.isArray(v)) return -1;
  if (level >= MAX_DOCUMENT_DEPTH) throw new ReqlCompileError(tooDeepMessage('A datum in the query'), bt);
  // A TIME from the wire is checked and rounded to milliseconds when evaluated (validateTime).
  if ((v as Record<string, unknown>).$reql_type$ === 'TIME') return -1;
  if ((v as Record<string, unknown>).$reql_type$ === 'BINARY') checkBinary(v as Record<string, unknown>);
  let depth = 1;
  for (const k of Object.keys(v)) {
    const d = pureDatumDepth((v as Record<string, unknown>)[k], bt, level + 1);
    if (d < 0) return -1;
    if (d + 1 > depth) depth = d + 1;
  }
  return depth;
}
