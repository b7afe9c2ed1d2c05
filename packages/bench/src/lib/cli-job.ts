// `wharf import FILE --job NAME` as users run a distributed import: N processes of the `wharf`
// command the bench was started with, spawned at once with the same job name and input, each
// exiting once the whole job is done (apps/cli/src/commands/import/job.ts). What each printed is
// read back: the job's totals (stdout), the tasks it finished, and the tasks it handed over when
// the owners changed as the others joined (stderr).

import { spawn } from 'node:child_process';

export interface JobWorkerRun {
  /** spawn → exit of this worker, ms */
  processMs: number;
  /** tasks this worker finished */
  tasksDone: number;
  /** tasks it started and handed over to a worker that joined after it ("handing it over") */
  handedOver: number;
}

export interface JobRun {
  /** first spawn → last exit, ms */
  wallMs: number;
  /** Date.now() at the first spawn and at the last exit: the clock the coordination documents use */
  spawnedAt: number;
  exitedAt: number;
  workers: JobWorkerRun[];
  /** the job's totals as the last worker to exit printed them */
  totals: { tasks: number; docs: number; written: number; rejected: number };
}

const TOTALS = /complete: (\d+) of (\d+) tasks done; (\d+) documents read, (\d+) written, (\d+) rejected/;
const FINISHED = /this worker \(\S+\) finished (\d+) tasks?/;

/**
 * Spawns `workers` processes of `wharf import FILE --table T --target TARGET --job JOB
 * --task-bytes N --progress none [args]` at once and waits for all of them. Throws, with the
 * failing worker's stderr, unless every one exits 0 and reports the whole job complete with
 * `docs` documents read and written; kills them all after `timeoutMs`.
 */
export async function cliJob(
  cliBin: string,
  o: {
    cwd: string;
    file: string;
    table: string;
    target: string;
    job: string;
    taskBytes: number;
    workers: number;
    docs: number;
    args?: string[];
    timeoutMs?: number;
  },
): Promise<JobRun> {
  const args = ['import', o.file, '--table', o.table, '--target', o.target, '--job', o.job];
  args.push('--task-bytes', String(o.taskBytes), '--progress', 'none', ...(o.args ?? []));
  const t0 = performance.now();
  const spawnedAt = Date.now();
  const procs = Array.from({ length: o.workers }, () =>
    spawn(process.execPath, [cliBin, ...args], { cwd: o.cwd, stdio: ['ignore', 'pipe', 'pipe'] }),
  );
  const timer = setTimeout(
    () => {
      for (const p of procs) p.kill('SIGKILL');
    },
    o.timeoutMs ?? 30 * 60_000,
  );
  let lastExit = t0;
  try {
    const results = await Promise.all(
      procs.map(
        (p, i) =>
          new Promise<{ code: number | null; signal: string | null; out: string; err: string; ms: number }>(
            (res, rej) => {
              let out = '';
              let err = '';
              p.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
              p.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
              p.on('error', (e) => rej(new Error(`worker ${i + 1} of job ${o.job}: ${e.message}`)));
              p.on('close', (code, signal) => {
                const now = performance.now();
                lastExit = Math.max(lastExit, now);
                res({ code, signal, out, err, ms: now - t0 });
              });
            },
          ),
      ),
    );
    const wallMs = lastExit - t0;
    const exitedAt = spawnedAt + wallMs;
    const workers: JobWorkerRun[] = [];
    let totals: JobRun['totals'] | undefined;
    for (const [i, r] of results.entries()) {
      const what = `worker ${i + 1} of ${o.workers} of job ${o.job} (wharf ${args.join(' ')})`;
      const m = TOTALS.exec(r.out);
      if (r.code !== 0 || !m)
        throw new Error(
          `${what} exited ${r.code ?? r.signal}${m ? '' : ' without the job complete'}:\n${r.out.slice(-1000)}${r.err.slice(-2000)}`,
        );
      const t = { tasks: Number(m[2]), docs: Number(m[3]), written: Number(m[4]), rejected: Number(m[5]) };
      if (t.docs !== o.docs || t.written !== o.docs || t.rejected !== 0 || Number(m[1]) !== t.tasks)
        throw new Error(`${what}: the job reports ${m[0]}, expected ${o.docs} documents read and written`);
      totals = t;
      workers.push({
        processMs: r.ms,
        tasksDone: Number(FINISHED.exec(r.out)?.[1] ?? 0),
        handedOver: (r.err.match(/handing it over/g) ?? []).length,
      });
    }
    return { wallMs, spawnedAt, exitedAt, workers, totals: totals! };
  } finally {
    clearTimeout(timer);
    for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  }
}
