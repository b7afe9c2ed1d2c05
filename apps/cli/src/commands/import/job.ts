/**
 * `wharf import FILES… --job NAME`: this process is one worker of a job shared by any number of
 * `wharf import` processes on any machines over the same inputs (@wharf/client's job protocol:
 * jump-hash owners, heartbeats, per-task checkpoints in the target's coordination table). Each
 * task it takes is an ordinary import of a byte range (runImport with an ImportTask); the process
 * exits once every task of the job is done, with the job's totals.
 */
import { closeSync, openSync, readSync, statSync, writeFileSync } from 'node:fs';
import {
  type JobInput,
  type JobStatus,
  type JobView,
  JobWorker,
  jobStatus,
  openStore,
  readJob,
  redact,
  type TaskLow,
  type TaskOutcome,
  type TaskRun,
} from '@wharf/client';
import { glob } from 'tinyglobby';
import type { ImportOptions } from '../../options.js';
import { detectFormat } from './formats/index.js';
import { type ImportIo, runImport, UsageError } from './index.js';
import { fmtBytes } from './progress.js';
import { RejectsFile } from './rejects.js';
import { EXIT } from './report.js';
import { openInput } from './source.js';

/** Reserve the durable high-water mark this far ahead of reading (one coordination write per step). */
const RESERVE_BYTES = 16 << 20;

export interface JobOutcome {
  exitCode: number;
  view: JobView;
  /** Tasks this worker finished. */
  tasksDone: number[];
}

