/**
 * The documents of a distributed import (`wharf import --job`): their shapes, and how a job is
 * read from them. Written by @wharf/client's job workers into a coordination table on the target;
 * read by the workers, by `wharf import --status` and by the server's /api/jobs. The protocol and
 * its invariants: packages/client/src/job/job.ts and docs/ARCHITECTURE.md.
 *
 *   JOB/job                    the definition: table, format, inputs, tasks
 *   JOB/member/000003          a worker's join slot: the join order every worker agrees on
 *   JOB/beat/WORKER            its heartbeat: a counter, its state, its task, its rate
 *   JOB/task/000007/000002     task 7's epoch 2: who holds it, its checkpoint, done/released
 */

/** The table that holds every job's documents unless told otherwise. */
export const DEFAULT_JOB_TABLE = 'wharf_jobs';

export interface CoordinationDoc {
  id: string;
  [field: string]: unknown;
}

export interface JobInput {
  path: string;
  size: number;
}

export interface JobTask {
  index: number;
  /** The key jump-hashed: the input path and the range's first byte. */
  key: string;
  path: string;
  /** Byte range [start, end) of the input; a record belongs to the task its first byte is in. */
  start: number;
  end: number;
}

export interface JobDefinition extends CoordinationDoc {
  kind: 'job';
  job: string;
  table: string;
  format: string;
  inputs: JobInput[];
  taskBytes: number;
  tasks: JobTask[];
  createdAt: number;
  createdBy: string;
}

/** Progress of a task: everything before `offset` is written or rejected, and durable. */
export interface TaskLow {
  offset: number;
  /** Line, counted from the task's first byte, of the last record before `offset`. */
  lastLine: number | null;
  docs: number;
  written: number;
  rejected: number;
  present: number;
}

export interface TaskEpoch extends CoordinationDoc {
  kind: 'task';
  job: string;
  task: number;
  epoch: number;
  worker: string;
  low: TaskLow;
  /** Furthest input offset this task may have sent. */
  high: { offset: number };
  done: boolean;
  released: boolean;
  startedAt: number;
  updatedAt: number;
  docsPerSec: number;
}

export interface WorkerBeat extends CoordinationDoc {
  kind: 'beat';
  job: string;
  worker: string;
  host: string;
  pid: number;
  beat: number;
  at: number;
  state: 'running' | 'idle' | 'done' | 'left';
  task: number | null;
  docsPerSec: number;
}

export interface JobMember extends CoordinationDoc {
  kind: 'member';
  slot: number;
  worker: string;
}

export const jobPrefix = (job: string) => `${job}/`;

/** Everything the coordination table says about one job, read at once. */
export class JobView {
  readonly definition: JobDefinition | null;
  /** Workers in join order. */
  readonly workers: string[];
  readonly beats = new Map<string, WorkerBeat>();
  /** Each task's highest epoch. */
  readonly latest = new Map<number, TaskEpoch>();

  constructor(job: string, docs: readonly CoordinationDoc[]) {
    let definition: JobDefinition | null = null;
    const members: JobMember[] = [];
    for (const doc of docs) {
      const rest = doc.id.slice(job.length + 1);
      if (rest === 'job') definition = doc as JobDefinition;
      else if (rest.startsWith('member/')) members.push(doc as JobMember);
      else if (rest.startsWith('beat/')) this.beats.set((doc as WorkerBeat).worker, doc as WorkerBeat);
      else if (rest.startsWith('task/')) {
        const t = doc as TaskEpoch;
        const prev = this.latest.get(t.task);
        if (!prev || t.epoch > prev.epoch) this.latest.set(t.task, t);
      }
    }
    this.definition = definition;
    members.sort((a, b) => a.slot - b.slot);
    this.workers = members.map((m) => m.worker);
  }

  get complete(): boolean {
    const tasks = this.definition?.tasks ?? [];
    return tasks.length > 0 && tasks.every((t) => this.latest.get(t.index)?.done === true);
  }

  /** Sums of the tasks' checkpoints: the job's documents so far. */
  totals(): { docs: number; written: number; rejected: number; present: number; tasksDone: number; tasks: number } {
    const out = {
      docs: 0,
      written: 0,
      rejected: 0,
      present: 0,
      tasksDone: 0,
      tasks: this.definition?.tasks.length ?? 0,
    };
    for (const t of this.latest.values()) {
      out.docs += t.low.docs;
      out.written += t.low.written;
      out.rejected += t.low.rejected;
      out.present += t.low.present;
      if (t.done) out.tasksDone++;
    }
    return out;
  }
}

export interface JobStatus {
  job: string;
  found: boolean;
  table: string | null;
  format: string | null;
  complete: boolean;
  docsPerSec: number;
  totals: ReturnType<JobView['totals']>;
  workers: {
    worker: string;
    host: string | null;
    pid: number | null;
    state: string;
    lastBeatMsAgo: number | null;
    task: number | null;
    docsPerSec: number;
  }[];
  tasks: {
    task: number;
    path: string;
    start: number;
    end: number;
    state: 'waiting' | 'running' | 'released' | 'orphaned' | 'done';
    holder: string | null;
    epoch: number;
    progress: number;
    docs: number;
    written: number;
    rejected: number;
    docsPerSec: number;
  }[];
}

/**
 * A job as its coordination table shows it. A worker whose last heartbeat is older than
 * `deadAfterMs` (its clock against this one's) is shown dead, its unfinished task orphaned.
 */
export function jobStatus(job: string, view: JobView, deadAfterMs: number, now = Date.now()): JobStatus {
  const def = view.definition;
  const workers = view.workers.map((w) => {
    const b = view.beats.get(w);
    const ago = b ? Math.max(0, now - b.at) : null;
    const dead = b?.state === 'left' || ago === null || ago > deadAfterMs;
    return {
      worker: w,
      host: b?.host ?? null,
      pid: b?.pid ?? null,
      state: b?.state === 'done' ? 'done' : dead ? 'dead' : (b?.state ?? 'joining'),
      lastBeatMsAgo: ago,
      task: b?.task ?? null,
      docsPerSec: b?.docsPerSec ?? 0,
    };
  });
  const deadWorkers = new Set(workers.filter((w) => w.state === 'dead').map((w) => w.worker));
  const tasks = (def?.tasks ?? []).map((t) => {
    const e = view.latest.get(t.index);
    const state = !e
      ? 'waiting'
      : e.done
        ? 'done'
        : e.released
          ? 'released'
          : deadWorkers.has(e.worker)
            ? 'orphaned'
            : 'running';
    const span = Math.max(1, t.end - t.start);
    return {
      task: t.index,
      path: t.path,
      start: t.start,
      end: t.end,
      state: state as JobStatus['tasks'][number]['state'],
      holder: e?.worker ?? null,
      epoch: e?.epoch ?? 0,
      progress: e?.done ? 1 : e ? Math.min(1, Math.max(0, (e.low.offset - t.start) / span)) : 0,
      docs: e?.low.docs ?? 0,
      written: e?.low.written ?? 0,
      rejected: e?.low.rejected ?? 0,
      docsPerSec: state === 'running' ? (e?.docsPerSec ?? 0) : 0,
    };
  });
  return {
    job,
    found: def !== null,
    table: def?.table ?? null,
    format: def?.format ?? null,
    complete: view.complete,
    docsPerSec: tasks.reduce((s, t) => s + t.docsPerSec, 0),
    totals: view.totals(),
    workers,
    tasks,
  };
}
