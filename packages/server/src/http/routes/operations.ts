/** sync, stats, metrics and health. */
import type { FastifyInstance } from 'fastify';
import { fromEngineError } from '../../errors.js';
import { prometheusText, statsSnapshot } from '../../stats.js';
import { errorResponses } from '../schemas/index.js';

export default async function operationsRoutes(app: FastifyInstance): Promise<void> {
  const sync = async (): Promise<{ synced: 1 }> => {
    try {
      await app.db.sync();
    } catch (err) {
      throw fromEngineError(err);
    }
    return { synced: 1 };
  };

  app.post(
    '/api/sync',
    {
      schema: {
        tags: ['sync'],
        summary: 'Make everything acknowledged so far durable (all tables)',
        response: { 200: { $ref: 'Synced#' }, ...errorResponses },
      },
    },
    sync,
  );

  app.post<{ Params: { table: string } }>(
    '/api/tables/:table/sync',
    {
      schema: {
        tags: ['sync'],
        summary: 'Make everything acknowledged so far on this table durable',
        description: 'All tables share one journal, so this syncs every table; it checks that the table exists.',
        params: { $ref: 'TableParams#' },
        response: { 200: { $ref: 'Synced#' }, ...errorResponses },
      },
    },
    async (request) => {
      try {
        await app.db.table(request.params.table).count();
      } catch (err) {
        throw fromEngineError(err, { table: request.params.table });
      }
      return sync();
    },
  );

  app.get(
    '/api/stats',
    {
      schema: {
        tags: ['operations'],
        summary: 'Engine and server counters',
        response: {
          200: {
            type: 'object',
            required: ['time', 'engine', 'server'],
            properties: {
              time: { type: 'integer', description: 'ms since the epoch' },
              engine: {
                type: 'object',
                additionalProperties: true,
                description: 'Engine counters (names as in stats.rs, camelCase)',
              },
              server: { type: 'object', additionalProperties: { type: 'number' } },
            },
          },
        },
      },
    },
    async () => statsSnapshot(app.db, app.wharf),
  );

  app.get(
    '/metrics',
    {
      schema: {
        tags: ['operations'],
        summary: 'Counters in the Prometheus text format',
        produces: ['text/plain'],
        response: { 200: { type: 'string' } },
      },
    },
    async (_request, reply) => {
      return reply
        .type('text/plain; version=0.0.4; charset=utf-8')
        .send(prometheusText(statsSnapshot(app.db, app.wharf)));
    },
  );

  app.get(
    '/health',
    {
      schema: {
        tags: ['operations'],
        summary: 'Liveness: 200 when the server takes writes, 503 when shutting down or the engine is poisoned',
        response: {
          200: {
            type: 'object',
            required: ['status'],
            properties: { status: { type: 'string' }, uptimeMs: { type: 'integer' } },
          },
          503: {
            type: 'object',
            required: ['status'],
            properties: { status: { type: 'string' }, uptimeMs: { type: 'integer' } },
          },
        },
      },
    },
    async (_request, reply) => {
      const uptimeMs = Date.now() - app.wharf.startedAt;
      if (app.wharf.closing) return reply.code(503).send({ status: 'shutting-down', uptimeMs });
      let poisoned = false;
      try {
        poisoned = app.db.stats().poisoned === true;
      } catch {
        poisoned = true;
      }
      if (poisoned) return reply.code(503).send({ status: 'poisoned', uptimeMs });
      return { status: 'ok', uptimeMs };
    },
  );
}
