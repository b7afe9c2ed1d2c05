/**
 * Times (RethinkDB's time.cc): iso8601, epoch_time, to_epoch_time, now, time.
 */
import { queryLogic } from '../../errors.js';
import type { Node } from '../compiler.js';
import {
  isTime,
  makeTime,
  parseIso8601,
  sanitizeTimezone,
  type TimeDatum,
  timeFromParts,
  typeError,
} from '../datum.js';
import type { Evaluator } from '../evaluator.js';
import { T } from '../names.js';
import type { TermDef, TermFamily } from '../registry.js';
import type { Env } from '../values.js';

function offsetSeconds(tz: string): number {
  const m = /^([+-])(\d{2}):(\d{2})$/.exec(tz);
  if (!m) return 0;
  const v = Number(m[2]) * 3600 + Number(m[3]) * 60;
  return m[1] === '-' ? -v : v;
}

/** The wall-clock fields of a time in its own timezone. */
function local(t: TimeDatum): Date {
  const d = new Date(Math.round((t.epoch_time + offsetSeconds(t.timezone)) * 1000));
  // The reference server's calendar (boost) covers the years 1400 to 9999.
  const year = d.getUTCFullYear();
  if (year < 1400 || year > 9999) throw queryLogic('Error in time logic: Year is out of valid range: 1400..10000.');
  return d;
}

async function timeArg(ev: Evaluator, node: Node, env: Env | null): Promise<TimeDatum> {
  const t = await ev.evalDatum(node, env);
  if (!isTime(t)) throw typeError('PTYPE<TIME>', t);
  return t;
}

function portion(f: (d: Date, t: TimeDatum) => number): TermDef {
  return {
    min: 1,
    max: 1,
    eval: async (ev, node, env) =>
      f(local(await timeArg(ev, node.args[0] as Node, env)), await timeArg(ev, node.args[0] as Node, env)),
  };
}

export function toIso8601(t: TimeDatum): string {
  const d = local(t);
  const year = d.getUTCFullYear();
  if (year < 0 || year > 9999) throw queryLogic(`Year \`${year}\` out of valid ISO 8601 range [0, 9999].`);
  const p = (n: number, w = 2): string => String(n).padStart(w, '0');
  let out = `${p(year, 4)}-${p(d.getUTCMonth() + 1)}-${p(d.getUTCDate())}T${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())}`;
  const micros = Math.round((t.epoch_time - Math.floor(t.epoch_time)) * 1e6) % 1e6;
  if (micros !== 0) out += `.${p(Math.floor(micros / 1000), 3)}`;
  return out + t.timezone;
}

const constant = (n: number): TermDef => ({ min: 0, max: 0, eval: async () => n });

export const timeTerms: TermFamily = {
  [T.IN_TIMEZONE]: {
    min: 2,
    max: 2,
    eval: async (ev, node, env) => {
      const t = await timeArg(ev, node.args[0] as Node, env);
      const tz = sanitizeTimezone(await ev.string(node.args[1] as Node, env));
      return makeTime(t.epoch_time, tz);
    },
  },
  [T.TO_ISO8601]: {
    min: 1,
    max: 1,
    eval: async (ev, node, env) => toIso8601(await timeArg(ev, node.args[0] as Node, env)),
  },
  [T.TIMEZONE]: {
    min: 1,
    max: 1,
    eval: async (ev, node, env) => (await timeArg(ev, node.args[0] as Node, env)).timezone,
  },
  [T.DURING]: {
    min: 3,
    max: 3,
    optargs: ['left_bound', 'right_bound'],
    eval: async (ev, node, env) => {
      const t = await timeArg(ev, node.args[0] as Node, env);
      const lo = await timeArg(ev, node.args[1] as Node, env);
      const hi = await timeArg(ev, node.args[2] as Node, env);
      const leftOpen = ((await ev.optDatum(node, 'left_bound', env)) ?? 'closed') === 'open';
      const rightOpen = ((await ev.optDatum(node, 'right_bound', env)) ?? 'open') === 'open';
      const afterLo = leftOpen ? t.epoch_time > lo.epoch_time : t.epoch_time >= lo.epoch_time;
      const beforeHi = rightOpen ? t.epoch_time < hi.epoch_time : t.epoch_time <= hi.epoch_time;
      return afterLo && beforeHi;
    },
  },
  [T.DATE]: {
    min: 1,
    max: 1,
    eval: async (ev, node, env) => {
      const t = await timeArg(ev, node.args[0] as Node, env);
      const d = local(t);
      const midnight = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()) / 1000;
      return makeTime(midnight - offsetSeconds(t.timezone), t.timezone);
    },
  },
  [T.TIME_OF_DAY]: {
    min: 1,
    max: 1,
    eval: async (ev, node, env) => {
      const t = await timeArg(ev, node.args[0] as Node, env);
      const s = t.epoch_time + offsetSeconds(t.timezone);
      return Math.round((s - Math.floor(s / 86400) * 86400) * 1000) / 1000;
    },
  },
  [T.YEAR]: portion((d) => d.getUTCFullYear()),
  [T.MONTH]: portion((d) => d.getUTCMonth() + 1),
  [T.DAY]: portion((d) => d.getUTCDate()),
  [T.DAY_OF_WEEK]: portion((d) => (d.getUTCDay() === 0 ? 7 : d.getUTCDay())),
  [T.DAY_OF_YEAR]: portion((d) => Math.floor((d.getTime() - Date.UTC(d.getUTCFullYear(), 0, 1)) / 86400000) + 1),
  [T.HOURS]: portion((d) => d.getUTCHours()),
  [T.MINUTES]: portion((d) => d.getUTCMinutes()),
  [T.SECONDS]: portion((d, t) => {
    const frac = t.epoch_time - Math.trunc(t.epoch_time);
    return d.getUTCSeconds() + Math.round(frac * 1000) / 1000;
  }),
  [T.MONDAY]: constant(1),
  [T.TUESDAY]: constant(2),
  [T.WEDNESDAY]: constant(3),
  [T.THURSDAY]: constant(4),
  [T.FRIDAY]: constant(5),
  [T.SATURDAY]: constant(6),
  [T.SUNDAY]: constant(7),
  [T.JANUARY]: constant(1),
  [T.FEBRUARY]: constant(2),
  [T.MARCH]: constant(3),
  [T.APRIL]: constant(4),
  [T.MAY]: constant(5),
  [T.JUNE]: constant(6),
  [T.JULY]: constant(7),
  [T.AUGUST]: constant(8),
  [T.SEPTEMBER]: constant(9),
  [T.OCTOBER]: constant(10),
  [T.NOVEMBER]: constant(11),
  [T.DECEMBER]: constant(12),
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
      if (!isTime(t)) throw typeError('PTYPE<TIME>', t);
      return t.epoch_time;
    },
  },
  [T.NOW]: { min: 0, max: 0, eval: async (ev) => ev.now },
  [T.TIME]: {
    min: 4,
    max: 7,
    eval: async (ev, node, env) => {
      const a = node.args;
      if (a.length !== 4 && a.length !== 7) throw queryLogic(`Got ${a.length} arguments to TIME (expected 4 or 7).`);
      const parts: number[] = [];
      for (const n of a.slice(0, -1)) parts.push(await ev.number(n, env));
      return timeFromParts(parts, await ev.string(a[a.length - 1] as Node, env));
    },
  },
};
