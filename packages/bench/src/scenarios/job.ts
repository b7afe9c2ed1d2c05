// `job`: a distributed import (`wharf import FILE --job NAME`, issue 32) shared by 1, 2 and 4
// worker processes, into one fresh Wharf server and, when a RethinkDB server is found, into a
// fresh 3-node RethinkDB cluster: docs/s, and where the limit sits.
//
// One NDJSON file of the import scenario's documents (lib/docs.ts; 1M, quick 200k; the RethinkDB
// rows take its first 200k, quick 50k) is cut into tasks of --task-bytes = size ÷ 16, so that 4
// workers have 4 tasks each on average (jump hash decides who owns which). Per measurement: a
// fresh target, then N `wharf import --job` processes spawned at once (lib/cli-job.ts), timed from
// the first spawn to the last exit; each must report the whole job complete and the table's count
// must equal the input. Each round starts with one plain `wharf import` of the same file into a
// fresh target (no job, spawn → exit): the reference for what the job itself costs. Rounds
// interleave (plain, 1, 2, 4, plain, 1, 2, 4, …) and the figures are medians; 1 worker ÷ the plain
// import and N workers ÷ 1 worker are taken per round.
//
// Where the limit sits (lib/usage.ts): between the first spawn and the last exit, the CPU of the
// workers (exited children of this process: exact), of the server process(es) (/proc/PID/stat),
// of the whole machine (/proc/stat: how many of its CPUs were busy, other work included) and the
// time the disk had I/O in flight (/sys/dev/block/…/stat io_ticks). All workers run on this one
// machine, so with more workers than CPUs they compete with each other and with the server.

import { mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { openStore, readJob } from '@wharf/client';
import rethinkdb from 'rethinkdb';
import { cliImport } from '../lib/cli-import.js';
import { cliJob, type JobRun } from '../lib/cli-job.js';
import { docLines } from '../lib/docs.js';
import { interleave, type Step } from '../lib/interleave.js';
import { findRethinkdb, RETHINKDB_MISSING, type RethinkdbProc, startRethinkdbCluster } from '../lib/rethinkdb-proc.js';
import { startServerProc } from '../lib/server-proc.js';
import { median, pairRatios } from '../lib/stats.js';
import { fmtMs, fmtRate } from '../lib/table.js';
import { blockStatFile, type Usage, usageBetween, usageMark } from '../lib/usage.js';
import { type BenchContext, isInstalled, type Row, type ScenarioResult } from './common.js';

/** The worker counts measured, in the order each round runs them. */
export const JOB_WORKERS = [1, 2, 4] as const;
/** Tasks per worker at the largest worker count: the input is cut into JOB_WORKERS.at(-1) × this. */
export const TASKS_PER_WORKER = 4;
/** Nodes of the RethinkDB cluster; the table gets one shard per node (one replica). */
const RETHINKDB_NODES = 3;

const SERVER_MISSING = 'job: @wharf/server is not installed, the Wharf rows are skipped (npm install @wharf/server)';

/** One run into one fresh target: a job of N workers, or one plain `wharf import` (no job). */
export interface JobSample {
  kind: 'job' | 'import';
  workers: number;
  docs: number;
  docs_per_s: number;
  /** first spawn → last exit */
  wall_ms: number;
  /** where the wall time went (the coordination table's clock, Date.now() of this machine): */
  phases: {
    /** first spawn → the job's definition written by the first worker (process start-up, connecting) */
    startup_ms: number;
    /** definition → the last task done */
    tasks_ms: number;
    /** last task done → last exit (each worker sees the job complete at its next heartbeat) */
    tail_ms: number;
  } | null;
  /** task epochs' time summed ÷ tasks_ms: how many tasks ran at once on average */
  concurrency: number | null;
  /** median time of a task's final epoch (claim → done) */
  task_ms_median: number | null;
  /** per worker: spawn → exit, tasks finished, tasks handed over to a later worker */
  per_worker: { process_ms: number; tasks_done: number; handed_over: number }[];
  tasks: number;
  usage: Usage;
  /** the target's count of the table after the job */
  count: number;
}

/** The NDJSON input of `docs` documents, and its task size. */
function writeInput(dir: string, name: string, docs: number): { file: string; bytes: number; taskBytes: number } {
  mkdirSync(dir, { recursive: true });
  const lines: string[] = [];
  for (const { line } of docLines(docs)) lines.push(line);
  const file = join(dir, name);
  writeFileSync(file, `${lines.join('\n')}\n`);
  const bytes = statSync(file).size;
  const tasks = JOB_WORKERS.at(-1)! * TASKS_PER_WORKER;
  return { file, bytes, taskBytes: Math.ceil(bytes / tasks) };
}

/** The job's documents in the coordination table: when it was defined, and each task epoch's span. */
interface Timeline {
  definedAt: number;
  epochs: { startedAt: number; updatedAt: number; done: boolean }[];
}

async function jobTimeline(target: string, job: string): Promise<Timeline | null> {
  const store = await openStore(target);
  try {
    const view = await readJob(store, job);
    const epochs = (await store.list(`${job}/task/`)) as unknown as Timeline['epochs'];
    const definedAt = view.definition?.createdAt;
    return definedAt === undefined || epochs.length === 0 ? null : { definedAt, epochs };
  } finally {
    await store.close();
  }
}

function sample(docs: number, workers: number, run: JobRun, usage: Usage, t: Timeline | null, count: number) {
  if (count !== docs)
    throw new Error(`job of ${workers} workers: the table holds ${count} documents, expected ${docs}`);
  const done = t?.epochs.filter((e) => e.done) ?? [];
  const lastDone = done.length ? Math.max(...done.map((e) => e.updatedAt)) : null;
  const phases =
    t && lastDone !== null
      ? {
          startup_ms: t.definedAt - run.spawnedAt,
          tasks_ms: lastDone - t.definedAt,
          tail_ms: run.exitedAt - lastDone,
        }
      : null;
  const busy = t?.epochs.reduce((sum, e) => sum + (e.updatedAt - e.startedAt), 0);
  const s: JobSample = {
    kind: 'job',
    workers,
    docs,
    docs_per_s: docs / (run.wallMs / 1000),
    wall_ms: run.wallMs,
    phases,
    concurrency: phases && busy !== undefined && phases.tasks_ms > 0 ? busy / phases.tasks_ms : null,
    task_ms_median: done.length ? median(done.map((e) => e.updatedAt - e.startedAt)) : null,
    per_worker: run.workers.map((w) => ({
      process_ms: w.processMs,
      tasks_done: w.tasksDone,
      handed_over: w.handedOver,
    })),
    tasks: run.totals.tasks,
    usage,
    count,
  };
  return s;
}

const cpuS = (ms: number | null) => (ms === null ? '?' : `${(ms / 1000).toFixed(2)} s`);
const pct = (x: number | null) => (x === null ? '?' : `${Math.round(x * 100)} %`);

const phaseText = (p: JobSample['phases']) =>
  p ? `start-up ${fmtMs(p.startup_ms)}, tasks ${fmtMs(p.tasks_ms)}, exit ${fmtMs(p.tail_ms)}` : 'phases ?';

/** One progress line. */
function describe(s: JobSample): string {
  if (s.kind === 'import')
    return (
      `${fmtRate(s.docs_per_s)} (${fmtMs(s.wall_ms)} spawn → exit; CPU import ${cpuS(s.usage.exitedChildrenCpuMs)}, ` +
      `server ${cpuS(s.usage.procCpuMs)}; machine busy ${pct(s.usage.machineBusyShare)}, disk busy ${pct(s.usage.diskBusyShare)})`
    );
  const tasks = s.per_worker.map((w) => w.tasks_done).join('+');
  const handed = s.per_worker.reduce((n, w) => n + w.handed_over, 0);
  return (
    `${fmtRate(s.docs_per_s)} (${fmtMs(s.wall_ms)}: ${phaseText(s.phases)}; ` +
    `tasks ${tasks}${handed ? `, ${handed} handed over` : ''}, ${s.concurrency?.toFixed(2) ?? '?'} at once; ` +
    `CPU workers ${cpuS(s.usage.exitedChildrenCpuMs)}, server ${cpuS(s.usage.procCpuMs)}; ` +
    `machine busy ${pct(s.usage.machineBusyShare)}, disk busy ${pct(s.usage.diskBusyShare)})`
  );
}

/**
 * What bounded the runs of N workers (medians): the disk when it had I/O in flight most of the
 * time; else the CPU when the machine's CPUs were nearly all busy, saying whose CPU it was (the
 * workers, the server, or other work on the machine); else neither (the processes waited: on
 * start-up, on each other, on round trips).
 */
export function limitOf(
  xs: readonly JobSample[],
  cpus: number,
  serverName: string,
): { verdict: string; detail: string } {
  const m = (f: (s: JobSample) => number | null | undefined) => {
    const v = xs.map(f).filter((x): x is number => x !== null && x !== undefined);
    return v.length ? median(v) : null;
  };
  const wall = m((s) => s.usage.wallMs)!;
  const workers = m((s) => s.usage.exitedChildrenCpuMs);
  const server = m((s) => s.usage.procCpuMs);
  const busy = m((s) => s.usage.machineBusyShare);
  const disk = m((s) => s.usage.diskBusyShare);
  const steal = m((s) => s.usage.stealShare);
  const cores = (ms: number | null) => (ms === null ? '?' : (ms / wall).toFixed(2));
  const ours = workers !== null && server !== null ? (workers + server) / (wall * cpus) : null;
  // Tasks go to their jump-hash owner and move only when it leaves: the busiest worker's share
  // bounds the speed-up over one worker, whatever the CPUs.
  const busiest = m((s) => Math.max(...s.per_worker.map((w) => w.tasks_done)));
  const tasks = xs[0]?.tasks ?? 0;
  const balance =
    (xs[0]?.per_worker.length ?? 1) > 1 && busiest
      ? `; the busiest worker finished ${busiest} of ${tasks} tasks: at most ${(tasks / busiest).toFixed(2)}× one worker`
      : '';
  const docs = xs[0]?.docs ?? 0;
  const perM = (ms: number | null) => (ms === null || !docs ? '?' : `${((ms / docs) * 1000).toFixed(2)} s`);
  const detail =
    `workers ${cpuS(workers)} of CPU (${cores(workers)} CPUs on average), ` +
    `${serverName} ${cpuS(server)} (${cores(server)} CPUs), per 1M docs ${perM(workers)} + ${perM(server)}; ` +
    `the machine's ${cpus} CPUs ${pct(busy)} busy (${pct(ours)} these processes, steal ${pct(steal)}); ` +
    `disk busy ${pct(disk)} of the time${balance}`;
  let verdict: string;
  if (disk !== null && disk >= 0.8) verdict = 'disk';
  else if (busy !== null && busy >= 0.85) {
    if (ours !== null && ours < busy / 2)
      verdict = `CPU, shared: other work on the machine held ${pct(busy - ours)} of its CPUs`;
    else if (workers !== null && server !== null)
      verdict = `CPU, mostly ${workers >= server ? 'the workers' : `the ${serverName}`}`;
    else verdict = 'CPU';
  } else verdict = 'neither CPU nor disk saturated: the processes waited (start-up, each other, round trips)';
  return { verdict, detail };
}

export async function jobScenario(ctx: BenchContext, opts: { docs?: number }): Promise<ScenarioResult> {
  const docs = opts.docs ?? (ctx.quick ? 200_000 : 1_000_000);
  const cli = ctx.cliBin!;
  const scratch = join(ctx.dir, 'job');
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true });
  const diskStat = blockStatFile(scratch);
  const cpus = os.cpus().length;
  const rows: Row[] = [];
  const samples: Record<string, unknown> = { cpus, workers: JOB_WORKERS };
  const notes = (line: string) => {
    ctx.log(line);
    ctx.notes.push(line);
  };
  if (cpus < JOB_WORKERS.at(-1)!)
    notes(
      `job: every worker and the server run on this machine's ${cpus} CPUs: with more workers than CPUs they compete for them`,
    );

  const measure = { cli, scratch, diskStat, cpus };
  try {
    if (isInstalled('@wharf/server')) {
      const input = writeInput(join(scratch, 'input'), 'docs.ndjson', docs);
      const fresh = async (name: string): Promise<FreshTarget> => {
        const data = join(scratch, `server-${name}`);
        rmSync(data, { recursive: true, force: true });
        const server = await startServerProc(data);
        return {
          url: `wharf://127.0.0.1:${server.httpPort}`,
          pids: [server.proc.pid],
          count: async (table) => {
            const res = await fetch(`${server.url}/api/tables/${table}/count`);
            if (!res.ok) throw new Error(`counting table ${table}: HTTP ${res.status} ${await res.text()}`);
            return ((await res.json()) as { count: number }).count;
          },
          stop: async () => {
            await server.stop();
            rmSync(data, { recursive: true, force: true });
          },
        };
      };
      ctx.log(
        `job → Wharf server: ${ctx.rounds} rounds of [one plain import, ${JOB_WORKERS.map((n) => `${n} worker${n > 1 ? 's' : ''}`).join(', ')}], ` +
          `${docs.toLocaleString('en-US')} docs (${(input.bytes / 1e6).toFixed(0)} MB), --task-bytes ${input.taskBytes}`,
      );
      const r = await interleave(ctx.rounds, stepsFor('wharf', fresh, input, docs, measure), ctx.log);
      samples.wharf = { docs, bytes: input.bytes, task_bytes: input.taskBytes, runs: r };
      rows.push(...rowsFor(r, 'wharf', 'Wharf server (wharf://)', 'server', docs, cpus));
      rmSync(join(scratch, 'input'), { recursive: true, force: true });
    } else notes(SERVER_MISSING);

    rows.push(...(await intoRethinkdb(ctx, measure, docs, samples)));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return { name: 'job', rows, charts: [], samples };
}

