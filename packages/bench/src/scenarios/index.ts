// `wharf bench <scenario|all> [--quick]`: runs the scenarios, prints one table, writes
// results.json and report.html into the results folder (default ./results/bench-<timestamp>/).
// apps/cli/src/commands/bench calls runBenchSuite(); see docs/BENCHMARKS.md. A scenario whose
// reference system is not installed (an optional peer dependency) is skipped with one line
// saying what to install.

import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { findRepoRoot, hasCargo } from '../lib/fsync-limit.js';
import { machineInfo, timestamp } from '../lib/results.js';
import { round } from '../lib/stats.js';
import { straceSupport } from '../lib/strace.js';
import { fmtRatio, formatTable } from '../lib/table.js';
import { SCENARIOS, type ScenarioName } from '../names.js';
import { renderReportHtml } from '../report-html.js';
import { bulk } from './bulk.js';
import { isInstalled, makeContext, type Row, type ScenarioResult } from './common.js';
import { groupCommit } from './group-commit.js';
import { importScenario } from './import.js';
import { jobScenario } from './job.js';
import { kv } from './kv.js';
import { limit } from './limit.js';
import { reqlScenario } from './reql.js';
import { seed000 } from './seed000.js';
import { SUSTAINED_MEMORY_BUDGET_MB, sustained } from './sustained.js';

export { SCENARIOS, type ScenarioName };

/**
 * What each scenario needs beyond this package: modules (optional peer dependencies), a clone
 * with cargo (the Rust core's examples), the `wharf` command (passed by the CLI).
 */
const NEEDS: Record<ScenarioName, { modules?: string[]; cargo?: boolean; cli?: boolean }> = {
  limit: {},
  'group-commit': { modules: ['@wharf/engine'] },
  seed000: { modules: ['@wharf/engine', '@wharf/server', 'better-sqlite3'] },
  bulk: { modules: ['@wharf/engine', '@wharf/server', 'better-sqlite3'] },
  import: { modules: ['@wharf/engine'], cli: true },
  job: { cli: true },
  sustained: { modules: ['@wharf/engine', '@wharf/server'] },
  kv: { modules: ['@wharf/engine'], cargo: true },
  reql: { modules: ['@wharf/server'] },
};

/** What a scenario needs and does not have here, in a few words, or undefined when it can run. */
export function missingFor(
  name: ScenarioName,
  o: { repo?: string; cliBin?: string; installed?: (m: string) => boolean; cargo?: () => boolean } = {},
): string | undefined {
  const need = NEEDS[name];
  const installed = o.installed ?? isInstalled;
  const modules = (need.modules ?? []).filter((m) => !installed(m));
  if (modules.length) return `needs ${modules.join(', ')} (npm install ${modules.join(' ')})`;
  if (need.cargo && !(o.repo && (o.cargo ?? hasCargo)()))
    return "needs a clone of the Wharf repository and cargo (it runs the Rust core's examples)";
  if (need.cli && !o.cliBin) return `runs \`wharf import\`: start it with \`npx wharf bench ${name}\``;
  return undefined;
}

export interface BenchSuiteOptions {
  /** a scenario name, 'all', or several separated by commas */
  scenario: string;
  quick: boolean;
  /** results folder; default <cwd>/results/bench-<timestamp> */
  out?: string;
  /** scratch data directory (on the disk to measure); default <out>/data, removed at the end */
  dataDir?: string;
  /** interleaved rounds; default 3 (quick) or 5 */
  rounds?: number;
  /** sustained: minutes; default 10 (quick 1) */
  minutes?: number;
  /** sustained: the engine's memory budget in MiB (`--memory-budget-mb`); default env WHARF_BENCH_MEMORY_BUDGET_MB, else 64 */
  memoryBudgetMb?: number;
  /** bulk, import, job and reql: documents (default 1M; quick 100k, import and job 200k); bulk: ~900 KB blocks (default 10k, quick 100) */
  docs?: number;
  blocks?: number;
  /** kv: puts through the Rust core (default 100M, quick 10M) and the JS API (10M, quick 1M) */
  kvPuts?: number;
  kvJsPuts?: number;
  /** the `wharf` command's entry file, for the scenarios that run `wharf import` (import, job) */
  cliBin?: string;
  /** 'node': the Node fdatasync loop as the reference even where the Rust example can be built */
  fsyncLoop?: 'rust' | 'node';
}

