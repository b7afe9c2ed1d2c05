/**
 * Distributed import (`wharf import FILES --job NAME`, apps/cli/src/commands/import/job.ts and
 * packages/client/src/job/): four real worker processes share one job over two input files cut
 * into byte-range tasks, one is killed with SIGKILL while it holds a task and one starts late.
 * The table must equal the input exactly, every task must be done exactly once, and the killed
 * worker's task must have been taken over. Against a Wharf server, and against a 3-node
 * RethinkDB cluster when RETHINKDB_BIN names a RethinkDB 2.4 binary.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type RethinkdbProc, startRethinkdbCluster } from '@wharf/bench/rethinkdb';
import {
  type CoordinationStore,
  JobWorker,
  openStore,
  ownerOf,
  planTasks,
  readJob,
  type TaskEpoch,
  type TaskLow,
  type TaskOutcome,
  type TaskRun,
} from '@wharf/client';
import type { ServerHandle } from '@wharf/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../helpers/until.js';
import { type RunResult, start, startTestServer, tempDir, wharf } from './helpers.js';

const tmp = tempDir('wharf-job-');
const RETHINKDB_BIN = process.env.RETHINKDB_BIN;
if (!RETHINKDB_BIN) console.warn('job.test: RETHINKDB_BIN is not set, the RethinkDB cluster case is skipped');

let server: ServerHandle;
let cluster: RethinkdbProc[] = [];

type Doc = { id: number; name: string; n: number; tags: string[]; nested: { ok: boolean } };
const docs: Doc[] = Array.from({ length: 60_000 }, (_, i) => ({
  id: i,
  name: `user-${i}`,
  n: i * 7,
  tags: [`t${i % 5}`, `g${i % 3}`],
  nested: { ok: i % 2 === 0 },
}));
const dataDir = join(tmp.dir, 'data');

beforeAll(async () => {
  mkdirSync(dataDir);
  const lines = docs.map((d) => JSON.stringify(d));
  writeFileSync(join(dataDir, 'a.ndjson'), `${lines.slice(0, 40_000).join('\n')}\n`);
  writeFileSync(join(dataDir, 'b.ndjson'), `${lines.slice(40_000).join('\n')}\n`);
  server = await startTestServer(join(tmp.dir, 'server'));
  if (RETHINKDB_BIN) cluster = await startRethinkdbCluster(RETHINKDB_BIN, join(tmp.dir, 'rethinkdb'), 3);
}, 180_000);

afterAll(async () => {
  await server?.close();
  await Promise.all(cluster.map((n) => n.stop()));
  tmp.cleanup();
});

interface Case {
  name: string;
  present: boolean;
  target: () => string;
  /** The table's documents, sorted by id. */
  read: (table: string) => Promise<Doc[]>;
}

const cases: Case[] = [
  {
    name: 'a Wharf server',
    present: true,
    target: () => `wharf://127.0.0.1:${server.http.port}`,
    read: async (table) => (await server.app.db.table(table).scan()) as Doc[],
  },
  {
    name: 'a 3-node RethinkDB cluster',
    present: !!RETHINKDB_BIN,
    target: () => `rethinkdb://${cluster.map((n) => `127.0.0.1:${n.driverPort}`).join(',')}/test`,
    read: async (table) => {
      const { default: r } = await import('rethinkdb');
      const conn = await r.connect({ host: '127.0.0.1', port: cluster[1]!.driverPort, db: 'test' });
      try {
        const cursor = await r.table(table).orderBy({ index: 'id' }).run(conn);
        return (Array.isArray(cursor) ? cursor : await cursor.toArray()) as Doc[];
      } finally {
        await conn.close();
      }
    },
  },
];

const workerArgs = (target: string, job: string, table: string) => [
  'import',
  'data/*.ndjson',
  '-t',
  table,
  '--target',
  target,
  '--job',
  job,
  '--task-bytes',
  '128KiB',
  '--heartbeat-ms',
  '100',
  '--dead-after-ms',
  '1500',
  '--progress',
  'none',
  // Small hard batches one at a time: a task takes long enough to be killed in the middle of.
  '--batch-size',
  '250',
  '--concurrency',
  '1',
  '--durability',
  'hard',
];

