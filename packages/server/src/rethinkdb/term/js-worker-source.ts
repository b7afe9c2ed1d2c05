/**
 * The program of an r.js worker thread (js-pool.ts starts it with `eval: true`). It is kept as
 * text, not as a module, so that the same bytes run from `src/` (tsx, vitest) and from `dist/`.
 *
 * Each evaluation runs in a fresh `vm` context: ECMAScript's built-ins only (no `require`,
 * `process`, `Buffer`, timers, `import()`, WebAssembly or string-to-code beyond `eval`/`Function`
 * inside the context). A function that `r.js` returns keeps its context and is cached per
 * (query, source), as RethinkDB's js_runner caches per query. A context costs hundreds of KiB and
 * the thread is not told when a query ends, so the cache keeps the functions of the last
 * MAX_SESSIONS queries only, at most CACHE_SIZE functions, and forgets all but the current
 * query's when the heap passes half its limit; a function forgotten is evaluated again. Values cross as ReQL datums, converted as RethinkDB's js_job.cc does: arguments are
 * built inside the context's realm (times become Dates; binary, minval and maxval are refused),
 * results are read with brand checks from this realm, which code in the context cannot change.
 * Runaway code is not stopped here: the pool terminates the whole thread (js-pool.ts).
 *
 * Messages in: {id, op: 'eval'|'call', session, source, args?, arrayLimit}. Out: {id, kind:
 * 'datum', value} | {id, kind: 'function'} | {id, kind: 'error', message}.
 */