/** The inputs: files as given, glob patterns expanded (sorted), each once. */
export async function expandInputs(args: readonly string[]): Promise<JobInput[]> {
  const paths: string[] = [];
  for (const a of args) {
    if (a === '-')
      throw new UsageError('a job reads files (every worker must see the same inputs), not standard input');
    if (/[*?[{]/.test(a)) {
      const matched = (await glob(a, { onlyFiles: true, expandDirectories: false })).sort();
      if (matched.length === 0) throw new UsageError(`${a} matches no file`);
      paths.push(...matched);
    } else paths.push(a);
  }
  const unique = [...new Set(paths)];
  return unique.map((path) => {
    let size: number;
    try {
      const st = statSync(path);
      if (!st.isFile()) throw new Error('not a regular file');
      size = st.size;
    } catch (err) {
      throw new UsageError(`${path}: ${(err as Error).message}`);
    }
    return { path, size };
  });
}

/** The first byte of a record at or after `pos`: just past the first newline at or after pos − 1. */
export function recordStart(path: string, pos: number, size: number): number {
  if (pos <= 0) return 0;
  if (pos >= size) return size;
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.allocUnsafe(1 << 16);
    for (let at = pos - 1; at < size; at += buf.length) {
      const n = readSync(fd, buf, 0, buf.length, at);
      const nl = buf.subarray(0, n).indexOf(0x0a);
      if (nl !== -1) return at + nl + 1;
      if (n === 0) break;
    }
    return size;
  } finally {
    closeSync(fd);
  }
}

export async function runJob(o: ImportOptions, io: ImportIo): Promise<JobOutcome> {
  const job = o.job as string;
  for (const [flag, on] of [
    ['--resume', o.resume],
    ['--checkpoint', o.checkpoint !== undefined],
    ['--dry-run', o.dryRun],
    ['--index', o.indexes.length > 0],
    ['--chart', o.chart !== undefined],
    ['--fail-if', o.failIf.length > 0],
  ] as const) {
    if (on)
      throw new UsageError(
        `${flag} does not apply to a job (its checkpoints are in the coordination table; build indexes once the job is done)`,
      );
  }
  const inputs = await expandInputs(o.files ?? [o.file]);
  if (inputs.length === 0) throw new UsageError('a job needs at least one input file');
  const formats = await Promise.all(
    inputs.map(async (i) => detectFormat(i.path, await openInput(i.path, io.stdin).head(), o.format)),
  );
  const format = formats[0]!;
  const other = formats.findIndex((f) => f !== format);
  if (other !== -1)
    throw new UsageError(
      `all inputs of a job have one format: ${inputs[0]!.path} is ${format}, ${inputs[other]!.path} is ${formats[other]}`,
    );

  const store = await openStore(o.target, o.jobTable);
  const worker = new JobWorker(store, {
    job,
    table: o.table,
    format,
    inputs,
    taskBytes: o.taskBytes,
    splittable: format === 'ndjson',
    heartbeatMs: o.heartbeatMs,
    deadAfterMs: o.deadAfterMs,
    reserveBytes: RESERVE_BYTES,
  });
  const say = (line: string) => io.stderr.write(`wharf import: job ${job}: ${line}\n`);
  say(`worker ${worker.id} on ${redact(o.target)} (coordination: ${store.where})`);
  const rejects = o.rejects ? new RejectsFile(o.rejects) : null;
  const tasksDone: number[] = [];
  let failed: Error | null = null;

  const runTask = async (run: TaskRun): Promise<TaskOutcome> => {
    const { task } = run;
    const size = inputs.find((i) => i.path === task.path)!.size;
    const range = { start: recordStart(task.path, task.start, size), end: recordStart(task.path, task.end, size) };
    let low: TaskLow = run.resume?.low ?? {
      offset: range.start,
      lastLine: null,
      docs: 0,
      written: 0,
      rejected: 0,
      present: 0,
    };
    const { report } = await runImport({ ...o, file: task.path, format, resume: false }, io, {
      range,
      resume: run.resume,
      progress: (l, rate, durable) => {
        low = { ...l };
        run.progress(low, rate, durable);
      },
      reserve: (offset) => run.reserve(offset),
      rejects,
      signal: run.signal,
    });
    if (report.status === 'failed')
      throw new Error(`task ${task.index} (${task.key}): ${report.error?.message ?? 'failed'}`);
    return { complete: report.checkpoint.complete, low };
  };

  let view: JobView;
  try {
    view = await worker.run(
      runTask,
      {
        taskStarted: (run) =>
          say(
            `task ${run.task.index} (${run.task.path} ${fmtBytes(run.task.start)}–${fmtBytes(run.task.end)})` +
              (run.resume ? `: taken over at byte ${run.resume.low.offset}, epoch ${run.epoch}` : ''),
          ),
        taskEnded: (task, how, detail) => {
          if (how === 'done') tasksDone.push(task.index);
          say(`task ${task.index} ${how}${detail ? `: ${detail}` : ''}`);
        },
        note: say,
      },
      io.signal,
    );
  } catch (err) {
    // A job of this name with other inputs: a bad command line, nothing was done.
    if ((err as { code?: string }).code === 'WHARF_ERR_USAGE') throw err;
    failed = err as Error;
    view = await readJob(store, job);
  } finally {
    rejects?.close();
    await store.close();
  }

  const t = view.totals();
  const exitCode = failed
    ? EXIT.failed
    : !view.complete
      ? EXIT.interrupted
      : t.written !== t.docs - t.rejected
        ? EXIT.failed
        : t.rejected > 0
          ? EXIT.rejects
          : EXIT.ok;
  if (o.report)
    writeFileSync(
      o.report,
      `${JSON.stringify({ ...jobStatus(job, view, o.deadAfterMs), worker: worker.id, tasksDone, exitCode, error: failed?.message ?? null }, null, 2)}\n`,
    );
  io.stdout.write(
    `wharf import job ${job} → ${redact(o.target)} table ${o.table} (${format})\n` +
      `  ${view.complete ? 'complete' : 'incomplete'}: ${t.tasksDone} of ${t.tasks} tasks done; ` +
      `${t.docs} documents read, ${t.written} written, ${t.rejected} rejected` +
      (t.present > 0 ? ` (${t.present} of the written were already stored)` : '') +
      `\n  this worker (${worker.id}) finished ${tasksDone.length} task${tasksDone.length === 1 ? '' : 's'}` +
      (tasksDone.length ? `: ${tasksDone.join(', ')}` : '') +
      '\n',
  );
  if (failed) io.stderr.write(`wharf import: job ${job}: ${failed.message}\n`);
  else if (view.complete && t.written !== t.docs - t.rejected)
    io.stderr.write(`wharf import: job ${job}: written ${t.written} ≠ read ${t.docs} − rejected ${t.rejected}\n`);
  return { exitCode, view, tasksDone };
}

/** `--status`: the job's tasks and workers, as a table or JSON. Exit 0 when the job exists. */
export async function runJobStatus(o: ImportOptions, io: ImportIo): Promise<number> {
  const job = o.job as string;
  const store = await openStore(o.target, o.jobTable);
  let status: JobStatus;
  try {
    status = jobStatus(job, await readJob(store, job), o.deadAfterMs);
  } finally {
    await store.close();
  }
  if (o.json) {
    io.stdout.write(`${JSON.stringify(status, null, 2)}\n`);
    return status.found ? EXIT.ok : EXIT.failed;
  }
  if (!status.found) {
    io.stderr.write(`wharf import: no job ${job} on ${redact(o.target)} (table ${o.jobTable})\n`);
    return EXIT.failed;
  }
  const t = status.totals;
  const count = (s: string) => status.tasks.filter((x) => x.state === s).length;
  const rows = (head: string[], body: (string | number)[][]) => {
    const cells = [head, ...body.map((r) => r.map(String))];
    const widths = head.map((_, i) => Math.max(...cells.map((r) => r[i]!.length)));
    return cells.map((r) => `  ${r.map((c, i) => c.padEnd(widths[i]!)).join('  ')}`.trimEnd()).join('\n');
  };
  io.stdout.write(
    `job ${job} → ${redact(o.target)} table ${status.table} (${status.format}): ${status.complete ? 'complete' : 'in progress'}\n` +
      `  tasks ${t.tasks}: ${count('done')} done, ${count('running')} running, ${count('released')} released, ` +
      `${count('orphaned')} orphaned, ${count('waiting')} waiting — ${Math.round(status.docsPerSec)} docs/s\n` +
      `  documents: ${t.docs} read, ${t.written} written, ${t.rejected} rejected\n\n` +
      `${rows(
        ['worker', 'host', 'pid', 'state', 'last beat', 'task', 'docs/s'],
        status.workers.map((w) => [
          w.worker,
          w.host ?? '-',
          w.pid ?? '-',
          w.state,
          w.lastBeatMsAgo === null ? '-' : `${(w.lastBeatMsAgo / 1000).toFixed(1)} s ago`,
          w.task ?? '-',
          Math.round(w.docsPerSec),
        ]),
      )}\n\n` +
      `${rows(
        ['task', 'input', 'bytes', 'state', 'holder', 'epoch', 'done', 'docs', 'rejected'],
        status.tasks.map((x) => [
          x.task,
          x.path,
          `${fmtBytes(x.start)}–${fmtBytes(x.end)}`,
          x.state,
          x.holder ?? '-',
          x.epoch,
          `${Math.round(x.progress * 100)}%`,
          x.docs,
          x.rejected,
        ]),
      )}\n`,
  );
  return EXIT.ok;
}