/** All epoch documents of a job's tasks. */
async function epochs(store: CoordinationStore, job: string): Promise<TaskEpoch[]> {
  return (await store.list(`${job}/task/`)) as TaskEpoch[];
}

describe.each(cases)('a job shared by four workers, into $name', (c) => {
  it.skipIf(!c.present)(
    'loads the input exactly once though a worker is killed with SIGKILL and another starts late',
    async () => {
      const job = `job-${c.name.length}`;
      const table = `jobs_${c.name.length}`;
      const args = workerArgs(c.target(), job, table);
      const run = (more: string[] = []) => start([...args, ...more], { cwd: tmp.dir });
      // The victim records its progress every 50 ms in batches of 50, so it is seen mid-task,
      // hundreds of documents before the task's end.
      const [w1, w2, victim] = [run(), run(), run(['--batch-size', '50', '--checkpoint-ms', '50'])];
      let victimErr = '';
      victim.child.stderr!.on('data', (d) => (victimErr += d));
      await until('the victim registers', () => / worker (\S+) on /.test(victimErr), 20).catch((err) => {
        throw new Error(`${(err as Error).message}; its stderr: ${victimErr}`);
      });
      const victimId = / worker (\S+) on /.exec(victimErr)![1]!;

      const store = await openStore(c.target());
      try {
        // Kill it while it holds a task it has made progress on.
        // A 128 KiB task holds ~1500 documents: kill it before it is half done.
        await until(
          'the victim holds a task in progress',
          async () =>
            (await epochs(store, job)).some(
              (e) => e.worker === victimId && !e.done && !e.released && e.low.docs > 0 && e.low.docs < 700,
            ),
          10,
        );
        victim.child.kill('SIGKILL');
        const late = run();
        const results: RunResult[] = await Promise.all([w1.done, w2.done, late.done]);
        for (const r of results) {
          expect(r.code, r.stderr).toBe(0);
          expect(r.stdout).toMatch(/complete: (\d+) of \1 tasks done; 60000 documents read, 60000 written, 0 rejected/);
        }
        expect((await victim.done).signal).toBe('SIGKILL');
        // The late worker joined (whether tasks were left for it depends on timing; the hand-over
        // to a worker that joins is tested deterministically below).
        expect(results[2]!.stdout).toMatch(/this worker \(\S+\) finished \d+ task/);

        // The table equals the input.
        const stored = await c.read(table);
        expect(stored.length).toBe(docs.length);
        expect(stored).toEqual(docs);

        // Every task done exactly once; the victim's task finished by another worker.
        const view = await readJob(store, job);
        expect(view.complete).toBe(true);
        const all = await epochs(store, job);
        for (const t of view.definition!.tasks) {
          expect(all.filter((e) => e.task === t.index && e.done).length).toBe(1);
        }
        const takenOver = all.filter(
          (e) => e.epoch > 1 && all.some((p) => p.task === e.task && p.epoch === e.epoch - 1 && p.worker === victimId),
        );
        expect(takenOver.length).toBeGreaterThan(0);
        expect(takenOver.every((e) => e.done && e.worker !== victimId)).toBe(true);
        expect(view.totals()).toMatchObject({ docs: 60_000, written: 60_000, rejected: 0 });

        // --status shows the finished job; the victim is dead.
        const status = await wharf(
          ['import', '--job', job, '--status', '--json', '--target', c.target(), '--dead-after-ms', '1500'],
          { cwd: tmp.dir },
        );
        expect(status.code, status.stderr).toBe(0);
        const s = JSON.parse(status.stdout);
        expect(s.complete).toBe(true);
        expect(s.tasks.every((t: { state: string }) => t.state === 'done')).toBe(true);
        expect(s.workers.find((w: { worker: string }) => w.worker === victimId).state).toBe('dead');
        const text = await wharf(['import', '--job', job, '--status', '--target', c.target()], { cwd: tmp.dir });
        expect(text.stdout).toContain(`job ${job} → `);
        expect(text.stdout).toMatch(/tasks \d+: \d+ done, 0 running/);
      } finally {
        victim.child.kill('SIGKILL');
        await store.close();
      }
    },
    180_000,
  );
});