/** A target started for one measurement, and how to read its table's count and stop it. */
interface FreshTarget {
  /** the --target of the imports */
  url: string;
  /** the target's processes, whose CPU is counted */
  pids: (number | undefined)[];
  count(table: string): Promise<number>;
  stop(): Promise<void>;
}

interface Measure {
  cli: string;
  scratch: string;
  diskStat: string | null;
  cpus: number;
}

/**
 * One round's steps into fresh targets: one plain `wharf import` of the input (the reference: the
 * same load without the job), then a job of each worker count.
 */
function stepsFor(
  key: string,
  fresh: (name: string, table: string) => Promise<FreshTarget>,
  input: { file: string; taskBytes: number },
  docs: number,
  m: Measure,
): Step<JobSample>[] {
  const plain: Step<JobSample> = {
    name: `${key}-import`,
    describe,
    run: async () => {
      const table = 'plain';
      const t = await fresh('import', table);
      try {
        const before = usageMark(t.pids, m.diskStat);
        const run = await cliImport(m.cli, m.scratch, { file: input.file, table, target: t.url, docs });
        const usage = usageBetween(before, usageMark(t.pids, m.diskStat));
        const count = await t.count(table);
        if (count !== docs) throw new Error(`a plain import: the table holds ${count} documents, expected ${docs}`);
        return {
          kind: 'import',
          workers: 1,
          docs,
          docs_per_s: docs / (run.processMs / 1000),
          wall_ms: run.processMs,
          phases: null,
          concurrency: null,
          task_ms_median: null,
          per_worker: [{ process_ms: run.processMs, tasks_done: 1, handed_over: 0 }],
          tasks: 1,
          usage,
          count,
        };
      } finally {
        await t.stop();
      }
    },
  };
  const job = (n: number): Step<JobSample> => ({
    name: `${key}-${n}`,
    describe,
    run: async (round) => {
      const table = `job_${n}`;
      const t = await fresh(String(n), table);
      try {
        const name = `bench-${n}-${round}`;
        const before = usageMark(t.pids, m.diskStat);
        const run = await cliJob(m.cli, {
          cwd: m.scratch,
          file: input.file,
          table,
          target: t.url,
          job: name,
          taskBytes: input.taskBytes,
          workers: n,
          docs,
        });
        const usage = usageBetween(before, usageMark(t.pids, m.diskStat));
        return sample(docs, n, run, usage, await jobTimeline(t.url, name), await t.count(table));
      } finally {
        await t.stop();
      }
    },
  });
  return [plain, ...JOB_WORKERS.map(job)];
}

