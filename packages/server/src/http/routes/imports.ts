/**
 * Import runs: a history, kept in memory by this server process (the newest 100), of the file
 * imports clients made against it. A client (the admin UI; any loader that wants to be listed)
 * opens a run with POST /api/imports, updates it with PATCH while it goes, and closes it with a
 * final PATCH (`status: 'done' | 'failed'`). The documents themselves go through the normal
 * write routes; these routes only record what the client reports. Lost on restart.
 */

import type { ImportRun as ImportRunShape } from '@wharf/wire';
import type { FastifyInstance } from 'fastify';
import { WharfServerError } from '../../errors.js';
import { errorResponses } from '../schemas/index.js';

export const MAX_RUNS = 100;

/** Counts stay exact JSON integers: a larger number would be answered as 8.5e+25 (found by schemathesis). */
const MAX_COUNT = Number.MAX_SAFE_INTEGER;

const PROGRESS_FIELDS = {
  status: { type: 'string', enum: ['running', 'done', 'failed'] },
  bytesDone: { type: 'integer', minimum: 0, maximum: MAX_COUNT },
  documents: { type: 'integer', minimum: 0, maximum: MAX_COUNT },
  inserted: { type: 'integer', minimum: 0, maximum: MAX_COUNT },
  replaced: { type: 'integer', minimum: 0, maximum: MAX_COUNT },
  unchanged: { type: 'integer', minimum: 0, maximum: MAX_COUNT },
  errors: { type: 'integer', minimum: 0, maximum: MAX_COUNT },
  batches: { type: 'integer', minimum: 0, maximum: MAX_COUNT },
  durationMs: { type: 'number', minimum: 0 },
  docsPerSec: { type: 'number', minimum: 0 },
  latencyP50Ms: { type: 'number', minimum: 0 },
  latencyP99Ms: { type: 'number', minimum: 0 },
  latencyMaxMs: { type: 'number', minimum: 0 },
  firstError: { type: 'string', maxLength: 4096 },
} as const;

const START_FIELDS = {
  table: { type: 'string', minLength: 1, maxLength: 512 },
  source: { type: 'string', minLength: 1, maxLength: 64 },
  file: { type: 'string', maxLength: 1024 },
  format: { type: 'string', enum: ['ndjson', 'json', 'csv'] },
  bytes: { type: 'integer', minimum: 0, maximum: MAX_COUNT },
  durability: { type: 'string', enum: ['soft', 'hard'] },
  conflict: { type: 'string', enum: ['error', 'replace', 'update'] },
} as const;

export const ImportRun = {
  $id: 'ImportRun',
  type: 'object',
  required: ['id', 'table', 'source', 'status', 'startedAt', 'updatedAt'],
  properties: {
    id: { type: 'integer' },
    startedAt: { type: 'number', description: 'ms since the epoch (server clock)' },
    updatedAt: { type: 'number' },
    finishedAt: { type: 'number' },
    ...START_FIELDS,
    ...PROGRESS_FIELDS,
  },
} as const;

/** The run record; its shape is shared with the admin UI through `@wharf/wire`. */
export type ImportRunRecord = ImportRunShape;

type StartBody = Pick<ImportRunRecord, 'table' | 'source' | 'file' | 'format' | 'bytes' | 'durability' | 'conflict'>;
type ProgressBody = Partial<
  Omit<ImportRunRecord, 'id' | 'table' | 'source' | 'startedAt' | 'updatedAt' | 'finishedAt'>
>;

export default async function importsRoutes(app: FastifyInstance): Promise<void> {
  app.addSchema(ImportRun);
  const runs = new Map<number, ImportRunRecord>();
  let nextId = 1;

  app.get(
    '/api/imports',
    {
      schema: {
        tags: ['imports'],
        summary: 'Import runs reported to this server process (newest first, at most 100; lost on restart)',
        response: {
          200: {
            type: 'object',
            required: ['runs'],
            properties: { runs: { type: 'array', items: { $ref: 'ImportRun#' } } },
          },
        },
      },
    },
    async () => ({ runs: [...runs.values()].reverse() }),
  );

  app.post<{ Body: StartBody }>(
    '/api/imports',
    {
      schema: {
        tags: ['imports'],
        summary: 'Open an import run (status running)',
        body: {
          type: 'object',
          required: ['table'],
          additionalProperties: false,
          properties: { ...START_FIELDS, source: { ...START_FIELDS.source, default: 'admin' } },
        },
        response: { 201: { $ref: 'ImportRun#' }, ...errorResponses },
      },
    },
    async (request, reply) => {
      const now = Date.now();
      const run: ImportRunRecord = {
        ...request.body,
        source: request.body.source ?? 'admin',
        id: nextId++,
        status: 'running',
        startedAt: now,
        updatedAt: now,
      };
      runs.set(run.id, run);
      while (runs.size > MAX_RUNS) runs.delete(runs.keys().next().value as number);
      return reply.code(201).send(run);
    },
  );

  app.patch<{ Params: { id: number }; Body: ProgressBody }>(
    '/api/imports/:id',
    {
      schema: {
        tags: ['imports'],
        summary: 'Report progress of an import run, or finish it (status done or failed)',
        params: { type: 'object', required: ['id'], properties: { id: { type: 'integer', minimum: 1 } } },
        body: { type: 'object', additionalProperties: false, properties: PROGRESS_FIELDS },
        response: { 200: { $ref: 'ImportRun#' }, ...errorResponses },
      },
    },
    async (request) => {
      const run = runs.get(request.params.id);
      if (!run) throw new WharfServerError('WHARF_ERR_NOT_FOUND', [`import run ${request.params.id}`]);
      Object.assign(run, request.body, { updatedAt: Date.now() });
      if (run.status !== 'running' && run.finishedAt === undefined) run.finishedAt = run.updatedAt;
      return run;
    },
  );
}
