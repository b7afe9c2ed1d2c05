/**
 * A job: one import shared by any number of worker processes on any machines (seed 001).
 *
 * The input is cut into tasks (whole files, or byte ranges of large NDJSON files). Every worker
 * registers and heartbeats in a coordination table on the target (store.ts); each task's owner is
 * `ownerOf(task key, workers in join order, live)` (jump-hash.ts), so every worker computes the
 * same owners from the same documents and a dead worker's tasks move to the live ones while no
 * other task moves. The documents (their shapes: @wharf/wire's jobs.ts) are all under the id
 * prefix `JOB/`: the definition, each worker's join slot and heartbeat, each task's epochs.
 *
 * Invariants:
 * - A task is held by the creator of its highest epoch document. Creating epoch e+1 (an insert
 *   that fails if the id exists) is the only way to take a task, so one worker wins each epoch.
 * - A worker takes a task it owns only when the previous epoch is absent, released, or held by a
 *   worker it sees dead (its beat unchanged for `deadAfterMs` of the observer's own clock: no
 *   clocks are compared across machines).
 * - A holder that sees a higher epoch of its task stops at once and writes nothing more to it
 *   (fenced). A holder that is no longer the task's owner (a worker joined) finishes what it
 *   sent, syncs, and writes its checkpoint `released`.
 * - The checkpoint's `low` is durable progress: every record before `low.offset` is written or
 *   rejected and on disk. `high.offset` is recorded durably before any record ending past it is
 *   read, so a new holder resumes at `low` and re-sends [low, high) as re-sends (a key conflict
 *   there means "already stored"): no duplicates, no gaps.
 */
import { hostname } from 'node:os';
import {
  type JobDefinition,
  type JobInput,
  type JobMember,
  type JobTask,
  JobView,
  jobPrefix,
  type TaskEpoch,
  type TaskLow,
  type WorkerBeat,
} from '@wharf/wire';
import { LoaderError } from '../errors.js';
import { ownerOf } from './jump-hash.js';
import type { CoordinationStore } from './store.js';

const pad = (n: number) => String(n).padStart(6, '0');
const taskPrefix = (job: string, task: number) => `${job}/task/${pad(task)}/`;

/** The task a worker holds, and why it was told to stop. */
interface Holding {
  task: JobTask;
  epoch: number;
  abort: AbortController;
  why?: 'released' | 'fenced';
}

/** Tasks of a job: a file per task, or byte ranges of `taskBytes` for inputs that can be split. */
export function planTasks(inputs: readonly JobInput[], taskBytes: number, splittable: boolean): JobTask[] {
  const tasks: JobTask[] = [];
  for (const input of inputs) {
    const step = splittable && taskBytes > 0 ? taskBytes : Math.max(input.size, 1);
    for (let start = 0; start === 0 || start < input.size; start += step) {
      const end = Math.min(input.size, start + step);
      tasks.push({ index: tasks.length, key: `${input.path}@${start}`, path: input.path, start, end });
    }
  }
  return tasks;
}

export async function readJob(store: CoordinationStore, job: string): Promise<JobView> {
  return new JobView(job, await store.list(jobPrefix(job)));
}

/**
 * Liveness as one observer sees it: a worker is live while its beat counter keeps changing
 * within `deadAfterMs` of this process's monotonic clock, and dead once it stops or says it left.
 */
export class Liveness {
  #seen = new Map<string, { beat: number; changedAt: number }>();
  constructor(
    readonly self: string,
    readonly deadAfterMs: number,
  ) {}

  observe(view: JobView, now = performance.now()): void {
    for (const w of view.workers) {
      const beat = view.beats.get(w)?.beat ?? -1;
      const s = this.#seen.get(w);
      if (!s || s.beat !== beat) this.#seen.set(w, { beat, changedAt: now });
    }
  }

  isLive(view: JobView, worker: string, now = performance.now()): boolean {
    if (worker === this.self) return true;
    if (view.beats.get(worker)?.state === 'left') return false;
    const s = this.#seen.get(worker);
    return s !== undefined && now - s.changedAt < this.deadAfterMs;
  }
}

