/**
 * Times (RethinkDB's time.cc): iso8601, epoch_time, to_epoch_time, now, time.
 */
import { queryLogic } from '../../errors.js';
import type { Node } from '../compiler.js';
import { datumTypeName, isTime, makeTime, parseIso8601, timeFromParts } from '../datum.js';
import { T } from '../names.js';
import type { TermFamily } from '../registry.js';

export const timeTerms: TermFamily = {
  [T.ISO8601]: {
    min: 1,
    max: 1,
    optargs: ['default_timezone'],
    eval: async (ev, node, env) => {
      const text = await ev.string(node.args[0] as Node, env);
      const tz = await ev.optDatum(node, 'default_timezone', env);
      return parseIso8601(text, typeof tz === 'string' ? tz : undefined);
    },
  },
  [T.EPOCH_TIME]: {
    min: 1,
    max: 1,
    eval: async (ev, node, env) => makeTime(await ev.number(node.args[0] as Node, env)),
  },
  [T.TO_EPOCH_TIME]: {
    min: 1,
    max: 1,
    eval: async (ev, node, env) => {
      const t = await ev.evalDatum(node.args[0] as Node, env);
      if (!isTime(t)) throw queryLogic(`Expected type PTYPE<TIME> but found ${datumTypeName(t)}.`);
      return t.epoch_time;
    },
  },
  [T.NOW]: { min: 0, max: 0, eval: async (ev) => ev.now },
  [T.TIME]: {
    min: 4,
    max: 7,
    eval: async (ev, node, env) => {
      const a = node.args;
      if (a.length !== 4 && a.length !== 7) throw queryLogic(`Expected 4 or 7 arguments but found ${a.length}.`);
      const parts: number[] = [];
      for (const n of a.slice(0, -1)) parts.push(await ev.number(n, env));
      return timeFromParts(parts, await ev.string(a[a.length - 1] as Node, env));
    },
  },
};