describe("a job through a Wharf server's driver port (rethinkdb://)", () => {
  it('coordinates through ReQL and loads the input exactly', async () => {
    const target = `rethinkdb://127.0.0.1:${server.driver!.port}/test`;
    const args = ['import', 'data/*.ndjson', '-t', 'via_driver', '--target', target, '--job', 'via-driver'];
    const results = await Promise.all([wharf(args, { cwd: tmp.dir }), wharf(args, { cwd: tmp.dir })]);
    for (const r of results) {
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/complete: 2 of 2 tasks done; 60000 documents read, 60000 written, 0 rejected/);
    }
    expect(await cases[0]!.read('via_driver')).toEqual(docs);
  }, 120_000);
});

describe('a worker that joins a running job', () => {
  it('is handed the running task it owns: released with its checkpoint, taken over from there', async () => {
    const store = await openStore(`wharf://127.0.0.1:${server.http.port}`);
    const job = 'joins';
    const inputs = [{ path: 'data/a.ndjson', size: 4096 }];
    const o = {
      job,
      table: 'joins',
      format: 'ndjson',
      inputs,
      taskBytes: 1024,
      splittable: true,
      heartbeatMs: 50,
      deadAfterMs: 5000,
      reserveBytes: 1 << 20,
    };
    const tasks = planTasks(inputs, 1024, true);
    // A joiner id that owns task 0 once it joins (ids are ours to give; the hash decides).
    const first = 'first';
    let joiner = '';
    for (let i = 0; !joiner; i++)
      if (ownerOf(tasks[0]!.key, [first, `j${i}`], () => true) === `j${i}`) joiner = `j${i}`;
    const low = (offset: number, docs: number): TaskLow => ({
      offset,
      lastLine: docs,
      docs,
      written: docs,
      rejected: 0,
      present: 0,
    });
    const seen: { worker: string; task: number; resume: TaskRun['resume'] }[] = [];
    // Task 0 runs until told to stop (its progress recorded); every other task ends at once.
    const runTask =
      (worker: string) =>
      async (run: TaskRun): Promise<TaskOutcome> => {
        seen.push({ worker, task: run.task.index, resume: run.resume });
        if (run.task.index === 0 && worker === first) {
          run.progress(low(100, 7), 0, true);
          await new Promise((resolve) => run.signal.addEventListener('abort', resolve));
          return { complete: false, low: low(100, 7) };
        }
        return { complete: true, low: low(run.task.end, (run.resume?.low.docs ?? 0) + 3) };
      };
    try {
      const a = new JobWorker(store, o, first).run(runTask(first));
      await until(
        'the first worker holds task 0',
        async () => (await readJob(store, job)).latest.get(0)?.worker === first,
        20,
      );
      const b = new JobWorker(store, o, joiner).run(runTask(joiner));
      const [va] = await Promise.all([a, b]);
      expect(va.complete).toBe(true);
      const epochs0 = (await epochs(store, job)).filter((e) => e.task === 0);
      expect(epochs0.map((e) => [e.epoch, e.worker, e.released, e.done])).toEqual([
        [1, first, true, false],
        [2, joiner, false, true],
      ]);
      // The joiner resumed where the first stopped.
      expect(seen.find((x) => x.worker === joiner && x.task === 0)!.resume!.low).toEqual(low(100, 7));
      expect(va.totals().docs).toBe(7 + 3 + (tasks.length - 1) * 3);
    } finally {
      await store.close();
    }
  }, 60_000);
});

