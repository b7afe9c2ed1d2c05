/**
 * The admin UI in a real browser (Debian's chromium driven by playwright-core) against a real
 * server process: the live dashboard, creating a table, importing a generated file (count and
 * chart), editing a document, running and finished jobs with a job's tasks and workers, a bad
 * file's errors, and the stats feed reconnecting after a restart. Every scenario runs at 1280 px
 * and at 400 px wide; screenshots go to test/admin/artifacts/ (gitignored).
 *
 * Skipped, with a message, only when /usr/bin/chromium is missing (`apt-get install -y chromium`)
 * outside CI; under CI (`CI` set, as `.ci/run` runs) a missing browser fails the suite.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { JobWorker, openStore, type TaskOutcome, type TaskRun } from '@wharf/client';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir, removeDir, type SpawnedServer, spawnServer } from '../helpers/spawn-server.ts';

/** Debian's chromium; WHARF_CHROMIUM overrides the path (e.g. to check the skip). */
const CHROMIUM = process.env.WHARF_CHROMIUM ?? '/usr/bin/chromium';
const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '../..');
const ADMIN = join(ROOT, 'apps/admin');
const ARTIFACTS = join(HERE, 'artifacts');
const LAUNCH_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium && process.env.CI) {
  throw new Error(
    `test/admin: ${CHROMIUM} is missing, and under CI the admin UI must be tested (apt-get install -y chromium)`,
  );
}
if (!hasChromium) console.warn(`test/admin: skipped: ${CHROMIUM} is missing (install it: apt-get install -y chromium)`);

/**
 * Build the admin UI from the current sources (about a second) into a temporary directory that
 * this test's server serves (WHARF_ADMIN_DIST), so the test never runs a stale build and never
 * races another test reading apps/admin/dist.
 */
