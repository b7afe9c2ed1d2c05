/**
 * Distributed imports (`wharf import --job NAME`) as this server's coordination table shows them:
 * GET /api/jobs lists every job in it, GET /api/jobs/:job gives one job's tasks and workers. The
 * workers write the table through the ordinary document routes; these routes only read it, through
 * the engine (a key-range scan: a job's documents are the ids `JOB/…`), and read it the way
 * `wharf import --job NAME --status` does: `JobView` and `jobStatus` of @wharf/wire.
 */
import type { Document as Doc, ScanOptions } from '@wharf/engine';
import {
  type CoordinationDoc,
  DEFAULT_JOB_TABLE,
  type JobList,
  type JobStatus,
  type JobSummary,
  JobView,
  jobPrefix,
  jobStatus,
} from '@wharf/wire';
import type { FastifyInstance } from 'fastify';
import { fromEngineError, WharfServerError } from '../../errors.js';
import { continueAfter } from '../../scan-pages.js';
import { errorResponses } from '../schemas/index.js';

/** `wharf import --dead-after-ms`'s default: a worker silent this long is shown dead. */
export const DEFAULT_DEAD_AFTER_MS = 10_000;

/** The rule `wharf import --job` gives job names; no name outside it can be a job. */
const JOB_NAME = '^[A-Za-z0-9_.-]{1,100}$';

const nullable = (type: string) => ({ type: [type, 'null'] });

const totals = {
  type: 'object',
  required: ['docs', 'written', 'rejected', 'present', 'tasksDone', 'tasks'],
  properties: {
    docs: { type: 'integer', description: 'Documents read, summed over the tasks’ checkpoints' },
    written: { type: 'integer' },
    rejected: { type: 'integer' },
    present: { type: 'integer', description: 'Already in the table when their task resumed' },
    tasksDone: { type: 'integer' },
    tasks: { type: 'integer' },
  },
} as const;

export const JobStatusSchema = {
  $id: 'JobStatus',
  type: 'object',
  description: 'A job as its coordination table shows it (`wharf import --job NAME --status --json` prints the same).',
  required: ['job', 'found', 'table', 'format', 'complete', 'docsPerSec', 'totals', 'workers', 'tasks'],
  properties: {
    job: { type: 'string' },
    found: { type: 'boolean' },
    table: { ...nullable('string'), description: 'The table the job loads' },
    format: nullable('string'),
    complete: { type: 'boolean', description: 'Every task is done' },
    docsPerSec: { type: 'number', description: 'Sum of the running tasks’ rates' },
    totals,
    workers: {
      type: 'array',
      description: 'In join order',
      items: {
        type: 'object',
        required: ['worker', 'host', 'pid', 'state', 'lastBeatMsAgo', 'task', 'docsPerSec'],
        properties: {
          worker: { type: 'string' },
          host: nullable('string'),
          pid: nullable('integer'),
          state: {
            type: 'string',
            description: 'running, idle, joining, done, or dead (no heartbeat within deadAfterMs, or left)',
          },
          lastBeatMsAgo: { ...nullable('number'), description: 'By this server’s clock against the worker’s' },
          task: nullable('integer'),
          docsPerSec: { type: 'number' },
        },
      },
    },
    tasks: {
      type: 'array',
      items: {
        type: 'object',
        required: [
          'task',
          'path',
          'start',
          'end',
          'state',
          'holder',
          'epoch',
          'progress',
          'docs',
          'written',
          'rejected',
          'docsPerSec',
        ],
        properties: {
          task: { type: 'integer' },
          path: { type: 'string' },
          start: { type: 'integer', description: 'Byte range [start, end) of the input' },
          end: { type: 'integer' },
          state: { type: 'string', enum: ['waiting', 'running', 'released', 'orphaned', 'done'] },
          holder: { ...nullable('string'), description: 'The worker of its latest epoch' },
          epoch: { type: 'integer' },
          progress: { type: 'number', minimum: 0, maximum: 1, description: 'Share of its bytes checkpointed' },
          docs: { type: 'integer' },
          written: { type: 'integer' },
          rejected: { type: 'integer' },
          docsPerSec: { type: 'number' },
        },
      },
    },
  },
} as const;

