/**
 * SET_WRITE_HOOK and GET_WRITE_HOOK (RethinkDB's terms/write_hook.cc, table_config.cc's
 * convert_write_hook_to_datum). The hook is stored by ../write-hooks.ts and applied by
 * ../writes.ts. `getWriteHook` answers `{function: BINARY, query}`; the binary is
 * `$reql_write_hook_function$` followed by the function's wire JSON, which `setWriteHook` takes
 * back (as RethinkDB's does its own serialization).
 */
import { queryLogic } from '../../errors.js';
import { compile, type Node } from '../compiler.js';
import { type Datum, type DatumObject, isBinary } from '../datum.js';
import { isDeterministic } from '../determinism.js';
import type { Evaluator } from '../evaluator.js';
import { T } from '../names.js';
import type { TermFamily } from '../registry.js';
import { type Env, expectType, Func, TableRef, type Value } from '../values.js';
import { toWire } from './admin.js';
import { JsFunc } from './javascript.js';

const BLOB_PREFIX = '$reql_write_hook_function$';

async function tableArg(ev: Evaluator, node: Node, env: Env | null): Promise<TableRef> {
  const t = await ev.eval(node, env);
  if (!(t instanceof TableRef)) expectType(t, 'TABLE');
  return t;
}

/** The hook's wire FUNC from the argument: a function, or the binary getWriteHook gave. */
async function hookWire(ev: Evaluator, node: Node, env: Env | null): Promise<{ wire: unknown; body: Node } | null> {
  let v: Value;
  if (node.kind === 'func') v = new Func(node.params, node.body, env);
  else v = await ev.eval(node, env);
  if (v instanceof JsFunc)
    throw queryLogic('Could not prove function deterministic.  Write hook functions must be deterministic.');
  if (v instanceof Func) {
    // The stored function outlives this query: variables it captures become their values.
    const fn: Node = { kind: 'func', params: v.params, body: closeOver(v.body, v.env, new Set(v.params)), bt: [] };
    return { wire: toWire(fn), body: fn };
  }
  const d = await ev.datum(v);
  if (d === null) return null;
  if (!isBinary(d)) expectType(d, 'FUNCTION');
  const text = Buffer.from(d.data, 'base64').toString('utf8');
  if (!text.startsWith(BLOB_PREFIX))
    throw queryLogic(
      'Cannot create a write hook except from a reql_write_hook_function returned from `get_write_hook`.',
    );
  let wire: unknown;
  let body: Node;
  try {
    wire = JSON.parse(text.slice(BLOB_PREFIX.length));
    body = compile(wire);
  } catch (err) {
    throw queryLogic(`The write hook function given could not be read (${(err as Error).message}).`);
  }
  if (body.kind !== 'func') throw queryLogic('The write hook function given could not be read (not a function).');
  return { wire, body };
}

/** `n` with every variable not bound inside it (ids in `bound`) replaced by its value in `env`. */
function closeOver(n: Node, env: Env | null, bound: ReadonlySet<number>): Node {
  switch (n.kind) {
    case 'var': {
      if (bound.has(n.id)) return n;
      const value = env?.lookup(n.id);
      return value === undefined ? n : { kind: 'datum', value, depth: 0 };
    }
    case 'func':
      return { ...n, body: closeOver(n.body, env, new Set([...bound, ...n.params])) };
    case 'term': {
      const optargs = Object.create(null) as Record<string, Node>;
      for (const [k, a] of Object.entries(n.optargs)) optargs[k] = closeOver(a, env, bound);
      return { ...n, args: n.args.map((a) => closeOver(a, env, bound)), optargs };
    }
    case 'obj': {
      const fields = Object.create(null) as Record<string, Node>;
      for (const [k, a] of Object.entries(n.fields)) fields[k] = closeOver(a, env, bound);
      return { ...n, fields };
    }
    case 'array':
      return { ...n, items: n.items.map((a) => closeOver(a, env, bound)) };
    default:
      return n;
  }
}

export const writeHookTerms: TermFamily = {
  [T.SET_WRITE_HOOK]: {
    min: 2,
    max: 2,
    eval: async (ev, node, env) => {
      const t = await tableArg(ev, node.args[0] as Node, env);
      const hook = await hookWire(ev, node.args[1] as Node, env);
      if (hook !== null) {
        if (!isDeterministic(hook.body, false))
          throw queryLogic('Could not prove function deterministic.  Write hook functions must be deterministic.');
        if (hook.body.kind !== 'func' || hook.body.params.length !== 3)
          throw queryLogic('Write hook functions must expect 3 arguments.');
      }
      const existed = await ev.deps.trackWrite(
        ev.deps.catalog.writeHooks.set(t.engineName, hook === null ? null : (hook.wire as Datum)),
      );
      const out: DatumObject = Object.create(null);
      out[hook === null ? 'deleted' : existed ? 'replaced' : 'created'] = 1;
      return out;
    },
  },
  [T.GET_WRITE_HOOK]: {
    min: 1,
    max: 1,
    eval: async (ev, node, env) => {
      const t = await tableArg(ev, node.args[0] as Node, env);
      const def = await ev.deps.catalog.writeHooks.get(t.engineName);
      return def === undefined ? null : writeHookDatum(def.fn);
    },
  },
};

/** `{function, query}` as RethinkDB shows a hook (also in table config's `write_hook`). */
export function writeHookDatum(fn: Datum): DatumObject {
  return {
    function: { $reql_type$: 'BINARY', data: Buffer.from(BLOB_PREFIX + JSON.stringify(fn)).toString('base64') },
    query: `setWriteHook(${JSON.stringify(fn)})`,
  };
}