function build(outDir: string): void {
  const vite = join(ROOT, 'node_modules/vite/bin/vite.js');
  const r = spawnSync(process.execPath, [vite, 'build', '--outDir', outDir, '--emptyOutDir'], {
    cwd: ADMIN,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`building the admin UI failed:\n${r.stdout}\n${r.stderr}`);
}

async function api(server: SpawnedServer, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** Polls until the matcher passes; generous, since the suite shares the machine with other tests. */
function eventually<T>(fn: () => Promise<T> | T) {
  return expect.poll(fn, { timeout: 30_000, interval: 100 });
}

/**
 * A real job worker (@wharf/client) in this process on the server's coordination table, over a
 * made-up 3000-byte input cut into three tasks. `runTask` decides what each task does: the
 * documents it reports are checkpoints in the job's table, which is all the Jobs view reads.
 */
async function startJobWorker(server: SpawnedServer, job: string, runTask: (run: TaskRun) => Promise<TaskOutcome>) {
  const store = await openStore(`wharf://127.0.0.1:${server.http.port}`);
  const worker = new JobWorker(store, {
    job,
    table: `${job}_docs`,
    format: 'ndjson',
    inputs: [{ path: `${job}.ndjson`, size: 3000 }],
    taskBytes: 1000,
    splittable: true,
    heartbeatMs: 50,
    deadAfterMs: 60_000,
    reserveBytes: 1000,
  });
  const leave = new AbortController();
  const done = worker.run(runTask, {}, leave.signal).finally(() => store.close());
  return { worker, done, leave: () => leave.abort() };
}

/** A task's checkpoint after `docs` documents, `share` of the way through its bytes. */
const checkpoint = (run: TaskRun, share: number, docs: number) => ({
  offset: run.task.start + Math.round((run.task.end - run.task.start) * share),
  lastLine: docs - 1,
  docs,
  written: docs,
  rejected: 0,
  present: 0,
});

const WIDTHS = [
  { name: 'wide', width: 1280, height: 900 },
  { name: 'narrow', width: 400, height: 860 },
] as const;

describe.skipIf(!hasChromium)(
  hasChromium
    ? 'admin UI in chromium'
    : `admin UI in chromium: SKIPPED, ${CHROMIUM} is missing (apt-get install -y chromium)`,
  () => {
    let browser: Browser;
    let server: SpawnedServer;
    let tmp: string;
    let dist: string;

    beforeAll(async () => {
      mkdirSync(ARTIFACTS, { recursive: true });
      tmp = makeTempDir('wharf-admin-files-');
      dist = join(tmp, 'dist');
      build(dist);
      server = await spawnServer({ env: { WHARF_ADMIN_DIST: dist } });
      browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS, headless: true });
    }, 120_000);

    afterAll(async () => {
      await browser?.close();
      await server?.stop();
      if (server) removeDir(server.dataDir);
      if (tmp) removeDir(tmp);
    });

    for (const size of WIDTHS) {
      describe(`at ${size.width} px`, () => {
        let context: BrowserContext;
        let page: Page;
        const pageErrors: string[] = [];
        const table = `people_${size.name}`;
        const shot = (name: string) =>
          page.screenshot({ path: join(ARTIFACTS, `${size.name}-${name}.png`), fullPage: true });

        beforeAll(async () => {
          context = await browser.newContext({ viewport: { width: size.width, height: size.height } });
          page = await context.newPage();
          page.on('pageerror', (err) => pageErrors.push(err.message));
        });

        afterAll(async () => {
          await context?.close();
          expect(pageErrors, 'uncaught errors in the page').toEqual([]);
        });

        it('the dashboard renders live numbers from /ws/stats', async () => {
          await page.goto(`${server.url}/`);
          await page.getByTestId('feed-state').filter({ hasText: 'live' }).waitFor();
          const uptime = page.getByTestId('stat-uptime').locator('.stat-value');
          await uptime.waitFor();
          const first = await uptime.textContent();
          // Writes from outside the browser show up as a rate once two snapshots bracket them.
          await api(server, 'POST', '/api/tables', { name: `dash_${size.name}` });
          await api(
            server,
            'POST',
            `/api/tables/dash_${size.name}/documents`,
            Array.from({ length: 50 }, (_, i) => ({ id: i })),
          );
          await eventually(() => uptime.textContent()).not.toBe(first);
          const written = page.getByTestId('stat-writes').locator('.stat-hint');
          await eventually(async () =>
            Number((await written.textContent())?.split(' ')[0]?.replaceAll(',', '')),
          ).toBeGreaterThanOrEqual(50);
          await eventually(() => page.getByTestId('chart-writes').locator('canvas').count()).toBe(1);
          await shot('dashboard');
        });

        it('creates a table', async () => {
          await page.getByTestId('nav-tables').click();
          const form = page.getByTestId('create-table-form');
          await form.locator('input[name=name]').fill(table);
          await form.locator('input[name=primaryKey]').fill('id');
          await form.getByRole('button', { name: 'Create table' }).click();
          await page.getByTestId(`table-row-${table}`).waitFor();
          expect((await api(server, 'GET', `/api/tables/${table}`)).primaryKey).toBe('id');
          // Creating it again shows the server's error.
          await form.locator('input[name=name]').fill(table);
          await form.getByRole('button', { name: 'Create table' }).click();
          await eventually(() => page.getByTestId('tables-error').textContent()).toContain('WHARF_ERR_TABLE_EXISTS');
          await shot('tables');
        });

        it('imports a generated NDJSON file and shows the count and the chart', async () => {
          const n = 100_000;
          const file = join(tmp, `people-${size.name}.ndjson`);
          writeFileSync(
            file,
            `${Array.from({ length: n }, (_, i) =>
              JSON.stringify({ id: i, name: `person ${i}`, age: i % 90, tags: ['a', 'b'] }),
            ).join('\n')}\n`,
          );
          await page.getByTestId('nav-imports').click();
          await page.getByTestId('import-table').fill(table);
          await page.getByTestId('import-file').setInputFiles(file);
          await page.getByTestId('import-start').click();
          await page.getByTestId('import-report').waitFor({ timeout: 60_000 });
          expect(await page.getByTestId('report-inserted').textContent()).toBe(n.toLocaleString('en-US'));
          expect(await page.getByTestId('report-errors').textContent()).toBe('0');
          await eventually(() => page.getByTestId('report-table-count').textContent()).toContain(
            n.toLocaleString('en-US'),
          );
          expect(await page.getByTestId('chart-import').locator('canvas').count()).toBe(1);
          expect(Number(await page.getByTestId('chart-import').getAttribute('data-points'))).toBeGreaterThanOrEqual(2);
          expect(await page.getByTestId('import-bar').getAttribute('value')).toBe('100');
          expect((await api(server, 'GET', `/api/tables/${table}/count`)).count).toBe(n);
          // The run is in the server's history.
          const runs = (await api(server, 'GET', '/api/imports')).runs as {
            table: string;
            status: string;
            inserted: number;
          }[];
          expect(runs.find((r) => r.table === table)).toMatchObject({ status: 'done', inserted: n });
          await page.getByTestId('import-run').first().waitFor();
          await shot('import');
        });

        it('edits a document in the data explorer, with inline validation', async () => {
          await page.goto(`${server.url}/#/explorer/${table}`);
          await page.getByTestId('document-row').first().waitFor();
          await eventually(() => page.getByTestId('explorer-count').textContent()).toBe('100,000');
          await page.getByTestId('edit-document').first().click();
          const editor = page.getByTestId('json-editor');
          const original = JSON.parse(await editor.inputValue()) as { id: number };
          expect(original.id).toBe(0);
          await editor.fill('{"id": 0, "name": ');
          await eventually(() => page.getByTestId('json-error').textContent()).toContain('Invalid JSON');
          expect(await page.getByTestId('save-document').isDisabled()).toBe(true);
          await shot('explorer-invalid');
          await editor.fill(JSON.stringify({ ...original, name: 'edited in the browser', age: 41 }, null, 2));
          await page.getByTestId('json-error').waitFor({ state: 'detached' });
          await page.getByTestId('save-document').click();
          await eventually(() => page.getByTestId('explorer-notice').textContent()).toContain('1 replaced');
          expect(await api(server, 'GET', `/api/tables/${table}/documents/0?keyType=number`)).toMatchObject({
            id: 0,
            name: 'edited in the browser',
            age: 41,
          });
          // Paging moves on to the next keys.
          await page.getByTestId('next-page').click();
          await eventually(() => page.getByTestId('document-row').first().locator('td').first().textContent()).toBe(
            '25',
          );
          // A key range: 100 ≤ id < 103.
          await page.getByTestId('range-gte').fill('100');
          await page.getByTestId('range-lt').fill('103');
          await page.getByRole('button', { name: 'Browse' }).click();
          await eventually(() => page.getByTestId('document-row').count()).toBe(3);
          expect(await page.getByTestId('document-row').first().locator('td').first().textContent()).toBe('100');
          // Get by key opens the edited document.
          await page.getByTestId('get-key').fill('0');
          await page.getByRole('button', { name: 'Get', exact: true }).click();
          await eventually(() => page.getByTestId('json-editor').inputValue()).toContain('edited in the browser');
          await shot('explorer');
        });

        it("lists running and finished jobs, and shows a job's tasks and workers", async () => {
          // A finished job: every task done at once.
          const finished = await startJobWorker(server, `done-${size.name}`, async (run) => ({
            complete: true,
            low: checkpoint(run, 1, 100),
          }));
          await finished.done;
          // A running one: its first task done, the second held half way, the third waiting.
          const running = await startJobWorker(server, `run-${size.name}`, (run) =>
            run.task.index === 0
              ? Promise.resolve({ complete: true, low: checkpoint(run, 1, 100) })
              : new Promise((resolve) => {
                  const low = checkpoint(run, 0.5, 50);
                  run.progress(low, 250, true);
                  run.signal.addEventListener('abort', () => resolve({ complete: false, low }));
                }),
          );
          try {
            await page.goto(`${server.url}/`);
            await page.getByTestId('nav-jobs').click();
            const runningRow = page.getByTestId('jobs-running').getByTestId(`job-row-run-${size.name}`);
            await eventually(() => runningRow.getByTestId('job-docs').textContent()).toBe('150');
            expect(await runningRow.getByTestId('job-tasks-done').textContent()).toContain('1 / 3');
            expect(await runningRow.getByTestId('state').textContent()).toBe('running');
            const finishedRow = page.getByTestId('jobs-finished').getByTestId(`job-row-done-${size.name}`);
            expect(await finishedRow.getByTestId('job-tasks-done').textContent()).toContain('3 / 3');
            expect(await finishedRow.getByTestId('state').textContent()).toBe('complete');
            await shot('jobs');

            await runningRow.getByRole('link', { name: `run-${size.name}` }).click();
            const detail = page.getByTestId('job-detail');
            await eventually(() => detail.getByTestId('job-task').count()).toBe(3);
            const task = (i: number) => detail.locator(`[data-testid=job-task][data-task="${i}"]`);
            expect(await task(0).getAttribute('data-state')).toBe('done');
            expect(await task(1).getAttribute('data-state')).toBe('running');
            expect(await task(1).getByTestId('task-progress').textContent()).toContain('50%');
            expect(await task(1).getByTestId('task-docs').textContent()).toBe('50');
            expect(await task(1).textContent()).toContain(running.worker.id);
            expect(await task(2).getAttribute('data-state')).toBe('waiting');
            const worker = detail.locator(`[data-testid=job-worker][data-worker="${running.worker.id}"]`);
            // Its heartbeat saying so is a write of its own, apart from the checkpoint.
            await eventually(() => worker.getByTestId('state').textContent()).toBe('running');
            await shot('job-detail');

            // The worker leaves: the next reads show it dead, its task released and the job stalled.
            running.leave();
            await running.done;
            await eventually(() => worker.getByTestId('state').textContent()).toBe('dead');
            await eventually(() => task(1).getAttribute('data-state')).toBe('released');
            await eventually(() => runningRow.getByTestId('state').textContent()).toBe('stalled');
            // A job the table does not hold: the server's error, on the page.
            await page.goto(`${server.url}/#/jobs/nope-${size.name}`);
            await eventually(() => page.getByTestId('job-error').textContent()).toContain(
              `WHARF_ERR_JOB_NOT_FOUND (404): No job \`nope-${size.name}\` in table \`wharf_jobs\``,
            );
          } finally {
            running.leave();
            await running.done.catch(() => {});
          }
        });

        it('shows the errors of a bad file', async () => {
          const bad = join(tmp, `bad-${size.name}.ndjson`);
          writeFileSync(bad, '{"id": "a1"}\n{"id": "a2"}\n{"id": "a3", broken\n{"id": "a4"}\n');
          await page.getByTestId('nav-imports').click();
          await page.getByTestId('import-table').fill(`bad_${size.name}`);
          await page.getByTestId('import-file').setInputFiles(bad);
          await page.getByTestId('import-start').click();
          await page.getByTestId('import-report').waitFor({ timeout: 30_000 });
          expect(await page.getByTestId('report-errors').textContent()).toBe('1');
          expect(await page.getByTestId('report-inserted').textContent()).toBe('3');
          expect(await page.getByTestId('import-doc-errors').textContent()).toContain('line 3');
          await shot('bad-ndjson');

          const notJson = join(tmp, `bad-${size.name}.json`);
          writeFileSync(notJson, '[{"id": 1}, {"id": 2},');
          await page.getByTestId('import-file').setInputFiles(notJson);
          await page.getByTestId('import-start').click();
          await eventually(() => page.getByTestId('import-fatal').textContent()).toContain('is not valid JSON');
          const runs = (await api(server, 'GET', '/api/imports')).runs as { file: string; status: string }[];
          expect(runs.find((r) => r.file === `bad-${size.name}.json`)?.status).toBe('failed');
          // A file that does not parse creates no table.
          const other = join(tmp, `other-${size.name}.json`);
          writeFileSync(other, '{"id": 1');
          await page.getByTestId('import-table').fill(`never_${size.name}`);
          await page.getByTestId('import-file').setInputFiles(other);
          await page.getByTestId('import-start').click();
          await eventually(() => page.getByTestId('import-fatal').textContent()).toContain(
            `other-${size.name}.json is not valid JSON`,
          );
          expect((await api(server, 'GET', '/api/tables')).tables.map((t: { name: string }) => t.name)).not.toContain(
            `never_${size.name}`,
          );
          await shot('bad-json');
        });
      });
    }

    it('imports a CSV file (parsed in the browser) at 1280 px', async () => {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      try {
        const csv = join(tmp, 'cities.csv');
        writeFileSync(
          csv,
          'id,name,population,capital\n' +
            Array.from({ length: 500 }, (_, i) => `${i},"City, ${i}",${i * 1000},${i % 2 === 0}`).join('\n') +
            '\n',
        );
        await page.goto(`${server.url}/#/imports`);
        await page.getByTestId('import-table').fill('cities');
        await page.getByTestId('import-file').setInputFiles(csv);
        await page.getByTestId('import-start').click();
        await page.getByTestId('import-report').waitFor({ timeout: 30_000 });
        expect(await page.getByTestId('report-inserted').textContent()).toBe('500');
        expect(await api(server, 'GET', '/api/tables/cities/documents/7?keyType=number')).toEqual({
          id: 7,
          name: 'City, 7',
          population: 7000,
          capital: false,
        });
        await page.screenshot({ path: join(ARTIFACTS, 'wide-import-csv.png'), fullPage: true });
      } finally {
        await context.close();
      }
    });

    it('reconnects the stats feed after the server restarts', async () => {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      try {
        await page.goto(`${server.url}/`);
        await page.getByTestId('feed-state').filter({ hasText: 'live' }).waitFor();
        const { port } = server.http;
        const dataDir = server.dataDir;
        expect(await server.stop()).toBe(0);
        await page.getByTestId('feed-error').waitFor({ timeout: 15_000 });
        await page.screenshot({ path: join(ARTIFACTS, 'wide-reconnecting.png') });
        server = await spawnServer({ dataDir, args: ['--http-port', String(port)], env: { WHARF_ADMIN_DIST: dist } });
        await page.getByTestId('feed-state').filter({ hasText: 'live' }).waitFor({ timeout: 30_000 });
        await page.getByTestId('feed-error').waitFor({ state: 'detached' });
        // The data survived the restart and the uptime restarted from zero.
        expect((await api(server, 'GET', '/api/tables/people_wide/count')).count).toBe(100_000);
      } finally {
        await context.close();
      }
    });
    it('asks for the admin password when the server has one, then shows live numbers and tables', async () => {
      const password = 'ui secret';
      const locked = await spawnServer({ env: { WHARF_ADMIN_DIST: dist, WHARF_PASSWORD: password } });
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      try {
        const auth = { authorization: `Bearer ${password}` };
        expect(
          (
            await fetch(`${locked.url}/api/tables`, {
              method: 'POST',
              headers: { ...auth, 'content-type': 'application/json' },
              body: '{"name":"locked"}',
            })
          ).status,
        ).toBe(201);
        await page.goto(`${locked.url}/`);
        await page.getByTestId('login').waitFor();
        // A wrong password keeps the form, with the server's message.
        await page.getByTestId('login-password').fill('wrong');
        await page.getByTestId('login-submit').click();
        await page.getByTestId('login').getByRole('alert').waitFor();
        expect(await page.getByTestId('login').getByRole('alert').textContent()).toContain('Wrong password');
        await page.getByTestId('login-password').fill(password);
        await page.getByTestId('login-submit').click();
        // The stats feed authenticates with the subprotocol token; the API with the header.
        await page.getByTestId('feed-state').filter({ hasText: 'live' }).waitFor({ timeout: 30_000 });
        await page.goto(`${locked.url}/#/tables`);
        await page.getByText('locked', { exact: true }).first().waitFor({ timeout: 30_000 });
        await page.screenshot({ path: join(ARTIFACTS, 'wide-login.png') });
      } finally {
        await context.close();
        await locked.stop('SIGKILL');
        removeDir(locked.dataDir);
      }
    });
  },
);
