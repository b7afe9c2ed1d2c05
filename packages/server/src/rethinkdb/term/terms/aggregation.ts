/**
 * Aggregation (RethinkDB's seq.cc reductions): count.
 */
import type { Node } from '../compiler.js';
import { type DatumObject, datumsEqual, isPlainObject, truthy } from '../datum.js';
import { T } from '../names.js';
import type { TermFamily } from '../registry.js';
import { Func, TableRef } from '../values.js';

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
        if (isPlainObject(target as never)) return Object.keys(target as DatumObject).length;
      }
      const s = ev.seq(target);
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
              ? truthy(await ev.callDatum(pred, [r.value]))
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
};
