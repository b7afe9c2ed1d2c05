// The `job` scenario (distributed import, 1, 2, 4 workers) end to end on a small input against a
// real server and real `wharf import --job` processes, the accounting it reads (lib/usage.ts), and
// how it names the limit.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cliJob } from '../src/lib/cli-job.ts';
import { startServerProc } from '../src/lib/server-proc.ts';
import { exitedChildrenCpuMs } from '../src/lib/usage.ts';
import { makeContext } from '../src/scenarios/common.ts';
import { missingFor } from '../src/scenarios/index.ts';
import { type JobSample, jobScenario, limitOf } from '../src/scenarios/job.ts';

/** The `wharf` command from the sources, as the import tests run it. */
const CLI = resolve(import.meta.dirname, '../../../test/import/wharf-from-source.mjs');
const dir = mkdtempSync(join(tmpdir(), 'wharf-bench-job-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the job scenario', () => {
  it('runs one plain import, then 1, 2 and 4 workers, into a fresh server each, checks the table, and says where the time went', async () => {
    const notes: string[] = [];
    const ctx = makeContext({
      cliBin: CLI,
      dir: join(dir, 'suite'),
      quick: true,
      rounds: 1,
      minutes: 1,
      log: (l) => notes.push(l),
      fsyncLoop: 'node',
    });
    // The RethinkDB part has a test of its own kind (test/import/job.test.ts); here only its skip line.
    const bin = process.env.RETHINKDB_BIN;
    process.env.RETHINKDB_BIN = join(dir, 'no-rethinkdb');
    let res: Awaited<ReturnType<typeof jobScenario>>;
    try {
      res = await jobScenario(ctx, { docs: 5000 });
    } finally {
      if (bin === undefined) delete process.env.RETHINKDB_BIN;
      else process.env.RETHINKDB_BIN = bin;
    }
    const runs = (res.samples.wharf as { runs: Record<string, JobSample[]> }).runs;
    expect(Object.keys(runs)).toEqual(['wharf-import', 'wharf-1', 'wharf-2', 'wharf-4']);
    // The reference: the same file by one plain import (no job) into its own fresh server.
    const plain = runs['wharf-import']![0]!;
    expect(plain).toMatchObject({ kind: 'import', count: 5000, phases: null });
    expect(plain.usage.exitedChildrenCpuMs).toBeGreaterThanOrEqual(50);
    for (const n of [1, 2, 4]) {
      const s = runs[`wharf-${n}`]![0]!;
      expect(s.count).toBe(5000);
      // 4 workers × 4 tasks each on average; every task finished once, by one of the N workers.
      expect(s.tasks).toBeGreaterThanOrEqual(16);
      expect(s.per_worker).toHaveLength(n);
      expect(s.per_worker.reduce((t, w) => t + w.tasks_done, 0)).toBe(s.tasks);
      // The coordination documents' times fall between this process's first spawn and last exit.
      expect(s.phases!.startup_ms).toBeGreaterThan(0);
      expect(s.phases!.tasks_ms).toBeGreaterThan(0);
      expect(s.phases!.tail_ms).toBeGreaterThanOrEqual(0);
      // Each worker is a Node process: well over 10 ms of CPU (one clock tick) each.
      expect(s.usage.exitedChildrenCpuMs).toBeGreaterThanOrEqual(n * 50);
      expect(s.usage.procCpuMs).toBeGreaterThan(0);
    }
    const measures = res.rows.map((r) => r.measure);
    expect(measures).toContain('5,000 docs → Wharf server (wharf://): 4 workers (first spawn → last exit)');
    expect(res.rows.find((r) => r.measure.endsWith('2 workers (first spawn → last exit)'))).toMatchObject({
      reference: '1 worker',
      ratios: [expect.any(Number)],
    });
    expect(res.rows.find((r) => r.measure.endsWith('1 worker (first spawn → last exit)'))).toMatchObject({
      reference: 'plain import',
    });
    expect(res.rows.filter((r) => r.measure.endsWith('where the limit sits'))).toHaveLength(4);
    expect(res.rows.at(-1)).toMatchObject({
      measure: 'into a 3-node RethinkDB cluster',
      value: /RethinkDB: not found/,
    });
  }, 180_000);

  it('fails a run whose job did not load the documents expected', async () => {
    const server = await startServerProc(join(dir, 'server'));
    try {
      const input = join(dir, 'ten.ndjson');
      const lines = Array.from({ length: 10 }, (_, i) => JSON.stringify({ id: i })).join('\n');
      writeFileSync(input, `${lines}\n`);
      const o = {
        cwd: dir,
        file: input,
        table: 'ten',
        target: `wharf://127.0.0.1:${server.httpPort}`,
        taskBytes: 1 << 20,
        workers: 1,
      };
      await expect(cliJob(CLI, { ...o, job: 'eleven', docs: 11 })).rejects.toThrow(
        /the job reports complete: 1 of 1 tasks done; 10 documents read, 10 written, 0 rejected, expected 11/,
      );
      const ok = await cliJob(CLI, { ...o, job: 'ten', table: 'ten2', docs: 10 });
      expect(ok.totals).toEqual({ tasks: 1, docs: 10, written: 10, rejected: 0 });
    } finally {
      await server.stop();
    }
  }, 120_000);

  it('needs the wharf command', () => {
    expect(missingFor('job', { installed: () => true })).toMatch(/npx wharf bench job/);
  });
});

describe('where the limit sits', () => {
  it("counts an exited child's CPU", () => {
    const before = exitedChildrenCpuMs()!;
    // A child that burns 300 ms of its own CPU, then exits.
    const r = spawnSync(process.execPath, [
      '-e',
      'const t = process.cpuUsage(); while (process.cpuUsage(t).user + process.cpuUsage(t).system < 300000);',
    ]);
    expect(r.status).toBe(0);
    expect(exitedChildrenCpuMs()! - before).toBeGreaterThanOrEqual(290);
  });

  const run = (o: { workers: number; server: number; busy: number; disk: number; tasks?: number[] }) =>
    ({
      docs: 1_000_000,
      tasks: 16,
      per_worker: (o.tasks ?? [16]).map((t) => ({ process_ms: 1000, tasks_done: t, handed_over: 0 })),
      usage: {
        wallMs: 1000,
        exitedChildrenCpuMs: o.workers,
        procCpuMs: o.server,
        machineBusyMs: o.busy * 2000,
        machineBusyShare: o.busy,
        stealShare: 0,
        diskBusyMs: o.disk * 1000,
        diskBusyShare: o.disk,
        diskWrittenBytes: 0,
      },
    }) as JobSample;

  it('names the disk, the CPU and whose, or neither', () => {
    expect(limitOf([run({ workers: 500, server: 300, busy: 0.5, disk: 0.9 })], 2, 'server').verdict).toBe('disk');
    expect(limitOf([run({ workers: 1400, server: 500, busy: 0.97, disk: 0.1 })], 2, 'server').verdict).toBe(
      'CPU, mostly the workers',
    );
    expect(limitOf([run({ workers: 400, server: 1400, busy: 0.95, disk: 0.1 })], 2, 'server').verdict).toBe(
      'CPU, mostly the server',
    );
    expect(limitOf([run({ workers: 300, server: 300, busy: 0.99, disk: 0.1 })], 2, 'server').verdict).toBe(
      'CPU, shared: other work on the machine held 69 % of its CPUs',
    );
    expect(limitOf([run({ workers: 300, server: 200, busy: 0.3, disk: 0.1 })], 2, 'server').verdict).toMatch(
      /^neither CPU nor disk saturated/,
    );
  });

  it('gives the CPU per million documents, and the bound the busiest worker puts on the speed-up', () => {
    const one = limitOf([run({ workers: 1300, server: 2100, busy: 1, disk: 0.1 })], 2, 'server').detail;
    expect(one).toContain('per 1M docs 1.30 s + 2.10 s');
    expect(one).not.toContain('busiest');
    const four = limitOf([run({ workers: 3000, server: 2600, busy: 1, disk: 0.1, tasks: [5, 2, 3, 6] })], 2, 'server');
    expect(four.detail).toContain('the busiest worker finished 6 of 16 tasks: at most 2.67× one worker');
  });
});
