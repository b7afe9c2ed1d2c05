import type { Database, OpenOptions } from '@wharf/engine';
import type { LoggerOptions } from 'pino';
import { defaultLimits, type Limits } from './limits.js';

/** See `groupCommitWindowMs` in @wharf/engine: a network round trip is a few milliseconds. */
export const SERVER_GROUP_COMMIT_WINDOW_MS = 20;
/**
 * See `spinWaitUs` in @wharf/engine. Polling pays when the waiting thread acts next; here the
 * next to act is the client, whose process needs the CPU the poll would take (the official driver
 * spends a lot of CPU per query): in the server bench (packages/bench/src/goals/server.ts) a
 * driver's sequential hard inserts are slower with the poll than without.
 */
export const SERVER_SPIN_WAIT_US = 0;

/** The smallest memory budget the engine accepts (4 MiB). */
export const MIN_MEMORY_BUDGET_MB = 4;

export interface ServerOptions {
  /** Data directory of the engine. Required unless `database` is given. */
  data?: string;
  /** An already open database (tests, embedding). The server does not close it. */
  database?: Database;
  /** Options for Database.open (ignored with `database`). */
  engine?: OpenOptions;
  /**
   * The engine's memory budget in MiB (memtables + block cache; tables may be far larger).
   * CLI `--memory-budget-mb N`; default: env WHARF_MEMORY_BUDGET_MB, else the engine's default
   * (256 MiB). `engine.memoryBudget` (bytes), when given, wins. Ignored with `database`.
   */
  memoryBudgetMb?: number;
  /** Interface for every listener. Default 127.0.0.1. */
  host?: string;
  /** HTTP + WebSocket port. Default 8080; 0 picks a free port. */
  httpPort?: number;
  /** RethinkDB driver port. Default 28015; 0 picks a free port; `false` disables it. */
  driverPort?: number | false;
  /** Password of the `admin` user on the driver port. Default: env WHARF_PASSWORD, else empty
   *  (an empty password is only accepted from loopback addresses). */
  password?: string;
  /**
   * Host names (the Host header) the HTTP and ws listener answers besides loopback names
   * (`localhost`, `*.localhost`), IP literals and this machine's host name; `*` allows any.
   * Default: env WHARF_ALLOWED_HOSTS (comma-separated), else none. Guards against DNS rebinding.
   */
  allowedHosts?: string[];
  /** Name reported by SERVER_INFO and table status. Default "wharf". */
  serverName?: string;
  /** fastify/pino logger: false, true, or pino options. Default: info level to stdout. */
  logger?: boolean | LoggerOptions;
  /** Period of the /ws/stats feed. Default 1000 ms. */
  statsIntervalMs?: number;
  /**
   * Before the listeners open, run the driver port's per-query code (frame, parse, compile, the
   * single-document insert's recognition and result, an `r.expr`) a few thousand times without
   * touching data, so the first client meets V8-compiled code (`rethinkdb/warm-up.ts`). Costs
   * ~0.2–0.3 s of startup. Default true; ignored when the driver port is off.
   */
  driverWarmUp?: boolean;
  /**
   * ReQL reads of tables and indexes page through the engine, with `limit`, simple `filter`s
   * and `count` evaluated there (docs/ARCHITECTURE.md, *The ReQL evaluator*). Default true;
   * false reads whole ranges and evaluates the rest in JS (for comparisons and diagnosis).
   */
  reqlPushDown?: boolean;
  limits?: Partial<Limits>;
}

export interface ResolvedOptions {
  data: string | undefined;
  database: Database | undefined;
  engine: OpenOptions;
  host: string;
  httpPort: number;
  driverPort: number | false;
  password: string;
  allowedHosts: string[];
  serverName: string;
  logger: boolean | LoggerOptions;
  statsIntervalMs: number;
  driverWarmUp: boolean;
  reqlPushDown: boolean;
  limits: Limits;
}

function withMemoryBudget(engine: OpenOptions, budget: number | undefined): OpenOptions {
  return budget === undefined || engine.memoryBudget !== undefined ? engine : { ...engine, memoryBudget: budget };
}

