/**
 * Jobs: the distributed imports (`wharf import FILES --job NAME`) whose workers coordinate in this
 * server's `wharf_jobs` table, polled every few seconds. Running jobs first, then finished ones;
 * a job's page (`#/jobs/<name>`) shows its workers (state, last heartbeat, task, docs/s) and its
 * tasks (state, holder, progress, documents). The server reads them as `wharf import --job NAME
 * --status` does; a worker silent for 10 s is shown dead and its unfinished task orphaned.
 */
import { html } from 'htm/preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { api, describeError, type JobList, type JobStatus, type JobSummary } from '../api.ts';
import { formatBytes, formatCount, formatDuration, formatNumber, formatTime } from '../format.ts';

/** How often the list and the open job are read again. */
export const JOBS_POLL_MS = 3000;

const jobHref = (job: string) => `#/jobs/${encodeURIComponent(job)}`;

/** complete; running while a worker is live; stalled when none is (start a worker to go on). */
function jobState(j: JobSummary): 'complete' | 'running' | 'stalled' {
  if (j.complete) return 'complete';
  return j.workers.live > 0 ? 'running' : 'stalled';
}

const BADGE: Record<string, string> = {
  complete: 'done',
  done: 'done',
  running: 'running',
  idle: 'running',
  joining: 'running',
  stalled: 'failed',
  dead: 'failed',
  orphaned: 'failed',
  released: '',
  waiting: '',
};

function Badge({ state, title }: { state: string; title?: string }) {
  return html`<span class=${`badge ${BADGE[state] ?? ''}`} title=${title ?? ''} data-testid="state">${state}</span>`;
}

function Progress({ value, label }: { value: number; label: string }) {
  return html`<span class="bar-cell"><progress max="1" value=${value}></progress> <span class="num">${label}</span></span>`;
}

const pct = (v: number) => `${Math.floor(v * 100)}%`;

/** Calls `load` now and every JOBS_POLL_MS; the last answer and the last error (cleared by a success). */
function usePolled<T>(load: (() => Promise<T>) | null): { data: T | null; error: string | null } {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setData(null);
    setError(null);
    if (!load) return;
    let live = true;
    const tick = async () => {
      try {
        const d = await load();
        if (live) {
          setData(d);
          setError(null);
        }
      } catch (err) {
        if (live) setError(describeError(err));
      }
    };
    void tick();
    const t = setInterval(() => void tick(), JOBS_POLL_MS);
    return () => {
      live = false;
      clearInterval(t);
    };
  }, [load]);
  return { data, error };
}

function JobRows({ jobs, selected }: { jobs: JobSummary[]; selected: string | null }) {
  return html`<div class="table-scroll"><table class="grid jobs">
    <thead><tr><th>Job</th><th>Table</th><th>State</th><th>Tasks</th><th class="num">Read</th><th class="num">Written</th><th class="num">Rejected</th><th class="num">docs/s</th><th>Workers</th><th>Last activity</th></tr></thead>
    <tbody>${jobs.map((j) => {
      const state = jobState(j);
      return html`<tr key=${j.job} class=${j.job === selected ? 'selected' : ''} data-testid=${`job-row-${j.job}`}>
        <td><a href=${jobHref(j.job)}>${j.job}</a></td>
        <td>${j.table ?? '–'} <span class="muted small">${j.format ?? ''}</span></td>
        <td><${Badge} state=${state} title=${state === 'stalled' ? 'No live worker: start `wharf import … --job` again to go on' : ''} /></td>
        <td data-testid="job-tasks-done"><${Progress} value=${j.tasks ? j.tasksDone / j.tasks : 0} label=${`${j.tasksDone} / ${j.tasks}`} /></td>
        <td class="num" data-testid="job-docs">${formatCount(j.docs)}</td>
        <td class="num">${formatCount(j.written)}</td>
        <td class="num">${formatCount(j.rejected)}</td>
        <td class="num">${formatNumber(j.docsPerSec)}</td>
        <td data-testid="job-workers-count">${j.workers.live} live${j.workers.dead ? `, ${j.workers.dead} dead` : ''}${j.workers.done ? `, ${j.workers.done} done` : ''}</td>
        <td>${j.updatedAt === null ? '–' : formatTime(j.updatedAt)}</td>
      </tr>`;
    })}</tbody>
  </table></div>`;
}

