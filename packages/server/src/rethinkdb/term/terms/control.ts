/**
 * Control (RethinkDB's control.cc, error.cc, sort.cc's ASC/DESC): ERROR, FUNCALL, BRANCH, DEFAULT.
 */
import { EmptyUserError, queryLogic, ReqlRuntimeError } from '../../errors.js';
import { ErrorType } from '../../protocol.js';
import type { Node } from '../compiler.js';
import { type Datum, truthy } from '../datum.js';
import { T, termName } from '../names.js';
import { INF, type TermDef, type TermFamily } from '../registry.js';
import { DbRef, expectType, Func, Grouped, TableRef, type Value } from '../values.js';

const orderDirection = (type: number): TermDef => ({
  min: 1,
  max: 1,
  eval: async () => {
    throw queryLogic(`${termName(type)} may only be used as an argument to ORDER_BY or UNION.`);
  },
});

export const controlTerms: TermFamily = {
  [T.ERROR]: {
    min: 0,
    max: 1,
    eval: async (ev, node, env) => {
      if (node.args.length === 0) throw new EmptyUserError('Empty ERROR term outside a default block.');
      throw new ReqlRuntimeError(await ev.string(node.args[0] as Node, env), ErrorType.USER);
    },
  },
  [T.FUNCALL]: {
    min: 1,
    max: INF,
    eval: async (ev, node, env) => {
      const a = node.args;
      const f = await ev.eval(a[0] as Node, env);
      // The first argument may be GROUPED_DATA: the function then runs once per group
      // (RethinkDB's funcall_term_t is polymorphic on it).
      const first = a.length > 1 ? await ev.eval(a[1] as Node, env) : undefined;
      const args: Datum[] = [];
      for (const n of a.slice(2)) args.push(await ev.evalDatum(n, env));
      if (first instanceof Grouped && f instanceof Func) {
        const out = new Map<string, { key: Datum; value: Value }>();
        for (const [k, g] of first.groups)
          out.set(k, { key: g.key, value: await ev.datum(await ev.call(f, [await ev.datum(g.value), ...args])) });
        return new Grouped(out);
      }
      if (first !== undefined) args.unshift(await ev.datum(first));
      // A non-function acts as a constant function (RethinkDB's CONSTANT_SHORTCUT for r.do).
      if (!(f instanceof Func)) return f;
      return ev.call(f, args);
    },
  },
  [T.BRANCH]: {
    min: 3,
    max: INF,
    eval: async (ev, node, env) => {
      const a = node.args;
      if (a.length % 2 === 0) throw queryLogic('Cannot call `branch` term with an even number of arguments.');
      for (let i = 0; i + 1 < a.length; i += 2) {
        const cond = await ev.eval(a[i] as Node, env);
        if (cond instanceof TableRef || cond instanceof DbRef || cond instanceof Func) expectType(cond, 'DATUM');
        if (truthy(await ev.datum(cond))) return ev.eval(a[i + 1] as Node, env);
      }
      return ev.eval(a[a.length - 1] as Node, env);
    },
  },
  [T.DEFAULT]: {
    min: 2,
    max: 2,
    eval: async (ev, node, env) => {
      const a = node.args;
      let original: ReqlRuntimeError | null = null;
      try {
        const v = await ev.eval(a[0] as Node, env);
        if (v !== null) return v;
      } catch (err) {
        if (!(err instanceof ReqlRuntimeError) || err.errorType !== ErrorType.NON_EXISTENCE) throw err;
        original = err;
      }
      try {
        const d = await ev.eval(a[1] as Node, env);
        return d instanceof Func ? await ev.call(d, [original === null ? null : original.message]) : d;
      } catch (err) {
        if (!(err instanceof EmptyUserError)) throw err;
        if (original !== null) throw original;
        return null;
      }
    },
  },
  // Spliced into the enclosing term's arguments by the evaluator; alone, it is its array.
  [T.ARGS]: { min: 1, max: 1, eval: async (ev, node, env) => ev.array(node.args[0] as Node, env) },
  [T.ASC]: orderDirection(T.ASC),
  [T.DESC]: orderDirection(T.DESC),
};