/** Who owns a task in `view`, as `liveness` sees it. */
export function ownerIn(view: JobView, task: JobTask, liveness: Liveness): string | null {
  return ownerOf(task.key, view.workers, (w) => liveness.isLive(view, w));
}

export interface JobOptions {
  job: string;
  table: string;
  format: string;
  inputs: JobInput[];
  taskBytes: number;
  splittable: boolean;
  heartbeatMs: number;
  deadAfterMs: number;
  /** How far ahead of what is read the durable `high` is set, in bytes. */
  reserveBytes: number;
}

/** What a worker hands the code that imports one task. */
export interface TaskRun {
  task: JobTask;
  epoch: number;
  /** Where the previous holder stopped, or null for a fresh task. */
  resume: { low: TaskLow; high: { offset: number } } | null;
  /** Aborted when the task must stop: released to its new owner, or fenced. */
  signal: AbortSignal;
  /** Records progress (coalesced, written in the background). */
  progress(low: TaskLow, docsPerSec: number, durable: boolean): void;
  /** Resolves once `high` ≥ offset is durable: call before reading records that end past it. */
  reserve(offset: number): Promise<void>;
}

export type TaskOutcome = { complete: boolean; low: TaskLow };

export interface WorkerEvents {
  taskStarted?(run: TaskRun): void;
  taskEnded?(task: JobTask, how: 'done' | 'released' | 'fenced' | 'failed', detail?: string): void;
  note?(message: string): void;
}

/**
 * One worker of a job: registers, heartbeats, takes the tasks it owns one at a time and runs
 * each with `runTask`, hands tasks over when the owners change, and returns when every task of
 * the job is done (or `signal` aborts: it then leaves, and its tasks move to the others).
 */
export class JobWorker {
  readonly id: string;
  #store: CoordinationStore;
  #o: JobOptions;
  #liveness: Liveness;
  #beat = 0;
  #current: Holding | null = null;
  #rate = 0;
  /** The job as this worker last read it (null before its first read). */
  view: JobView | null = null;

  constructor(
    store: CoordinationStore,
    o: JobOptions,
    id = `${hostname()}-${process.pid}-${Math.random().toString(36).slice(2, 6)}`,
  ) {
    this.#store = store;
    this.#o = o;
    this.id = id;
    this.#liveness = new Liveness(id, o.deadAfterMs);
  }