function JobDetail({ status }: { status: JobStatus }) {
  const t = status.totals;
  const count = (s: string) => status.tasks.filter((x) => x.state === s).length;
  return html`<div data-testid="job-detail">
    <h3>${status.job} <span class="muted small">→ table ${status.table} (${status.format})</span></h3>
    <div class="stats-grid">
      <div class="stat"><div class="stat-label">state</div><div class="stat-value">${status.complete ? 'complete' : 'in progress'}</div>
        <div class="stat-hint">${count('done')} done, ${count('running')} running, ${count('released')} released, ${count('orphaned')} orphaned, ${count('waiting')} waiting</div></div>
      <div class="stat"><div class="stat-label">tasks done</div><div class="stat-value" data-testid="job-detail-tasks">${t.tasksDone} / ${t.tasks}</div></div>
      <div class="stat"><div class="stat-label">documents read</div><div class="stat-value" data-testid="job-detail-docs">${formatCount(t.docs)}</div>
        <div class="stat-hint">${formatCount(t.written)} written, ${formatCount(t.rejected)} rejected</div></div>
      <div class="stat"><div class="stat-label">documents/s</div><div class="stat-value">${formatNumber(status.docsPerSec)}</div></div>
    </div>
    <h3>Workers</h3>
    ${
      status.workers.length === 0
        ? html`<p class="muted">No worker has joined.</p>`
        : html`<div class="table-scroll"><table class="grid" data-testid="job-workers">
      <thead><tr><th>Worker</th><th>Host</th><th class="num">pid</th><th>State</th><th>Last beat</th><th class="num">Task</th><th class="num">docs/s</th></tr></thead>
      <tbody>${status.workers.map(
        (w) => html`<tr key=${w.worker} data-testid="job-worker" data-worker=${w.worker}>
        <td><code>${w.worker}</code></td><td>${w.host ?? '–'}</td><td class="num">${w.pid ?? '–'}</td>
        <td><${Badge} state=${w.state} /></td>
        <td>${w.lastBeatMsAgo === null ? '–' : `${formatDuration(w.lastBeatMsAgo)} ago`}</td>
        <td class="num">${w.task ?? '–'}</td><td class="num">${formatNumber(w.docsPerSec)}</td>
      </tr>`,
      )}</tbody>
    </table></div>`
    }
    <h3>Tasks</h3>
    <div class="table-scroll"><table class="grid" data-testid="job-tasks">
      <thead><tr><th class="num">Task</th><th>Input</th><th>Bytes</th><th>State</th><th>Holder</th><th class="num">Epoch</th><th>Progress</th><th class="num">Docs</th><th class="num">Rejected</th><th class="num">docs/s</th></tr></thead>
      <tbody>${status.tasks.map(
        (x) => html`<tr key=${x.task} data-testid="job-task" data-task=${x.task} data-state=${x.state}>
        <td class="num">${x.task}</td><td>${x.path}</td><td>${formatBytes(x.start)} – ${formatBytes(x.end)}</td>
        <td><${Badge} state=${x.state} /></td>
        <td>${x.holder ? html`<code>${x.holder}</code>` : '–'}</td><td class="num">${x.epoch}</td>
        <td data-testid="task-progress"><${Progress} value=${x.progress} label=${pct(x.progress)} /></td>
        <td class="num" data-testid="task-docs">${formatCount(x.docs)}</td><td class="num">${formatCount(x.rejected)}</td>
        <td class="num">${formatNumber(x.docsPerSec)}</td>
      </tr>`,
      )}</tbody>
    </table></div>
  </div>`;
}

export function Jobs({ selected }: { selected: string | null }) {
  const loadList = useCallback((): Promise<JobList> => api.listJobs(), []);
  const loadJob = useCallback((): Promise<JobStatus> => api.job(selected as string), [selected]);
  const list = usePolled(loadList);
  const detail = usePolled(selected ? loadJob : null);
  const jobs = list.data?.jobs ?? null;
  const running = jobs?.filter((j) => !j.complete) ?? [];
  const finished = jobs?.filter((j) => j.complete) ?? [];

  return html`<section class="view" data-testid="view-jobs">
    <h2>Jobs</h2>
    <p class="muted small">Distributed imports (<code>wharf import FILES --job NAME --target wharf://…</code>) coordinating in this
      server's <code>${list.data?.jobTable ?? 'wharf_jobs'}</code> table, read every ${JOBS_POLL_MS / 1000} s. A worker silent for 10 s is shown dead.</p>
    ${list.error ? html`<div class="error" role="alert" data-testid="jobs-error">${list.error}</div>` : null}
    ${
      jobs === null
        ? list.error
          ? null
          : html`<p class="muted">Loading…</p>`
        : jobs.length === 0
          ? html`<p class="muted" data-testid="jobs-empty">No jobs on this server.</p>`
          : html`
      <h3>Running</h3>
      ${running.length ? html`<div data-testid="jobs-running"><${JobRows} jobs=${running} selected=${selected} /></div>` : html`<p class="muted">None.</p>`}
      <h3>Finished</h3>
      ${finished.length ? html`<div data-testid="jobs-finished"><${JobRows} jobs=${finished} selected=${selected} /></div>` : html`<p class="muted">None.</p>`}`
    }
    ${
      selected
        ? html`<div class="job-panel">
      ${detail.error ? html`<div class="error" role="alert" data-testid="job-error">${detail.error}</div>` : null}
      ${detail.data ? html`<${JobDetail} status=${detail.data} />` : detail.error ? null : html`<p class="muted">Loading ${selected}…</p>`}
    </div>`
        : jobs && jobs.length > 0
          ? html`<p class="muted small">Open a job to see its tasks and workers.</p>`
          : null
    }
  </section>`;
}