/** Rows of one target: docs/s per worker count with its ratio to 1 worker, and where the limit sits. */
function rowsFor(
  r: Record<string, JobSample[]>,
  key: string,
  targetName: string,
  serverName: string,
  docs: number,
  cpus: number,
): Row[] {
  const rate = (n: number | 'import') => r[`${key}-${n}`]!.map((s) => s.docs_per_s);
  const rows: Row[] = [];
  const med = (xs: readonly JobSample[], f: (s: JobSample) => number | null | undefined) => {
    const v = xs.map(f).filter((x): x is number => x !== null && x !== undefined);
    return v.length ? median(v) : null;
  };
  const plain = r[`${key}-import`]!;
  rows.push({
    scenario: 'job',
    measure: `${docs.toLocaleString('en-US')} docs → ${targetName}: one plain wharf import, no job (spawn → exit)`,
    value: `${fmtRate(median(rate('import')))} (${fmtMs(median(plain.map((s) => s.wall_ms)))})`,
  });
  for (const n of JOB_WORKERS) {
    const xs = r[`${key}-${n}`]!;
    const tasks = xs.map((s) => s.per_worker.map((w) => w.tasks_done).join('+'));
    const handed = xs.map((s) => s.per_worker.reduce((t, w) => t + w.handed_over, 0));
    const reference = n === 1 ? 'plain import' : '1 worker';
    const ratios = pairRatios(rate(n), rate(n === 1 ? 'import' : 1));
    const phase = (k: 'startup_ms' | 'tasks_ms' | 'tail_ms') => med(xs, (s) => s.phases?.[k]);
    const startup = phase('startup_ms');
    const tasksMs = phase('tasks_ms');
    const tail = phase('tail_ms');
    const taskMs = med(xs, (s) => s.task_ms_median);
    rows.push({
      scenario: 'job',
      measure: `${docs.toLocaleString('en-US')} docs → ${targetName}: ${n} worker${n > 1 ? 's' : ''} (first spawn → last exit)`,
      value:
        `${fmtRate(median(rate(n)))} (${fmtMs(median(xs.map((s) => s.wall_ms)))}: ` +
        `start-up ${startup === null ? '?' : fmtMs(startup)}, tasks ${tasksMs === null ? '?' : fmtMs(tasksMs)}, ` +
        `exit ${tail === null ? '?' : fmtMs(tail)}; ${xs[0]!.tasks} tasks, ${med(xs, (s) => s.concurrency)?.toFixed(2) ?? '?'} at once, ` +
        `${taskMs === null ? '?' : fmtMs(taskMs)} each; per worker ${tasks.join(' / ')}` +
        `${handed.some((h) => h > 0) ? `; handed over ${handed.join(' / ')}` : ''})`,
      reference,
      ratio: median(ratios),
      ratios,
    });
  }
  for (const n of ['import', ...JOB_WORKERS] as const) {
    const { verdict, detail } = limitOf(r[`${key}-${n}`]!, cpus, serverName);
    rows.push({
      scenario: 'job',
      measure: `${targetName}, ${n === 'import' ? 'plain import' : `${n} worker${n > 1 ? 's' : ''}`}: where the limit sits`,
      value: `${verdict}: ${detail}`,
    });
  }
  return rows;
}