export interface BenchSuiteOutput {
  version: 1;
  command: string;
  started: string;
  finished: string;
  seconds: number;
  quick: boolean;
  config: Record<string, unknown>;
  machine: ReturnType<typeof machineInfo> & { loadavgEnd: number[]; strace: boolean };
  notes: string[];
  rows: Row[];
  scenarios: ScenarioResult[];
}

export function parseScenarios(spec: string): ScenarioName[] {
  if (spec === 'all') return [...SCENARIOS];
  const names = spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const n of names) {
    if (!(SCENARIOS as readonly string[]).includes(n))
      throw new Error(`unknown scenario ${JSON.stringify(n)}: expected one of ${SCENARIOS.join(', ')}, or all`);
  }
  return names as ScenarioName[];
}

function ratioCell(r: Row): string {
  if (r.ratioText) return r.ratioText;
  return r.ratio === undefined ? '' : fmtRatio(r.ratio);
}

export function summaryTable(rows: Row[]): string {
  return formatTable(
    ['scenario', 'measure', 'value', 'ratio (median of rounds)', 'to', 'goal', 'result'],
    rows.map((r) => [
      r.scenario,
      r.measure,
      r.value,
      ratioCell(r),
      r.reference ?? '',
      r.goal ?? '',
      r.met === undefined || r.met === null ? '' : r.met ? 'met' : 'NOT MET',
    ]),
  );
}

/** `--memory-budget-mb`, else env WHARF_BENCH_MEMORY_BUDGET_MB, else undefined (the scenario's default). */
export function benchMemoryBudgetMb(option?: number): number | undefined {
  const env = process.env.WHARF_BENCH_MEMORY_BUDGET_MB;
  const v = option ?? (env !== undefined && env.trim() !== '' ? Number(env) : undefined);
  if (v === undefined) return undefined;
  if (!Number.isFinite(v) || v < 4)
    throw new Error(
      `--memory-budget-mb / WHARF_BENCH_MEMORY_BUDGET_MB must be a number of MiB, at least 4; got ${String(v)}`,
    );
  return v;
}

