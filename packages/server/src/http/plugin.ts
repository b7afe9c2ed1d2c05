/**
 * The HTTP API listener: shared schemas, the OpenAPI document generated from them
 * (/openapi.json), the error handler, and the route files.
 */

import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { WharfServerError } from '../errors.js';
import { isHiddenTable } from '../names.js';
import { installErrorHandler } from './error-handler.js';
import documentsRoutes from './routes/documents.js';
import indexesRoutes from './routes/indexes.js';
import insertRoute from './routes/insert.js';
import jobsRoutes from './routes/jobs.js';
import operationsRoutes from './routes/operations.js';
import tablesRoutes from './routes/tables.js';
import { registerSchemas } from './schemas/index.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** OpenAPI requestBody for a route whose body is not validated (raw bytes for the engine). */
    openApiBody?: unknown;
  }
}

async function httpApi(app: FastifyInstance): Promise<void> {
  registerSchemas(app);
  installErrorHandler(app);
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Wharf HTTP API',
        description:
          'A durable JSON document store. Durability: `soft` answers when a write is visible, `hard` and `sync` when it is durable.',
        version: '0.1.0',
      },
      tags: [
        { name: 'tables' },
        { name: 'documents' },
        { name: 'indexes' },
        { name: 'sync' },
        { name: 'operations' },
        { name: 'jobs' },
      ],
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
    transform: ({ schema, url, route }) => {
      const body = (route.config as { openApiBody?: unknown } | undefined)?.openApiBody;
      return { schema: (body ? { ...schema, body } : schema) as typeof schema, url };
    },
  });
  app.addHook('onRequest', async () => {
    app.wharf.counters.httpRequests++;
  });
  // Wharf's own tables (names.ts) are not the API's: a route naming one finds no such table.
  app.addHook('preHandler', async (request) => {
    const params = request.params as { table?: unknown } | undefined;
    const body = request.body as { table?: unknown } | undefined;
    for (const table of [params?.table, body !== null && typeof body === 'object' ? body.table : undefined])
      if (typeof table === 'string' && isHiddenTable(table))
        throw new WharfServerError('WHARF_ERR_TABLE_NOT_FOUND', [table]);
  });

  await app.register(tablesRoutes);
  await app.register(documentsRoutes);
  await app.register(insertRoute);
  await app.register(operationsRoutes);
  await app.register(indexesRoutes);
  await app.register(jobsRoutes);

  app.get(
    '/openapi.json',
    {
      schema: { hide: true, response: { 200: { type: 'object', additionalProperties: true } } },
    },
    async () => app.swagger(),
  );
}

export default fp(httpApi, { name: 'wharf-http', dependencies: ['wharf-engine'] });
