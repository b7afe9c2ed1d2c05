// What every `wharf bench` scenario shares: the run's context, the rows of the summary table, and
// the runners of the worker processes.

import { join } from 'node:path';
import { runJsonChild, tsxArgv, type ChildResult } from '../lib/child.js';
import { buildFsyncLimit, runFsyncLimit, type OpStats } from '../lib/fsync-limit.js';
import { findPostgres, startPostgres, PG_MISSING, type PgCluster } from './postgres.js';

export interface BenchContext {
  root: string;
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
  /** built once, on first use */
  fsyncBin(): string;
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
}

export function makeContext(root: string, dir: string, quick: boolean, rounds: number, minutes: number, log: (l: string) => void, memoryBudgetMb?: number): BenchContext {
  let bin: string | undefined;
  let pg: Promise<PgCluster | undefined> | undefined;
  const notes: string[] = [];
  return {
    root, dir, quick, rounds, minutes, memoryBudgetMb, log, notes,
    async close() {
      const c = pg ? await pg : undefined;
      c?.stop();
    },
    fsyncBin() {
      if (!bin) {
        log('building the fdatasync reference (cargo build --release --example fsync_limit) …');
        bin = buildFsyncLimit(root);
      }
      return bin;
    },
    postgres() {
      if (!pg) {
        const inst = findPostgres();
        if (!inst) {
          log(PG_MISSING);
          notes.push(PG_MISSING);
          pg = Promise.resolve(undefined);
        } else {
          log(`starting a throwaway PostgreSQL ${inst.version} cluster …`);
          pg = startPostgres(inst, dir).then(
            (c) => {
              notes.push(`PostgreSQL ${inst.version}: throwaway cluster (initdb, 127.0.0.1:${c.port}, fsync/synchronous_commit on, max_wal_size=4GB, shared_buffers=256MB)`);
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

const WORKERS = 'scripts/bench/scenarios/workers.ts';
const ENGINE_WORKER = 'scripts/bench/lib/engine-worker.ts';
const SQLITE_WORKER = 'scripts/bench/lib/sqlite-worker.ts';

function tsxChild<T>(ctx: BenchContext, file: string, args: string[]): Promise<ChildResult<T>> {
  const [cmd, argv] = tsxArgv(join(ctx.root, file), args);
  return runJsonChild<T>(cmd, argv, { cwd: ctx.root, timeoutMs: 60 * 60_000 });
}

export const worker = <T>(ctx: BenchContext, args: string[]) => tsxChild<T>(ctx, WORKERS, args).then((r) => r.json);
export const engineWorker = <T>(ctx: BenchContext, args: string[]) => tsxChild<T>(ctx, ENGINE_WORKER, args).then((r) => r.json);
export const sqliteWorker = <T>(ctx: BenchContext, args: string[]) => tsxChild<T>(ctx, SQLITE_WORKER, args).then((r) => r.json);

/** One run of the Rust reference: N × (4 KiB + fdatasync), overwrite or append, in ctx.dir/limit. */
export async function limitRun(ctx: BenchContext, n: number, mode: 'overwrite' | 'append'): Promise<OpStats> {
  const dir = join(ctx.dir, 'limit');
  const { mkdirSync } = await import('node:fs');
  mkdirSync(dir, { recursive: true });
  const r = await runFsyncLimit(ctx.fsyncBin(), dir, n, mode, { cwd: ctx.root });
  return r.json.results[mode]!;
}

export const fmtUs = (us: number) => (us >= 10_000 ? `${(us / 1000).toFixed(1)} ms` : `${us.toFixed(0)} µs`);
