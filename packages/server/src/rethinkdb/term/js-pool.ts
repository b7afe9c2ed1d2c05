/**
 * The threads that run r.js: at most `workers` worker threads (started when first needed), each
 * with its V8 heap capped by `resourceLimits`, and a queue of at most `queue` evaluations waiting
 * for one. An evaluation that overruns its time limit has its thread terminated (V8 stops the
 * code wherever it is, an endless loop included) and replaced; the server's own thread never
 * runs the code, so it keeps answering every other query meanwhile. The program each thread
 * runs, and what the code can reach, is in js-worker-source.ts.
 */
import { Worker } from 'node:worker_threads';
import type { Datum } from './datum.js';
import { JS_WORKER_SOURCE } from './js-worker-source.js';

export interface JsPoolLimits {
  /** Worker threads at most. */
  workers: number;
  /** V8 old-generation heap of one worker, in MiB. */
  memoryMb: number;
  /** Evaluations waiting for a free worker at most; past it a request is refused. */
  queue: number;
}

export interface JsRequest {
  op: 'eval' | 'call';
  /** Functions are cached per session (one query) and source in the worker. */
  session: number;
  source: string;
  args?: Datum[];
  arrayLimit: number;
}

export type JsReply =
  | { kind: 'datum'; value: unknown }
  | { kind: 'function' }
  | { kind: 'error'; message: string }
  | { kind: 'timeout' }
  /** The worker died (its heap limit, or a crash); `outOfMemory` says which. */
  | { kind: 'crash'; outOfMemory: boolean }
  | { kind: 'busy' };

interface Job {
  request: JsRequest;
  timeoutMs: number;
  resolve: (r: JsReply) => void;
}

interface Slot {
  worker: Worker;
  job: (Job & { id: number; timer: NodeJS.Timeout }) | null;
}

/** setTimeout's largest delay; longer r.js time limits wait this long. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export class JsPool {
  readonly limits: JsPoolLimits;
  readonly #slots = new Set<Slot>();
  readonly #waiting: Job[] = [];
  #nextId = 1;
  #closed = false;

  constructor(limits: JsPoolLimits) {
    this.limits = limits;
  }

  /** Run one evaluation; never rejects (every outcome is a reply). */
  run(request: JsRequest, timeoutMs: number): Promise<JsReply> {
    return new Promise((resolve) => {
      if (this.#closed) return resolve({ kind: 'crash', outOfMemory: false });
      // A limit of 0 (or less) is over before the code could run, as RethinkDB's timer.
      if (!(timeoutMs > 0)) return resolve({ kind: 'timeout' });
      const job: Job = { request, timeoutMs, resolve };
      const slot = this.#idleSlot();
      if (slot) return this.#start(slot, job);
      if (this.#waiting.length >= this.limits.queue) return resolve({ kind: 'busy' });
      this.#waiting.push(job);
    });
  }

  /** Threads running now (for tests and stats). */
  get threads(): number {
    return this.#slots.size;
  }

  /** Terminate every thread; waiting and running evaluations get a crash reply. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const job of this.#waiting.splice(0)) job.resolve({ kind: 'crash', outOfMemory: false });
    await Promise.all([...this.#slots].map((s) => this.#retire(s, { kind: 'crash', outOfMemory: false })));
  }

  #idleSlot(): Slot | null {
    for (const s of this.#slots) if (s.job === null) return s;
    if (this.#slots.size >= this.limits.workers) return null;
    const worker = new Worker(JS_WORKER_SOURCE, {
      eval: true,
      env: {},
      argv: [],
      execArgv: [],
      stdout: true,
      stderr: true,
      resourceLimits: {
        maxOldGenerationSizeMb: this.limits.memoryMb,
        maxYoungGenerationSizeMb: Math.max(1, Math.min(16, Math.floor(this.limits.memoryMb / 4))),
        stackSizeMb: 4,
      },
    });
    // An idle worker does not keep the process alive.
    worker.unref();
    const slot: Slot = { worker, job: null };
    this.#slots.add(slot);
    worker.on('message', (msg: { id: number } & JsReply) => {
      const job = slot.job;
      if (job === null || msg.id !== job.id) return;
      clearTimeout(job.timer);
      slot.job = null;
      job.resolve(msg);
      this.#next(slot);
    });
    worker.on('error', (err: Error & { code?: string }) => {
      void this.#retire(slot, { kind: 'crash', outOfMemory: err.code === 'ERR_WORKER_OUT_OF_MEMORY' });
    });
    worker.on('exit', () => {
      void this.#retire(slot, { kind: 'crash', outOfMemory: false });
    });
    return slot;
  }

  #start(slot: Slot, job: Job): void {
    const id = this.#nextId++;
    const timer = setTimeout(() => void this.#retire(slot, { kind: 'timeout' }), Math.min(job.timeoutMs, MAX_TIMER_MS));
    slot.job = { ...job, id, timer };
    slot.worker.ref();
    slot.worker.postMessage({ id, ...job.request });
  }

  #next(slot: Slot | null): void {
    if (slot !== null) slot.worker.unref();
    const job = this.#waiting.shift();
    if (job === undefined) return;
    const free = slot !== null && this.#slots.has(slot) ? slot : this.#idleSlot();
    if (free === null) this.#waiting.unshift(job);
    else this.#start(free, job);
  }

  /** Take a thread out of the pool (terminated), answer its job with `reply`, start the next. */
  async #retire(slot: Slot, reply: JsReply): Promise<void> {
    if (!this.#slots.delete(slot)) return;
    const job = slot.job;
    slot.job = null;
    if (job !== null) {
      clearTimeout(job.timer);
      job.resolve(reply);
    }
    const terminated = slot.worker.terminate();
    if (!this.#closed) this.#next(null);
    await terminated;
  }
}