export const JS_WORKER_SOURCE = String.raw`
'use strict';
const { parentPort } = require('node:worker_threads');
const vm = require('node:vm');
const { types } = require('node:util');

const { getHeapStatistics } = require('node:v8');
const { resourceLimits } = require('node:worker_threads');

const CACHE_SIZE = 100;
const MAX_SESSIONS = 4;
const MAX_DEPTH = 128;
const HEAP_HIGH = (resourceLimits.maxOldGenerationSizeMb || 64) * 1024 * 1024 * 0.5;
/** key (session NUL source) → { fn, env, session }, oldest first. */
const cache = new Map();
/** Sessions with cached functions, oldest first. */
const sessions = [];
// A promise the code rejects and leaves (import(), a failed async function) is the code's own
// business: it must not end the thread.
process.on('unhandledRejection', () => {});

class ConversionError extends Error {}

function newContext() {
  const context = vm.createContext(Object.create(null), {
    name: 'r.js',
    codeGeneration: { strings: true, wasm: false },
    microtaskMode: 'afterEvaluate',
  });
  // Captured before user code runs: builders of values in the context's own realm.
  const make = vm.runInContext(
    '(function () { const D = Date; return { array: () => [], object: () => ({}), date: (ms) => new D(ms) }; })()',
    context,
  );
  return { context, make };
}

function evaluate(env, source) {
  const script = new vm.Script(source, { filename: 'rethinkdb_query' });
  return script.runInContext(env.context, { breakOnSigint: false });
}

function exceptionText(e) {
  try {
    return String(e);
  } catch {
    return 'encountered an unknown exception';
  }
}

function toJs(make, v) {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) {
    const out = make.array();
    for (let i = 0; i < v.length; i++)
      Object.defineProperty(out, i, { value: toJs(make, v[i]), writable: true, enumerable: true, configurable: true });
    return out;
  }
  const rt = Object.hasOwn(v, '$reql_type$') ? v.$reql_type$ : undefined;
  if (rt === 'TIME') return make.date(v.epoch_time * 1000);
  if (rt === 'BINARY') throw new ConversionError('${'`'}r.binary${'`'} data cannot be used in ${'`'}r.js${'`'}.');
  if (rt === 'MINVAL') throw new ConversionError('${'`'}r.minval${'`'} cannot be passed to ${'`'}r.js${'`'}.');
  if (rt === 'MAXVAL') throw new ConversionError('${'`'}r.maxval${'`'} cannot be passed to ${'`'}r.js${'`'}.');
  const out = make.object();
  for (const k of Object.keys(v))
    Object.defineProperty(out, k, { value: toJs(make, v[k]), writable: true, enumerable: true, configurable: true });
  return out;
}

function toDatum(v, depth, arrayLimit) {
  if (depth > MAX_DEPTH) throw new ConversionError('Recursion limit exceeded in js_to_json (circular reference?).');
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return v;
    case 'number':
      if (!Number.isFinite(v)) throw new ConversionError('Number return value is not finite.');
      return v;
    case 'undefined':
      throw new ConversionError('Cannot convert javascript ${'`'}undefined${'`'} to ql::datum_t.');
    case 'function':
      throw new ConversionError('Cannot convert function to ql::datum_t.');
    case 'object':
      break;
    default:
      throw new ConversionError('Unhandled value type when converting to ql::datum_t.');
  }
  if (v === null) return null;
  if (Array.isArray(v)) {
    const length = v.length;
    if (length > arrayLimit)
      throw new ConversionError('Array over size limit ${'`'}' + arrayLimit + '${'`'}.');
    const out = [];
    for (let i = 0; i < length; i++) out.push(toDatum(v[i], depth + 1, arrayLimit));
    return out;
  }
  if (types.isRegExp(v)) throw new ConversionError('Cannot convert RegExp to ql::datum_t.');
  if (types.isDate(v)) {
    const ms = Date.prototype.valueOf.call(v);
    // RethinkDB's own text for an invalid Date (its time of NaN seconds).
    if (!Number.isFinite(ms)) throw new ConversionError('Non-finite number: nan');
    return { $reql_type$: 'TIME', epoch_time: ms / 1000, timezone: '+00:00' };
  }
  const out = {};
  for (const k of Object.keys(v)) Object.defineProperty(out, k, { value: toDatum(v[k], depth + 1, arrayLimit), writable: true, enumerable: true, configurable: true });
  return out;
}

function cached(key) {
  const hit = cache.get(key);
  if (hit !== undefined) {
    cache.delete(key);
    cache.set(key, hit);
  }
  return hit;
}

function forgetSession(session) {
  for (const [key, entry] of cache) if (entry.session === session) cache.delete(key);
  const i = sessions.indexOf(session);
  if (i !== -1) sessions.splice(i, 1);
}

function remember(key, entry) {
  cache.set(key, entry);
  if (!sessions.includes(entry.session)) {
    sessions.push(entry.session);
    while (sessions.length > MAX_SESSIONS) forgetSession(sessions[0]);
  }
  if (cache.size > CACHE_SIZE) cache.delete(cache.keys().next().value);
}

/** Past half the heap limit, keep only the current query's functions. */
function trim(session) {
  if (getHeapStatistics().used_heap_size < HEAP_HIGH) return;
  for (const s of sessions.slice()) if (s !== session) forgetSession(s);
}

function run(msg) {
  const key = msg.session + '\0' + msg.source;
  let entry = cached(key);
  if (entry === undefined) {
    const env = newContext();
    let value;
    try {
      value = evaluate(env, msg.source);
    } catch (e) {
      return { kind: 'error', message: exceptionText(e) };
    }
    if (typeof value === 'function') {
      entry = { fn: value, env, session: msg.session };
      remember(key, entry);
    } else if (msg.op === 'eval') {
      return { kind: 'datum', value: toDatum(value, 0, msg.arrayLimit) };
    } else {
      return {
        kind: 'error',
        message: 'Javascript query ${'`'}' + msg.source + '${'`'} returned a value when it should have returned a function.',
      };
    }
  }
  if (msg.op === 'eval') return { kind: 'function' };
  const args = msg.args.map((a) => toJs(entry.env.make, a));
  let result;
  try {
    result = Reflect.apply(entry.fn, vm.runInContext('globalThis', entry.env.context), args);
  } catch (e) {
    return { kind: 'error', message: exceptionText(e) };
  }
  if (typeof result === 'function') return { kind: 'error', message: 'Returning functions from within ${'`'}r.js${'`'} is unsupported.' };
  return { kind: 'datum', value: toDatum(result, 0, msg.arrayLimit) };
}

parentPort.on('message', (msg) => {
  let reply;
  try {
    reply = run(msg);
  } catch (e) {
    reply = { kind: 'error', message: e instanceof ConversionError ? e.message : exceptionText(e) };
  }
  reply.id = msg.id;
  trim(msg.session);
  try {
    parentPort.postMessage(reply);
  } catch (e) {
    parentPort.postMessage({ id: msg.id, kind: 'error', message: exceptionText(e) });
  }
});
`;