/** Runs the suite; returns the process exit status (0, or 1 when a scenario failed). */
export async function runBenchSuite(
  o: BenchSuiteOptions,
  io: { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream },
): Promise<number> {
  const names = parseScenarios(o.scenario);
  const started = new Date();
  const t0 = performance.now();
  const out = resolve(o.out ?? join(process.cwd(), 'results', `bench-${timestamp(started)}`));
  // Scratch data inside the results folder (same disk as the cwd; removed at the end): not in
  // .wharf-tmp/, which test runs clean up under a benchmark's feet.
  const dataDir = resolve(o.dataDir ?? join(out, 'data'));
  mkdirSync(out, { recursive: true });
  mkdirSync(dataDir, { recursive: true });
  const ownData = o.dataDir === undefined;
  const cleanup = () => {
    if (ownData && existsSync(dataDir)) rmSync(dataDir, { recursive: true, force: true });
  };
  process.on('exit', cleanup);
  // Ctrl-C: exit through the 'exit' handlers (they stop PostgreSQL and remove the scratch data).
  const onSignal = () => process.exit(130);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const log = (l: string) => io.stderr.write(`${l}\n`);
  const rounds = Math.max(3, o.rounds ?? (o.quick ? 3 : 5));
  const minutes = o.minutes ?? (o.quick ? 1 : 10);
  const memoryBudgetMb = benchMemoryBudgetMb(o.memoryBudgetMb);
  const repo = findRepoRoot();
  const ctx = makeContext({
    repo,
    cliBin: o.cliBin,
    dir: dataDir,
    quick: o.quick,
    rounds,
    minutes,
    memoryBudgetMb,
    log,
    fsyncLoop: o.fsyncLoop,
  });
  const machine = machineInfo(dataDir);
  log(`wharf bench ${names.join(', ')}${o.quick ? ' --quick' : ''}: data in ${dataDir}, results in ${out}`);
  log(
    `machine: ${machine.cpus} × ${machine.cpuModel}, ${machine.memoryGiB} GiB, ${machine.filesystem ?? '?'}, load ${machine.loadavg.join(' ')}`,
  );
  log(`fdatasync reference: ${ctx.limit.describe}`);

  const results: ScenarioResult[] = [];
  let failed = false;
  const save = (finished: boolean) => {
    const data: BenchSuiteOutput = {
      version: 1,
      command: `wharf bench ${o.scenario}${o.quick ? ' --quick' : ''}`,
      started: started.toISOString(),
      finished: new Date().toISOString(),
      seconds: round((performance.now() - t0) / 1000, 1),
      quick: o.quick,
      config: {
        scenarios: names,
        fsyncReference: ctx.limit.kind,
        rounds,
        minutes,
        memoryBudgetMb: memoryBudgetMb ?? SUSTAINED_MEMORY_BUDGET_MB,
        docs: o.docs,
        blocks: o.blocks,
        kvPuts: o.kvPuts,
        kvJsPuts: o.kvJsPuts,
        dataDir,
        complete: finished,
      },
      machine: { ...machine, loadavgEnd: os.loadavg().map((x) => round(x, 2)), strace: straceSupport().ok },
      notes: ctx.notes,
      rows: results.flatMap((r) => r.rows),
      scenarios: results,
    };
    writeFileSync(join(out, 'results.json'), `${JSON.stringify(data, null, 2)}\n`);
    writeFileSync(join(out, 'report.html'), renderReportHtml(data));
    return data;
  };
  try {
    for (const name of names) {
      const s0 = performance.now();
      log(`\n== ${name} ==`);
      let res: ScenarioResult;
      const missing = missingFor(name, { repo, cliBin: o.cliBin });
      if (missing) {
        const line = `${name}: skipped, ${missing}`;
        log(line);
        ctx.notes.push(line);
        results.push({
          name,
          rows: [{ scenario: name, measure: 'skipped', value: missing }],
          charts: [],
          samples: {},
          skipped: missing,
        });
        save(false);
        continue;
      }
      try {
        switch (name) {
          case 'limit':
            res = await limit(ctx);
            break;
          case 'seed000':
            res = await seed000(ctx);
            break;
          case 'group-commit':
            res = await groupCommit(ctx);
            break;
          case 'bulk':
            res = await bulk(ctx, { docs: o.docs, blocks: o.blocks });
            break;
          case 'import':
            res = await importScenario(ctx, { docs: o.docs });
            break;
          case 'job':
            res = await jobScenario(ctx, { docs: o.docs });
            break;
          case 'sustained':
            res = await sustained(ctx);
            break;
          case 'kv':
            res = await kv(ctx, { rustPuts: o.kvPuts, jsPuts: o.kvJsPuts });
            break;
          case 'reql':
            res = await reqlScenario(ctx, { docs: o.docs });
            break;
        }
      } catch (e) {
        failed = true;
        const msg = (e as Error).stack ?? String(e);
        log(`${name} FAILED: ${msg}`);
        res = {
          name,
          rows: [
            {
              scenario: name,
              measure: 'FAILED',
              value: String((e as Error).message ?? e)
                .split('\n')[0]!
                .slice(0, 200),
            },
          ],
          charts: [],
          samples: {},
          error: msg,
        };
      }
      if (res.error) failed = true;
      res.seconds = round((performance.now() - s0) / 1000, 1);
      log(`(${name}: ${res.seconds} s)`);
      results.push(res);
      save(false);
    }
  } finally {
    await ctx.close();
  }
  const data = save(true);
  io.stdout.write(`\n${summaryTable(data.rows)}\n\n`);
  for (const n of data.notes) io.stdout.write(`note: ${n}\n`);
  io.stdout.write(
    `took ${data.seconds} s; results: ${join(out, 'results.json')}, report: ${join(out, 'report.html')}\n`,
  );
  cleanup();
  return failed ? 1 : 0;
}