describe('a worker interrupted with Ctrl-C', () => {
  it('hands its task over with a checkpoint, and another worker finishes the job exactly', async () => {
    const target = `wharf://127.0.0.1:${server.http.port}`;
    // Tasks of several read chunks (1 MiB), so the interrupt stops reading inside one.
    // Tiny hard batches: the interrupt lands long before the task could end.
    const args = [...workerArgs(target, 'ctrl-c', 'ctrl_c'), '--task-bytes', '4MiB', '--batch-size', '20'];
    const first = start(args, { cwd: tmp.dir });
    let err = '';
    first.child.stderr!.on('data', (d) => (err += d));
    await until('the worker registers', () => / worker (\S+) on /.test(err), 20);
    const id = / worker (\S+) on /.exec(err)![1]!;
    const store = await openStore(target);
    try {
      await until(
        'the worker has a durable checkpoint in a task',
        async () => (await epochs(store, 'ctrl-c')).some((e) => e.worker === id && !e.done && e.low.docs > 0),
        20,
      );
      first.child.kill('SIGINT');
      const interrupted = await first.done;
      expect(interrupted.code).toBe(130);
      expect(interrupted.stdout).toMatch(/incomplete: \d+ of \d+ tasks done/);
      const released = (await epochs(store, 'ctrl-c')).filter((e) => e.released);
      expect(released.length).toBe(1);
      expect(released[0]!.low.docs).toBeGreaterThan(0);

      const second = await wharf(args, { cwd: tmp.dir });
      expect(second.code, second.stderr).toBe(0);
      expect(second.stderr).toContain(`taken over at byte ${released[0]!.low.offset}`);
      expect(second.stdout).toMatch(
        /complete: (\d+) of \1 tasks done; 60000 documents read, 60000 written, 0 rejected/,
      );
      expect(await cases[0]!.read('ctrl_c')).toEqual(docs);
    } finally {
      await store.close();
    }
  }, 120_000);
});

describe('job command line', () => {
  const target = () => `wharf://127.0.0.1:${server.http.port}`;

  it('refuses several inputs without --job, and a job on an embedded target', async () => {
    const several = await wharf(['import', 'data/a.ndjson', 'data/b.ndjson', '-t', 't', '--target', target()], {
      cwd: tmp.dir,
    });
    expect(several.code).toBe(2);
    expect(several.stderr).toContain('several inputs are one job: give it a name with --job NAME');
    const embedded = await wharf(
      ['import', 'data/a.ndjson', '-t', 't', '--target', `embedded:${join(tmp.dir, 'emb')}`, '--job', 'x'],
      { cwd: tmp.dir },
    );
    expect(embedded.code).toBe(2);
    expect(embedded.stderr).toContain('a job needs a target every worker can reach');
    const thresholds = await wharf(
      ['import', 'data/a.ndjson', '-t', 't', '--target', target(), '--job', 'x', '--fail-if', 'p99<1s'],
      { cwd: tmp.dir },
    );
    expect(thresholds.code).toBe(2);
    expect(thresholds.stderr).toContain('--fail-if does not apply to a job');
  });

  it('refuses to join a job of the same name over other inputs', async () => {
    const first = await wharf(
      ['import', 'data/b.ndjson', '-t', 'other', '--target', target(), '--job', 'same', '--report', 'same.json'],
      { cwd: tmp.dir },
    );
    expect(first.code, first.stderr).toBe(0);
    // --report: the job's status, this worker's tasks and its exit status.
    const report = JSON.parse(readFileSync(join(tmp.dir, 'same.json'), 'utf8'));
    expect(report).toMatchObject({ job: 'same', complete: true, exitCode: 0, error: null, tasksDone: [0] });
    expect(report.totals).toMatchObject({ docs: 20_000, written: 20_000, rejected: 0 });
    const second = await wharf(['import', 'data/a.ndjson', '-t', 'other', '--target', target(), '--job', 'same'], {
      cwd: tmp.dir,
    });
    expect(second.code).toBe(2);
    expect(second.stderr).toMatch(/job same already exists with other settings .*data\/b\.ndjson/);
  });

  it('says so when --status names no job', async () => {
    const r = await wharf(['import', '--job', 'nope', '--status', '--target', target()], { cwd: tmp.dir });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('no job nope on');
  });
});
