// What every `wharf bench` scenario shares: the run's context, the rows of the summary table, and
// the runners of the worker processes.

import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { type ChildResult, moduleArgv, runJsonChild } from '../lib/child.js';
import { type FsyncLimitRunner, fsyncLimitRunner, type OpStats } from '../lib/fsync-limit.js';
import { findPostgres, PG_MISSING, type PgCluster, startPostgres } from './postgres.js';

export interface BenchContext {
  /** the Wharf repository this package runs from, or undefined in an npm install */
  repo?: string;
  /** the `wharf` command's entry file (the CLI passes it; the bulk scenario runs `wharf import`) */
  cliBin?: string;
  /** scratch directory for data (on the disk being measured) */
  dir: string;
  quick: boolean;
  /** rounds of interleaved pairs (A B A B …) */
  rounds: number;
  /** sustained: minutes */
  minutes: number;
  /** sustained: the engine's memory budget (MiB) for both targets; undefined: the scenario's default (64) */
  memoryBudgetMb?: number;
  log: (line: string) => void;
  /** the raw fdatasync loop: the Rust example in a clone with cargo, else the Node loop */
  limit: FsyncLimitRunner;
  /** a PostgreSQL cluster started on first use (undefined when not installed; the note says so) */
  postgres(): Promise<PgCluster | undefined>;
  notes: string[];
  /** stops what the context started (the PostgreSQL cluster) */
  close(): Promise<void>;
}

/** One line of the summary table. */
export interface Row {
  scenario: string;
  measure: string;
  value: string;
  reference?: string;
  /** median of the per-round ratios, measured ÷ reference */
  ratio?: number;
  ratioText?: string;
  goal?: string;
  met?: boolean | null;
  /** the per-round ratios behind `ratio` */
  ratios?: number[];
}

/** A chart for the HTML report: x values and named series (uPlot's data layout). */
export interface ChartSpec {
  id: string;
  title: string;
  xLabel: string;
  yLabel: string;
  x: number[];
  series: { label: string; values: (number | null)[]; axis?: 'y2' }[];
  y2Label?: string;
  logX?: boolean;
  logY?: boolean;
  /** x is seconds since the start (a time axis in seconds, not a date) */
  bars?: boolean;
}

export interface ScenarioResult {
  name: string;
  rows: Row[];
  charts: ChartSpec[];
  /** every sample, for the JSON file */
  samples: Record<string, unknown>;
  seconds?: number;
  error?: string;
  /** why the scenario did not run (a reference not installed) */
  skipped?: string;
}

/** What makeContext needs: the context's settings, and which fdatasync loop ('node' even where the Rust one can be built). */
export type ContextOptions = Pick<
  BenchContext,
  'repo' | 'cliBin' | 'dir' | 'quick' | 'rounds' | 'minutes' | 'memoryBudgetMb' | 'log'
> & { fsyncLoop?: 'rust' | 'node' };

export function makeContext(o: ContextOptions): BenchContext {
  const { repo, cliBin, dir, quick, rounds, minutes, memoryBudgetMb, log } = o;
  let pg: Promise<PgCluster | undefined> | undefined;
  const notes: string[] = [];
  return {
    repo,
    cliBin,
    dir,
    quick,
    rounds,
    minutes,
    memoryBudgetMb,
    log,
    notes,
    limit: fsyncLimitRunner({ repo, prefer: o.fsyncLoop, log }),
    async close() {
      const c = pg ? await pg : undefined;
      c?.stop();
    },
    postgres() {
      if (!pg) {
        const inst = findPostgres();
        if (!isInstalled('pg')) {
          const msg = 'PostgreSQL: skipped, the pg module is not installed (npm install pg)';
          log(msg);
          notes.push(msg);
          pg = Promise.resolve(undefined);
        } else if (!inst) {
          log(PG_MISSING);
          notes.push(PG_MISSING);
          pg = Promise.resolve(undefined);
        } else {
          log(`starting a throwaway PostgreSQL ${inst.version} cluster …`);
          pg = startPostgres(inst, dir).then(
            (c) => {
              notes.push(
                `PostgreSQL ${inst.version}: throwaway cluster (initdb, 127.0.0.1:${c.port}, fsync/synchronous_commit on, max_wal_size=4GB, shared_buffers=256MB)`,
              );
              return c;
            },
            (e: Error) => {
              const msg = `PostgreSQL: could not start a cluster, skipped (${e.message.split('\n')[0]})`;
              log(msg);
              notes.push(msg);
              return undefined;
            },
          );
        }
      }
      return pg;
    },
  };
}

/** Whether a module resolves from this package (an optional peer dependency, say). */
export function isInstalled(name: string): boolean {
  try {
    createRequire(import.meta.url).resolve(name);
    return true;
  } catch {
    return false;
  }
}

function child<T>(module: string, args: string[]): Promise<ChildResult<T>> {
  const [cmd, argv] = moduleArgv(module, args);
  return runJsonChild<T>(cmd, argv, { cwd: process.cwd(), timeoutMs: 60 * 60_000 });
}

export const worker = <T>(_ctx: BenchContext, args: string[]) =>
  child<T>('scenarios/workers', args).then((r) => r.json);
export const engineWorker = <T>(_ctx: BenchContext, args: string[]) =>
  child<T>('lib/engine-worker', args).then((r) => r.json);
export const duckdbWorker = <T>(_ctx: BenchContext, args: string[]) =>
  child<T>('lib/duckdb-worker', args).then((r) => r.json);
export const sqliteWorker = <T>(_ctx: BenchContext, args: string[]) =>
  child<T>('lib/sqlite-worker', args).then((r) => r.json);

/** One run of the raw loop (ctx.limit): N × (4 KiB + fdatasync), overwrite or append, in ctx.dir/limit. */
export async function limitRun(ctx: BenchContext, n: number, mode: 'overwrite' | 'append'): Promise<OpStats> {
  const dir = join(ctx.dir, 'limit');
  mkdirSync(dir, { recursive: true });
  const r = await ctx.limit.run(dir, n, mode);
  return r.json.results[mode]!;
}

export const fmtUs = (us: number) => (us >= 10_000 ? `${(us / 1000).toFixed(1)} ms` : `${us.toFixed(0)} µs`);