  /** Creates the job or checks that it is the same one (same table, format and inputs). */
  async #define(): Promise<JobDefinition> {
    const { job, table, format, inputs, taskBytes, splittable } = this.#o;
    const def: JobDefinition = {
      id: `${job}/job`,
      kind: 'job',
      job,
      table,
      format,
      inputs,
      taskBytes,
      tasks: planTasks(inputs, taskBytes, splittable),
      createdAt: Date.now(),
      createdBy: this.id,
    };
    if (await this.#store.create(def)) return def;
    const existing = (await readJob(this.#store, job)).definition;
    if (!existing) throw new LoaderError('WHARF_ERR_TARGET', `job ${job}: its definition could not be read back`);
    const same =
      existing.table === table &&
      existing.format === format &&
      JSON.stringify(existing.inputs) === JSON.stringify(inputs) &&
      existing.taskBytes === taskBytes;
    if (!same)
      throw new LoaderError(
        'WHARF_ERR_USAGE',
        `job ${job} already exists with other settings (table ${existing.table}, format ${existing.format}, ` +
          `${existing.inputs.length} inputs: ${existing.inputs.map((i) => `${i.path} (${i.size} B)`).join(', ')}, ` +
          `task bytes ${existing.taskBytes}); give the same inputs and options, or another --job name`,
      );
    return existing;
  }

  async #join(): Promise<void> {
    const members = (await this.#store.list(`${this.#o.job}/member/`)).length;
    for (let slot = members; ; slot++) {
      const doc: JobMember = { id: `${this.#o.job}/member/${pad(slot)}`, kind: 'member', slot, worker: this.id };
      if (await this.#store.create(doc)) return;
    }
  }

  async #heartbeat(state: WorkerBeat['state']): Promise<void> {
    const doc: WorkerBeat = {
      id: `${this.#o.job}/beat/${this.id}`,
      kind: 'beat',
      job: this.#o.job,
      worker: this.id,
      host: hostname(),
      pid: process.pid,
      beat: ++this.#beat,
      at: Date.now(),
      state,
      task: this.#current?.task.index ?? null,
      docsPerSec: this.#current ? this.#rate : 0,
    };
    await this.#store.put(doc, false);
  }

  /** Runs the job's tasks this worker owns until the job is complete. Resolves with the job's view. */
  async run(
    runTask: (run: TaskRun) => Promise<TaskOutcome>,
    events: WorkerEvents = {},
    signal?: AbortSignal,
  ): Promise<JobView> {
    const def = await this.#define();
    await this.#heartbeat('idle');
    await this.#join();
    let running: Promise<void> | null = null;
    let failure: unknown = null;
    let lastBeat = performance.now();
    // The others take this worker's task deadAfterMs after its last recorded heartbeat: stop
    // loading well before that when heartbeats do not get through.
    const watchdog = setInterval(
      () => {
        const cur = this.#current;
        if (cur && !cur.why && performance.now() - lastBeat > this.#o.deadAfterMs / 2) {
          cur.why = 'fenced';
          events.note?.(`no heartbeat recorded for ${this.#o.deadAfterMs / 2} ms: stopping task ${cur.task.index}`);
          cur.abort.abort();
        }
      },
      Math.max(20, this.#o.heartbeatMs / 2),
    );
    try {
      for (;;) {
        if (failure) throw failure;
        if (signal?.aborted) {
          const cur = this.#current;
          if (cur) {
            cur.why = 'released';
            cur.abort.abort();
          }
          await running;
          break;
        }
        let view: JobView;
        try {
          await this.#heartbeat(this.#current ? 'running' : 'idle');
          lastBeat = performance.now();
          view = await readJob(this.#store, this.#o.job);
        } catch (err) {
          // A blip of the target: retry until the others would count this worker dead.
          if (performance.now() - lastBeat > this.#o.deadAfterMs) throw err;
          events.note?.(`coordination table unreachable, retrying: ${(err as Error).message}`);
          await sleep(this.#o.heartbeatMs, running);
          continue;
        }
        this.view = view;
        this.#liveness.observe(view);
        if (view.complete) break;
        const cur = this.#current;
        if (cur) {
          const latest = view.latest.get(cur.task.index);
          if (latest && latest.epoch > cur.epoch) {
            cur.why = 'fenced';
            cur.abort.abort();
          } else if (ownerIn(view, cur.task, this.#liveness) !== this.id && !cur.why) {
            cur.why = 'released';
            events.note?.(`task ${cur.task.index} now belongs to another worker: handing it over`);
            cur.abort.abort();
          }
        } else {
          const next = this.#nextTask(def, view);
          const claimed = next && (await this.#claim(next.task, next.epoch, next.resume));
          if (next && claimed) {
            running = this.#runOne(claimed, next.task, next.resume, runTask, events).catch((err) => {
              failure = err;
            });
            running.finally(() => {
              running = null;
            });
            continue; // heartbeat again at once: the claim is visible to the others
          }
        }
        await sleep(this.#o.heartbeatMs, running);
      }
    } finally {
      clearInterval(watchdog);
      // Giving up on an error: stop the task without writing to it; the others take it over.
      const cur = this.#current;
      if (cur && !cur.why) {
        cur.why = 'fenced';
        cur.abort.abort();
      }
      await running;
      await this.#heartbeat(signal?.aborted || failure ? 'left' : 'done').catch(() => {});
    }
    return (this.view = await readJob(this.#store, this.#o.job));
  }

  /** The first task, in order, that this worker owns and may take now. */
  #nextTask(def: JobDefinition, view: JobView): { task: JobTask; epoch: number; resume: TaskRun['resume'] } | null {
    for (const task of def.tasks) {
      const latest = view.latest.get(task.index);
      if (latest?.done) continue;
      if (ownerIn(view, task, this.#liveness) !== this.id) continue;
      // Held by a live worker: it hands the task over itself (or is fenced by a later epoch).
      if (latest && !latest.released && latest.worker !== this.id && this.#liveness.isLive(view, latest.worker))
        continue;
      return {
        task,
        epoch: (latest?.epoch ?? 0) + 1,
        resume: latest ? { low: latest.low, high: latest.high } : null,
      };
    }
    return null;
  }

  /** Creates the task's next epoch document: the claim. Null when another worker created it first. */
  async #claim(task: JobTask, epoch: number, resume: TaskRun['resume']): Promise<TaskEpoch | null> {
    const doc: TaskEpoch = {
      id: `${taskPrefix(this.#o.job, task.index)}${pad(epoch)}`,
      kind: 'task',
      job: this.#o.job,
      task: task.index,
      epoch,
      worker: this.id,
      low: resume?.low ?? { offset: task.start, lastLine: null, docs: 0, written: 0, rejected: 0, present: 0 },
      high: resume?.high ?? { offset: task.start },
      done: false,
      released: false,
      startedAt: Date.now(),
      updatedAt: Date.now(),
      docsPerSec: 0,
    };
    return (await this.#store.create(doc)) ? doc : null;
  }

  async #runOne(
    doc: TaskEpoch,
    task: JobTask,
    resume: TaskRun['resume'],
    runTask: (run: TaskRun) => Promise<TaskOutcome>,
    events: WorkerEvents,
  ): Promise<void> {
    const cur: Holding = { task, epoch: doc.epoch, abort: new AbortController() };
    this.#current = cur;
    // Writes of this epoch's document, one at a time, the newest state last; none once fenced.
    let writing: Promise<void> = Promise.resolve();
    const write = (durable: boolean): Promise<void> => {
      const snapshot = { ...doc, low: { ...doc.low }, high: { ...doc.high }, updatedAt: Date.now() };
      writing = writing.then(() => (cur.why === 'fenced' ? undefined : this.#store.put(snapshot, durable)));
      return writing;
    };
    const run: TaskRun = {
      task,
      epoch: doc.epoch,
      resume,
      signal: cur.abort.signal,
      progress: (low, docsPerSec, durable) => {
        doc.low = low;
        doc.docsPerSec = docsPerSec;
        this.#rate = docsPerSec;
        void write(durable).catch(() => {});
      },
      reserve: async (offset) => {
        if (offset <= doc.high.offset) return;
        // Not capped at task.end: the task's last record may end past it.
        doc.high = { offset: offset + this.#o.reserveBytes };
        if (cur.why === 'fenced') throw new LoaderError('WHARF_ERR_TARGET', `task ${task.index} was taken over`);
        await write(true);
      },
    };
    events.taskStarted?.(run);
    try {
      const outcome = await runTask(run);
      if (cur.why === 'fenced') {
        events.taskEnded?.(task, 'fenced');
        return;
      }
      doc.low = outcome.low;
      doc.done = outcome.complete;
      doc.released = !outcome.complete;
      doc.docsPerSec = 0;
      await write(true);
      events.taskEnded?.(task, outcome.complete ? 'done' : 'released');
    } catch (err) {
      events.taskEnded?.(task, cur.why === 'fenced' ? 'fenced' : 'failed', (err as Error).message);
      if (cur.why !== 'fenced') throw err;
    } finally {
      this.#current = null;
      this.#rate = 0;
    }
  }
}

/** Waits `ms`, or less if `early` settles first. */
function sleep(ms: number, early: Promise<unknown> | null): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    early?.finally(() => {
      clearTimeout(t);
      resolve();
    });
  });
}
