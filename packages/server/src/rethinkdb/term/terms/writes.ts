/**
 * Writes (RethinkDB's writes.cc): insert, update, replace, delete, sync. The evaluation lives in
 * ../writes.ts (result shapes, chunked engine writes); this module declares the terms.
 */
import type { Node } from '../compiler.js';
import { T } from '../names.js';
import type { TermFamily } from '../registry.js';
import { expectType, TableRef } from '../values.js';
import { deleteRows, insert, replaceRows, updateRows } from '../writes.js';

const WRITE_OPTS = ['durability', 'return_changes', 'return_vals', 'non_atomic', 'ignore_write_hook'] as const;

export const writeTerms: TermFamily = {
  [T.INSERT]: {
    min: 2,
    max: 2,
    optargs: ['conflict', 'durability', 'return_changes', 'return_vals', 'ignore_write_hook'],
    eval: (ev, node, env) => insert(ev, node, env),
  },
  [T.UPDATE]: { min: 2, max: 2, optargs: WRITE_OPTS, eval: (ev, node, env) => updateRows(ev, node, env) },
  [T.REPLACE]: { min: 2, max: 2, optargs: WRITE_OPTS, eval: (ev, node, env) => replaceRows(ev, node, env) },
  [T.DELETE]: { min: 1, max: 1, optargs: WRITE_OPTS, eval: (ev, node, env) => deleteRows(ev, node, env) },
  [T.SYNC]: {
    min: 1,
    max: 1,
    eval: async (ev, node, env) => {
      const t = await ev.eval(node.args[0] as Node, env);
      if (!(t instanceof TableRef)) expectType(t, 'TABLE');
      // A sync is a write of the table's (RethinkDB's write_sync_depending_on_durability).
      ev.deps.access?.require('write', t.db, t.name);
      try {
        await ev.deps.trackWrite(ev.deps.db.sync());
      } catch (err) {
        throw ev.engineError(err, t);
      }
      return { synced: 1 };
    },
  },
};