export const JobSummarySchema = {
  $id: 'JobSummary',
  type: 'object',
  required: [
    'job',
    'table',
    'format',
    'complete',
    'tasks',
    'tasksDone',
    'docs',
    'written',
    'rejected',
    'docsPerSec',
    'workers',
    'createdAt',
    'updatedAt',
  ],
  properties: {
    job: { type: 'string' },
    table: nullable('string'),
    format: nullable('string'),
    complete: { type: 'boolean' },
    tasks: { type: 'integer' },
    tasksDone: { type: 'integer' },
    docs: { type: 'integer' },
    written: { type: 'integer' },
    rejected: { type: 'integer' },
    docsPerSec: { type: 'number' },
    workers: {
      type: 'object',
      required: ['live', 'dead', 'done'],
      description: 'live: running, idle or joining; dead: silent past deadAfterMs, or left; done: finished',
      properties: { live: { type: 'integer' }, dead: { type: 'integer' }, done: { type: 'integer' } },
    },
    createdAt: { ...nullable('number'), description: 'ms since the epoch (the creating worker’s clock)' },
    updatedAt: { ...nullable('number'), description: 'The latest heartbeat or checkpoint (workers’ clocks)' },
  },
} as const;

const readQuery = {
  jobTable: {
    type: 'string',
    minLength: 1,
    maxLength: 512,
    default: DEFAULT_JOB_TABLE,
    description: 'The coordination table (`wharf import --job-table`)',
  },
  deadAfterMs: {
    type: 'integer',
    minimum: 1,
    maximum: 86_400_000,
    default: DEFAULT_DEAD_AFTER_MS,
    description: 'A worker whose last heartbeat is older is shown dead (`wharf import --dead-after-ms`)',
  },
} as const;

interface ReadQuery {
  jobTable: string;
  deadAfterMs: number;
}

const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Whether a coordination document has the fields its kind is read for. The table is an ordinary
 * one anybody may write to; a document that is not what its id says is left out rather than
 * breaking the whole answer.
 */
function wellFormed(doc: Doc, job: string): doc is CoordinationDoc {
  const id = (doc as { id?: unknown }).id;
  if (typeof id !== 'string' || !id.startsWith(jobPrefix(job))) return false;
  const rest = id.slice(job.length + 1);
  const d = doc as Record<string, unknown>;
  const str = (v: unknown) => typeof v === 'string';
  const optional = (v: unknown, is: (v: unknown) => boolean) => v === undefined || v === null || is(v);
  if (rest === 'job')
    return (
      d.kind === 'job' &&
      str(d.table) &&
      str(d.format) &&
      Array.isArray(d.tasks) &&
      d.tasks.every((t) => isObj(t) && isNum(t.index) && isNum(t.start) && isNum(t.end) && str(t.path))
    );
  if (rest.startsWith('member/')) return d.kind === 'member' && isNum(d.slot) && str(d.worker);
  if (rest.startsWith('beat/'))
    return (
      d.kind === 'beat' &&
      str(d.worker) &&
      isNum(d.at) &&
      str(d.state) &&
      optional(d.host, str) &&
      optional(d.pid, Number.isInteger) &&
      optional(d.task, Number.isInteger) &&
      optional(d.docsPerSec, isNum)
    );
  if (rest.startsWith('task/'))
    return (
      d.kind === 'task' &&
      Number.isInteger(d.task) &&
      Number.isInteger(d.epoch) &&
      str(d.worker) &&
      isObj(d.low) &&
      ['offset', 'docs', 'written', 'rejected', 'present'].every((f) => isNum((d.low as Record<string, unknown>)[f])) &&
      optional(d.docsPerSec, isNum)
    );
  return false;
}

/** A job's name from a coordination document's id (`JOB/…`), or null for an id no worker writes. */
function jobOf(doc: Doc): string | null {
  const id = (doc as { id?: unknown }).id;
  if (typeof id !== 'string') return null;
  const slash = id.indexOf('/');
  return slash > 0 ? id.slice(0, slash) : null;
}

function summarize(view: JobView, status: JobStatus): JobSummary {
  const count = (pred: (state: string) => boolean) => status.workers.filter((w) => pred(w.state)).length;
  let updatedAt: number | null = null;
  const later = (t: unknown) => {
    if (isNum(t) && (updatedAt === null || t > updatedAt)) updatedAt = t;
  };
  for (const b of view.beats.values()) later(b.at);
  for (const t of view.latest.values()) later(t.updatedAt);
  return {
    job: status.job,
    table: status.table,
    format: status.format,
    complete: status.complete,
    tasks: status.totals.tasks,
    tasksDone: status.totals.tasksDone,
    docs: status.totals.docs,
    written: status.totals.written,
    rejected: status.totals.rejected,
    docsPerSec: status.docsPerSec,
    workers: {
      live: count((s) => s !== 'dead' && s !== 'done'),
      dead: count((s) => s === 'dead'),
      done: count((s) => s === 'done'),
    },
    createdAt: isNum(view.definition?.createdAt) ? view.definition.createdAt : null,
    updatedAt,
  };
}

