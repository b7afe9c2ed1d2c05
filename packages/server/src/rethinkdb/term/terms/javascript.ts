/**
 * JAVASCRIPT (RethinkDB's terms/js.cc, func.cc's js_func_t): `r.js(source, {timeout})` runs the
 * source in a worker thread of the JS pool (../js-pool.ts, ../js-worker-source.ts), never on the
 * server's thread, within a time limit (default 5 s, as RethinkDB). A datum comes back as a
 * datum; a function comes back as a JsFunc, a ReQL function (map, filter, do, …) whose every
 * call runs in the pool with the same time limit. Errors and texts are RethinkDB's.
 */
import { defaultLimits } from '../../../limits.js';
import { internalError, queryLogic, type ReqlRuntimeError, resourceLimit } from '../../errors.js';
import type { Node } from '../compiler.js';
import { type Datum, newObject, validateTime } from '../datum.js';
import type { Evaluator } from '../evaluator.js';
import { JsPool, type JsReply } from '../js-pool.js';
import { T } from '../names.js';
import type { TermFamily } from '../registry.js';
import { type Env, Func } from '../values.js';

/** RethinkDB's default time limit of one r.js evaluation or call. */
export const DEFAULT_JS_TIMEOUT_MS = 5000;

let fallbackPool: JsPool | null = null;

/** The evaluator's pool: the server's (deps.js), else one with the default limits, shared by this process. */
function poolOf(ev: Evaluator): JsPool {
  if (ev.deps.js) return ev.deps.js;
  fallbackPool ??= new JsPool({
    workers: defaultLimits.jsWorkers,
    memoryMb: defaultLimits.jsWorkerMemoryMb,
    queue: defaultLimits.jsQueue,
  });
  return fallbackPool;
}

/** One id per query (Evaluator): the worker caches functions per query and source. */
const sessions = new WeakMap<Evaluator, number>();
let nextSession = 1;
function sessionOf(ev: Evaluator): number {
  let s = sessions.get(ev);
  if (s === undefined) {
    s = nextSession++;
    sessions.set(ev, s);
  }
  return s;
}

/** A function r.js returned: any number of arguments (RethinkDB's js_func_t has no arity). */
export class JsFunc extends Func {
  constructor(
    readonly source: string,
    readonly timeoutMs: number,
  ) {
    super([], { kind: 'datum', value: null, depth: 0 }, null);
  }

  async invoke(ev: Evaluator, args: Datum[]): Promise<Datum> {
    const reply = await poolOf(ev).run(
      { op: 'call', session: sessionOf(ev), source: this.source, args, arrayLimit: ev.deps.arrayLimit },
      this.timeoutMs,
    );
    if (reply.kind === 'function') throw queryLogic('Returning functions from within `r.js` is unsupported.');
    return datumOf(ev, reply, this.source, this.timeoutMs);
  }
}

/** `12.345` seconds with three decimals, from whole milliseconds (RethinkDB's "%d.%03d"). */
function seconds(ms: number): string {
  return `${Math.floor(ms / 1000)}.${String(ms % 1000).padStart(3, '0')}`;
}

function failure(
  ev: Evaluator,
  reply: Exclude<JsReply, { kind: 'datum' } | { kind: 'function' }>,
  source: string,
  timeoutMs: number,
): ReqlRuntimeError {
  switch (reply.kind) {
    case 'error':
      return queryLogic(reply.message);
    case 'timeout':
      return queryLogic(`JavaScript query \`${source}\` timed out after ${seconds(timeoutMs)} seconds.`);
    case 'busy':
      return resourceLimit(
        `Too many r.js evaluations are waiting for a worker (the limit is ${poolOf(ev).limits.queue}, jsQueue).`,
      );
    case 'crash':
      return reply.outOfMemory
        ? resourceLimit(
            `Javascript query \`${source}\` ran out of memory (the limit is ${poolOf(ev).limits.memoryMb} MiB per r.js worker, jsWorkerMemoryMb).`,
          )
        : internalError(`Javascript query \`${source}\` caused a crash in a worker process.`);
  }
}

/** A datum from the worker, rebuilt as the evaluator's datums (objects without a prototype). */
function rebuild(v: unknown): Datum {
  if (v === null || typeof v !== 'object') return v as Datum;
  if (Array.isArray(v)) return v.map(rebuild);
  const out = newObject();
  for (const k of Object.keys(v)) out[k] = rebuild((v as Record<string, unknown>)[k]);
  if (out.$reql_type$ === 'TIME') return validateTime(out);
  return out;
}

function datumOf(ev: Evaluator, reply: JsReply, source: string, timeoutMs: number): Datum {
  if (reply.kind === 'datum') return rebuild(reply.value);
  if (reply.kind === 'function') throw internalError('r.js returned a function where a value was expected.');
  throw failure(ev, reply, source, timeoutMs);
}

async function timeoutOf(ev: Evaluator, node: Node, env: Env | null): Promise<number> {
  const s = await ev.number(node, env);
  // RethinkDB converts seconds to whole milliseconds (uint64: truncated, never negative).
  return Number.isFinite(s) && s > 0 ? Math.floor(s * 1000) : 0;
}

export const javascriptTerms: TermFamily = {
  [T.JAVASCRIPT]: {
    min: 1,
    max: 1,
    optargs: ['timeout'],
    eval: async (ev, node, env) => {
      const timeoutNode = node.optargs.timeout;
      const timeoutMs = timeoutNode === undefined ? DEFAULT_JS_TIMEOUT_MS : await timeoutOf(ev, timeoutNode, env);
      const source = await ev.string(node.args[0] as Node, env);
      const reply = await poolOf(ev).run(
        { op: 'eval', session: sessionOf(ev), source, arrayLimit: ev.deps.arrayLimit },
        timeoutMs,
      );
      if (reply.kind === 'function') return new JsFunc(source, timeoutMs);
      return datumOf(ev, reply, source, timeoutMs);
    },
  },
};