/** The same into a fresh 3-node RethinkDB cluster per run, on the first `docs` (≤ 200k, quick 50k) documents. */
async function intoRethinkdb(
  ctx: BenchContext,
  m: Measure,
  allDocs: number,
  samples: Record<string, unknown>,
): Promise<Row[]> {
  const bin = findRethinkdb();
  if (!bin) {
    ctx.log(`job: ${RETHINKDB_MISSING}`);
    return [{ scenario: 'job', measure: `into a ${RETHINKDB_NODES}-node RethinkDB cluster`, value: RETHINKDB_MISSING }];
  }
  const docs = Math.min(allDocs, ctx.quick ? 50_000 : 200_000);
  const input = writeInput(join(m.scratch, 'input-rethinkdb'), 'docs.ndjson', docs);
  const fresh = async (name: string, table: string): Promise<FreshTarget> => {
    const nodes: RethinkdbProc[] = await startRethinkdbCluster(
      bin,
      join(m.scratch, `cluster-${name}`),
      RETHINKDB_NODES,
    );
    const stop = async () => {
      await Promise.all(nodes.map((x) => x.stop()));
    };
    const query = async <T>(node: number, q: (db: rethinkdb.Db) => rethinkdb.Operation<T>): Promise<T> => {
      const conn = await rethinkdb.connect({ host: '127.0.0.1', port: nodes[node]!.driverPort });
      try {
        return await q(rethinkdb.db('test')).run(conn);
      } finally {
        await conn.close();
      }
    };
    try {
      // One shard per node, so that every node takes writes (the loader would create the table
      // with RethinkDB's default: one shard on one node). Not a literal: @types/rethinkdb lacks
      // shards and replicas.
      const options = { primary_key: 'id', shards: RETHINKDB_NODES, replicas: 1 };
      await query(0, (db) => db.tableCreate(table, options));
      await query(0, (db) => db.table(table).wait()); // all replicas ready
    } catch (err) {
      await stop();
      throw err;
    }
    return {
      url: `rethinkdb://${nodes.map((x) => `127.0.0.1:${x.driverPort}`).join(',')}/test`,
      pids: nodes.map((x) => x.proc.pid),
      count: (t) => query(1, (db) => db.table(t).count()) as Promise<number>,
      stop,
    };
  };
  if (docs < allDocs) {
    const line = `job: into RethinkDB ${docs.toLocaleString('en-US')} documents (the first of the same input), not ${allDocs.toLocaleString('en-US')}: it loads them an order of magnitude slower than Wharf`;
    ctx.log(line);
    ctx.notes.push(line);
  }
  ctx.log(
    `job → ${RETHINKDB_NODES}-node RethinkDB cluster: ${ctx.rounds} rounds of [one plain import, ${JOB_WORKERS.join(', ')} workers], ` +
      `${docs.toLocaleString('en-US')} docs (${(input.bytes / 1e6).toFixed(0)} MB), --task-bytes ${input.taskBytes}, ` +
      `a table of ${RETHINKDB_NODES} shards × 1 replica`,
  );
  const res = await interleave(ctx.rounds, stepsFor('rethinkdb', fresh, input, docs, m), ctx.log);
  samples.rethinkdb = { docs, bytes: input.bytes, task_bytes: input.taskBytes, nodes: RETHINKDB_NODES, runs: res };
  rmSync(join(m.scratch, 'input-rethinkdb'), { recursive: true, force: true });
  return rowsFor(
    res,
    'rethinkdb',
    `${RETHINKDB_NODES}-node RethinkDB cluster (${RETHINKDB_NODES} shards)`,
    'RethinkDB nodes',
    docs,
    m.cpus,
  );
}