export default async function jobsRoutes(app: FastifyInstance): Promise<void> {
  app.addSchema(JobStatusSchema);
  app.addSchema(JobSummarySchema);
  const page = app.wharf.options.limits.scanPageRows;

  /**
   * The coordination table's documents with ids in [gte, lt), read in pages (a job's documents
   * are a few per task and worker); none when the table does not exist.
   */
  async function read(table: string, range: { gte?: string; lt?: string }): Promise<Doc[]> {
    const info = app.db.listTables().find((t) => t.name === table);
    if (!info) return [];
    const out: Doc[] = [];
    const opts: ScanOptions = { ...range, limit: page };
    for (;;) {
      let docs: Doc[];
      try {
        docs = await app.db.table(table).scan(opts);
      } catch (err) {
        if ((err as { code?: unknown }).code === 'WHARF_ERR_TABLE_NOT_FOUND') return out; // dropped meanwhile
        throw fromEngineError(err, { table });
      }
      out.push(...docs);
      if (docs.length < page) return out;
      continueAfter(opts, (docs[docs.length - 1] as Doc)[info.primaryKey]);
    }
  }

  app.get<{ Querystring: ReadQuery }>(
    '/api/jobs',
    {
      schema: {
        tags: ['jobs'],
        summary: 'Every distributed import (`wharf import --job`) in the coordination table, in name order',
        description: 'A table that does not exist holds no jobs: the list is empty.',
        querystring: { type: 'object', properties: readQuery },
        response: {
          200: {
            type: 'object',
            required: ['jobTable', 'jobs'],
            properties: { jobTable: { type: 'string' }, jobs: { type: 'array', items: { $ref: 'JobSummary#' } } },
          },
          ...errorResponses,
        },
      },
    },
    async (request): Promise<JobList> => {
      const { jobTable, deadAfterMs } = request.query;
      const now = Date.now();
      // Ids sort by job name first, so each job's documents come together.
      const byJob = new Map<string, Doc[]>();
      for (const doc of await read(jobTable, {})) {
        const job = jobOf(doc);
        if (job === null || !wellFormed(doc, job)) continue;
        let docs = byJob.get(job);
        if (!docs) byJob.set(job, (docs = []));
        docs.push(doc);
      }
      const jobs: JobSummary[] = [];
      for (const [job, docs] of byJob) {
        const view = new JobView(job, docs as CoordinationDoc[]);
        if (view.definition === null) continue; // workers of a job whose definition is gone
        jobs.push(summarize(view, jobStatus(job, view, deadAfterMs, now)));
      }
      return { jobTable, jobs };
    },
  );

  app.get<{ Params: { job: string }; Querystring: ReadQuery }>(
    '/api/jobs/:job',
    {
      schema: {
        tags: ['jobs'],
        summary: 'One job: its totals, workers (state, last heartbeat, task, rate) and tasks (state, holder, progress)',
        description: '404 WHARF_ERR_JOB_NOT_FOUND when the coordination table has no such job.',
        params: {
          type: 'object',
          required: ['job'],
          properties: { job: { type: 'string', pattern: JOB_NAME, description: 'The `--job` name' } },
        },
        querystring: { type: 'object', properties: readQuery },
        response: { 200: { $ref: 'JobStatus#' }, ...errorResponses },
      },
    },
    async (request): Promise<JobStatus> => {
      const { job } = request.params;
      const { jobTable, deadAfterMs } = request.query;
      const prefix = jobPrefix(job);
      // Every id that starts with the prefix sorts below prefix + U+FFFF (as the workers read it).
      const docs = (await read(jobTable, { gte: prefix, lt: `${prefix}\uffff` })).filter((d) => wellFormed(d, job));
      const view = new JobView(job, docs);
      if (view.definition === null) throw new WharfServerError('WHARF_ERR_JOB_NOT_FOUND', [job, jobTable]);
      return jobStatus(job, view, deadAfterMs);
    },
  );
}