function checkPort(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 65535) {
    throw new TypeError(`${name} must be an integer port 0..65535, got ${String(value)}`);
  }
  return value;
}

/** `memoryBudgetMb` (or env WHARF_MEMORY_BUDGET_MB) as bytes; undefined when neither is set. */
function memoryBudgetBytes(opts: ServerOptions): number | undefined {
  const env = process.env.WHARF_MEMORY_BUDGET_MB;
  const [mb, name] =
    opts.memoryBudgetMb !== undefined
      ? [opts.memoryBudgetMb, 'memoryBudgetMb (--memory-budget-mb)']
      : env !== undefined && env.trim() !== ''
        ? [Number(env), 'WHARF_MEMORY_BUDGET_MB']
        : [undefined, ''];
  if (mb === undefined) return undefined;
  if (typeof mb !== 'number' || !Number.isFinite(mb) || mb < MIN_MEMORY_BUDGET_MB) {
    throw new TypeError(`${name} must be a number of MiB, at least ${MIN_MEMORY_BUDGET_MB}; got ${String(mb)}`);
  }
  return Math.round(mb * 2 ** 20);
}

/** True for an address that only this machine can reach (127.0.0.0/8, ::1, localhost). */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h) || /^::ffff:127\./.test(h);
}

/** The one line a bind beyond loopback without a password is refused with. */
export function openBindRefusal(host: string): string {
  return (
    `refusing to listen on ${host} without a password: anyone who can reach it could read, write and drop tables. ` +
    'Set one (env WHARF_PASSWORD or --password), or listen on 127.0.0.1.'
  );
}

/** Validate options and fill in defaults. Throws TypeError naming the bad option. */
export function resolveOptions(opts: ServerOptions): ResolvedOptions {
  if (opts.database === undefined && (typeof opts.data !== 'string' || opts.data.length === 0)) {
    throw new TypeError('the data directory is required (option `data`, CLI --data DIR)');
  }
  const limits: Limits = { ...defaultLimits };
  for (const [k, v] of Object.entries(opts.limits ?? {})) {
    if (!(k in defaultLimits))
      throw new TypeError(`unknown limit \`${k}\` (known: ${Object.keys(defaultLimits).join(', ')})`);
    if (typeof v !== 'number' || !(v > 0)) throw new TypeError(`limit \`${k}\` must be a positive number`);
    limits[k as keyof Limits] = v;
  }
  const statsIntervalMs = opts.statsIntervalMs ?? 1000;
  const host = opts.host ?? '127.0.0.1';
  const password = opts.password ?? process.env.WHARF_PASSWORD ?? '';
  // Safe default: without a password only this machine may connect (driver port and HTTP alike).
  if (password === '' && !isLoopbackHost(host)) throw new TypeError(openBindRefusal(host));
  const envHosts = process.env.WHARF_ALLOWED_HOSTS;
  const allowedHosts = (opts.allowedHosts ?? (envHosts ? envHosts.split(',') : []))
    .map((h) => h.trim().toLowerCase())
    .filter((h) => h !== '');
  if (!(statsIntervalMs > 0)) throw new TypeError('statsIntervalMs must be positive');
  return {
    data: opts.data,
    database: opts.database,
    // Driver and HTTP clients come back a network round trip after their acknowledgement, so
    // the engine waits longer for a returning cohort of hard writers than in-process callers need.
    engine: withMemoryBudget(
      { groupCommitWindowMs: SERVER_GROUP_COMMIT_WINDOW_MS, spinWaitUs: SERVER_SPIN_WAIT_US, ...opts.engine },
      memoryBudgetBytes(opts),
    ),
    host,
    httpPort: checkPort('httpPort', opts.httpPort ?? 8080),
    driverPort: opts.driverPort === false ? false : checkPort('driverPort', opts.driverPort ?? 28015),
    password,
    allowedHosts,
    serverName: opts.serverName ?? 'wharf',
    logger: opts.logger ?? { level: 'info' },
    statsIntervalMs,
    driverWarmUp: opts.driverWarmUp ?? true,
    reqlPushDown: opts.reqlPushDown ?? true,
    limits,
  };
}
