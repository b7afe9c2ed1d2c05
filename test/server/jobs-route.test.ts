/**
 * GET /api/jobs and GET /api/jobs/:job on a real server process (127.0.0.1, free ports, the real
 * engine in a temporary directory), reading job documents written by real workers: two
 * `wharf import --job` processes that finish a job, and a `JobWorker` of @wharf/client in this
 * process, holding a task half done, then leaving. The detail must equal what
 * `wharf import --job NAME --status --json` prints for the same job; a server with no
 * coordination table lists no jobs; documents that are not what their id says are left out, and
 * the list reads past the first scan page.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type CoordinationStore, JobWorker, openStore, type TaskOutcome, type TaskRun } from '@wharf/client';
import { errorCatalogue, type JobStatus } from '@wharf/wire';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeDir, type SpawnedServer, spawnServer } from '../helpers/spawn-server.js';
import { until } from '../helpers/until.js';
import { tempDir, wharf } from '../import/helpers.js';

const tmp = tempDir('wharf-jobs-route-');
let server: SpawnedServer;
const target = () => `wharf://127.0.0.1:${server.http.port}`;

async function get(path: string): Promise<{ status: number; json: any }> {
  const res = await fetch(`${server.url}${path}`);
  return { status: res.status, json: await res.json() };
}

beforeAll(async () => {
  server = await spawnServer();
}, 60_000);

afterAll(async () => {
  await server?.stop('SIGKILL');
  if (server) removeDir(server.dataDir);
  tmp.cleanup();
});

describe('/api/jobs', () => {
  it('lists no jobs while the coordination table does not exist, and a job it lacks is a 404', async () => {
    expect((await get('/api/tables')).json.tables).toEqual([]);
    expect(await get('/api/jobs')).toEqual({ status: 200, json: { jobTable: 'wharf_jobs', jobs: [] } });
    const missing = await get('/api/jobs/nope');
    expect(missing.status).toBe(404);
    expect(missing.json).toMatchObject({
      statusCode: errorCatalogue.WHARF_ERR_JOB_NOT_FOUND.status,
      code: 'WHARF_ERR_JOB_NOT_FOUND',
      message: 'No job `nope` in table `wharf_jobs`',
    });
    // A name no job can have (`wharf import --job`'s rule) is a bad request, which names the field.
    const bad = await get('/api/jobs/bad%20name');
    expect(bad.json).toMatchObject({ statusCode: 400, code: 'WHARF_ERR_BAD_REQUEST' });
    expect(bad.json.message).toContain('params/job must match pattern');
  });

  it('shows a job two `wharf import --job` workers finished, as `--status --json` does', async () => {
    const lines = Array.from({ length: 3000 }, (_, i) => JSON.stringify({ id: i, name: `user-${i}` }));
    writeFileSync(join(tmp.dir, 'a.ndjson'), `${lines.slice(0, 2000).join('\n')}\n`);
    writeFileSync(join(tmp.dir, 'b.ndjson'), `${lines.slice(2000, 2999).join('\n')}\n{"id": "broken\n`);
    const args = [
      'import',
      '*.ndjson',
      '-t',
      'people',
      '--target',
      target(),
      '--job',
      'load-1',
      '--task-bytes',
      '16KiB',
      '--heartbeat-ms',
      '100',
      '--progress',
      'none',
    ];
    const runs = await Promise.all([wharf(args, { cwd: tmp.dir }), wharf(args, { cwd: tmp.dir })]);
    // Exit 3: the job is complete, with one document rejected.
    for (const r of runs) expect(r.code, r.stderr).toBe(3);
    const workerIds = runs.map((r) => / worker (\S+) on /.exec(r.stderr)?.[1]);

    const list = await get('/api/jobs');
    expect(list.status).toBe(200);
    expect(list.json.jobs).toHaveLength(1);
    const summary = list.json.jobs[0];
    expect(summary).toMatchObject({
      job: 'load-1',
      table: 'people',
      format: 'ndjson',
      complete: true,
      docs: 3000,
      written: 2999,
      rejected: 1,
      docsPerSec: 0,
      workers: { live: 0, dead: 0, done: 2 },
    });
    expect(summary.tasks).toBeGreaterThan(2);
    expect(summary.tasksDone).toBe(summary.tasks);
    expect(summary.updatedAt).toBeGreaterThanOrEqual(summary.createdAt);

    const detail = await get('/api/jobs/load-1');
    expect(detail.status).toBe(200);
    const status = detail.json as JobStatus;
    expect(status.tasks).toHaveLength(summary.tasks);
    expect(status.tasks.every((t) => t.state === 'done' && t.progress === 1)).toBe(true);
    expect(status.tasks.reduce((s, t) => s + t.docs, 0)).toBe(3000);
    expect(status.workers.map((w) => w.worker).sort()).toEqual([...workerIds].sort());
    expect(status.workers.every((w) => w.state === 'done')).toBe(true);
    for (const t of status.tasks) expect(workerIds).toContain(t.holder);

    // The same reading as the CLI's, but for the heartbeat ages, which depend on when it looks.
    const cli = await wharf(['import', '--job', 'load-1', '--status', '--json', '--target', target()], {
      cwd: tmp.dir,
    });
    expect(cli.code, cli.stderr).toBe(0);
    const ages = (s: JobStatus) => ({ ...s, workers: s.workers.map((w) => ({ ...w, lastBeatMsAgo: 0 })) });
    expect(ages(status)).toEqual(ages(JSON.parse(cli.stdout)));
    // The table was loaded by those workers.
    expect((await get('/api/tables/people/count')).json.count).toBe(2999);
  }, 120_000);

  describe('a running job', () => {
    let store: CoordinationStore;
    let worker: JobWorker;
    let running: Promise<unknown>;
    const leave = new AbortController();
    let held: TaskRun | null = null;

    beforeAll(async () => {
      store = await openStore(target());
      worker = new JobWorker(store, {
        job: 'load-2',
        table: 'orders',
        format: 'ndjson',
        inputs: [{ path: 'orders.ndjson', size: 3000 }],
        taskBytes: 1000,
        splittable: true,
        heartbeatMs: 50,
        deadAfterMs: 60_000,
        reserveBytes: 1000,
      });
      // The task it takes is checkpointed half way (500 of its 1000 bytes, 40 documents, one
      // rejected) and then held until the worker leaves.
      const runTask = (run: TaskRun) =>
        new Promise<TaskOutcome>((resolve) => {
          const low = { offset: run.task.start + 500, lastLine: 39, docs: 40, written: 39, rejected: 1, present: 0 };
          run.progress(low, 123, true);
          held = run;
          run.signal.addEventListener('abort', () => resolve({ complete: false, low }));
        });
      running = worker.run(runTask, {}, leave.signal);
    });

    afterAll(async () => {
      leave.abort();
      await running.catch(() => {});
      await store?.close();
    });

    it('lists it in progress beside the finished one, and shows its task, holder and progress', async () => {
      // The checkpoint and the heartbeat that says the worker is on the task are separate writes.
      await until(
        'the held task is checkpointed half way and its worker beats running',
        async () => {
          const { json } = await get('/api/jobs/load-2');
          return json.tasks?.some((t: { docs: number }) => t.docs === 40) && json.workers?.[0]?.state === 'running';
        },
        20,
      );
      const list = await get('/api/jobs');
      expect(list.json.jobs.map((j: { job: string }) => j.job)).toEqual(['load-1', 'load-2']);
      expect(list.json.jobs[1]).toMatchObject({
        job: 'load-2',
        table: 'orders',
        complete: false,
        tasks: 3,
        tasksDone: 0,
        docs: 40,
        written: 39,
        rejected: 1,
        workers: { live: 1, dead: 0, done: 0 },
      });

      const { json: status } = await get('/api/jobs/load-2');
      const taken = held!.task.index;
      expect(status).toMatchObject({ job: 'load-2', found: true, complete: false, format: 'ndjson' });
      expect(status.workers).toEqual([
        expect.objectContaining({ worker: worker.id, state: 'running', task: taken, pid: process.pid }),
      ]);
      expect(status.tasks).toHaveLength(3);
      for (const t of status.tasks) {
        if (t.task === taken)
          expect(t).toMatchObject({
            state: 'running',
            holder: worker.id,
            epoch: 1,
            progress: 0.5,
            docs: 40,
            rejected: 1,
            docsPerSec: 123,
          });
        else expect(t).toMatchObject({ state: 'waiting', holder: null, epoch: 0, progress: 0, docs: 0 });
      }
      expect(status.docsPerSec).toBe(123);
    });

    it('shows the worker dead and its task released once it leaves', async () => {
      leave.abort();
      await running;
      const { json: status } = await get('/api/jobs/load-2');
      expect(status.workers).toEqual([expect.objectContaining({ worker: worker.id, state: 'dead' })]);
      expect(status.tasks.find((t: { task: number }) => t.task === held!.task.index)).toMatchObject({
        state: 'released',
        holder: worker.id,
        progress: 0.5,
        docsPerSec: 0,
      });
      expect((await get('/api/jobs')).json.jobs[1]).toMatchObject({
        complete: false,
        docsPerSec: 0,
        workers: { live: 0, dead: 1, done: 0 },
      });
    });
  });

  it('leaves out documents that are not what their id says, and still answers', async () => {
    const before = (await get('/api/jobs/load-1')).json;
    const junk = [
      { id: 'junk/job', kind: 'job', tasks: 'not a list' },
      { id: 'load-1/task/000000/000009', kind: 'task', task: 0, epoch: 9, worker: 'x' }, // no checkpoint
      { id: 'load-1/beat/x', kind: 'beat', worker: 'x', at: 'yesterday' },
      { id: 'load-1/beat/y', kind: 'beat', worker: 'y', at: 1, state: 'running', docsPerSec: 'fast' },
      { id: 'load-1/task/000001/000009', kind: 'task', task: 1, epoch: 9, worker: 'y', docsPerSec: [1], low: {} },
      { id: 'load-1/member/999999', kind: 'member', slot: '1', worker: 'x' },
      { id: 'load-1/other', kind: 'job' },
      { id: 'no-slash', kind: 'job', tasks: [] },
      { id: 7, kind: 'job' },
    ];
    const res = await fetch(`${server.url}/api/tables/wharf_jobs/documents`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(junk),
    });
    expect((await res.json()).inserted).toBe(junk.length);
    const list = await get('/api/jobs');
    expect(list.status).toBe(200);
    expect(list.json.jobs.map((j: { job: string }) => j.job)).toEqual(['load-1', 'load-2']);
    const after = await get('/api/jobs/load-1');
    expect(after.status).toBe(200);
    const ages = (s: JobStatus) => ({ ...s, workers: s.workers.map((w) => ({ ...w, lastBeatMsAgo: 0 })) });
    expect(ages(after.json)).toEqual(ages(before));
    expect((await get('/api/jobs/junk')).json.code).toBe('WHARF_ERR_JOB_NOT_FOUND');
  });

  it('reads the coordination table named by jobTable (`wharf import --job-table`)', async () => {
    const store = await openStore(target(), 'other.wharf_jobs');
    let id: string;
    try {
      const worker = new JobWorker(store, {
        job: 'load-3',
        table: 'events',
        format: 'ndjson',
        inputs: [{ path: 'events.ndjson', size: 2000 }],
        taskBytes: 1000,
        splittable: true,
        heartbeatMs: 50,
        deadAfterMs: 60_000,
        reserveBytes: 1000,
      });
      id = worker.id;
      const view = await worker.run(async (run) => ({
        complete: true,
        low: { offset: run.task.end, lastLine: 9, docs: 10, written: 10, rejected: 0, present: 0 },
      }));
      expect(view.complete).toBe(true);
    } finally {
      await store.close();
    }
    expect((await get('/api/jobs')).json.jobs.map((j: { job: string }) => j.job)).toEqual(['load-1', 'load-2']);
    const other = await get('/api/jobs?jobTable=other.wharf_jobs');
    expect(other.json.jobTable).toBe('other.wharf_jobs');
    expect(other.json.jobs).toEqual([
      expect.objectContaining({
        job: 'load-3',
        table: 'events',
        complete: true,
        tasks: 2,
        tasksDone: 2,
        docs: 20,
        workers: { live: 0, dead: 0, done: 1 },
      }),
    ]);
    const detail = await get('/api/jobs/load-3?jobTable=other.wharf_jobs');
    expect(detail.json.workers.map((w: { worker: string }) => w.worker)).toEqual([id]);
    expect((await get('/api/jobs/load-3')).json.code).toBe('WHARF_ERR_JOB_NOT_FOUND');
  });

  it('reads past the first page of the table (scanPageRows, 10 000 by default)', async () => {
    // Documents of no job (no `/` in their ids) that sort before every job's.
    const filler = Array.from({ length: 10_001 }, (_, i) => ({ id: `filler-${String(i).padStart(5, '0')}` }));
    const res = await fetch(`${server.url}/api/tables/wharf_jobs/documents`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(filler),
    });
    expect((await res.json()).inserted).toBe(filler.length);
    expect((await get('/api/jobs')).json.jobs.map((j: { job: string }) => j.job)).toEqual(['load-1', 'load-2']);
  });

  it('lists no jobs of a table that does not exist, and refuses a deadAfterMs below 1 ms', async () => {
    expect((await get('/api/jobs?jobTable=elsewhere')).json).toEqual({ jobTable: 'elsewhere', jobs: [] });
    expect((await get('/api/jobs/load-1?jobTable=elsewhere')).json.code).toBe('WHARF_ERR_JOB_NOT_FOUND');
    const bad = await get('/api/jobs?deadAfterMs=0');
    expect(bad.json).toMatchObject({ statusCode: 400, code: 'WHARF_ERR_BAD_REQUEST' });
    expect(bad.json.message).toContain('querystring/deadAfterMs must be >= 1');
  });
});
