import type { FastifyInstance } from 'fastify';
import { fromEngineError, WharfServerError } from '../../errors.js';
import { checkTableName, isHiddenTable } from '../../names.js';
import { errorResponses } from '../schemas/index.js';

export default async function tablesRoutes(app: FastifyInstance): Promise<void> {
  app.get(
    '/api/tables',
    {
      schema: {
        tags: ['tables'],
        summary: 'List tables',
        response: {
          200: {
            type: 'object',
            required: ['tables'],
            properties: { tables: { type: 'array', items: { $ref: 'TableInfo#' } } },
          },
        },
      },
    },
    async () => ({ tables: app.db.listTables().filter((t) => !isHiddenTable(t.name)) }),
  );

  app.get<{ Params: { table: string } }>(
    '/api/tables/:table',
    {
      schema: {
        tags: ['tables'],
        summary: 'Describe one table',
        params: { $ref: 'TableParams#' },
        response: { 200: { $ref: 'TableInfo#' }, ...errorResponses },
      },
    },
    async (request) => {
      const info = app.db.listTables().find((t) => t.name === request.params.table);
      if (!info) throw new WharfServerError('WHARF_ERR_TABLE_NOT_FOUND', [request.params.table]);
      return info;
    },
  );

  app.post<{ Body: { name: string; primaryKey?: string } }>(
    '/api/tables',
    {
      schema: {
        tags: ['tables'],
        summary: 'Create a table',
        body: {
          type: 'object',
          required: ['name'],
          additionalProperties: false,
          properties: {
            name: { type: 'string', minLength: 1, maxLength: 512 },
            primaryKey: { type: 'string', minLength: 1, default: 'id' },
          },
        },
        response: {
          201: {
            type: 'object',
            required: ['created', 'name', 'primaryKey'],
            properties: { created: { type: 'boolean' }, name: { type: 'string' }, primaryKey: { type: 'string' } },
          },
          409: { $ref: 'ErrorResponse#' },
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const { name, primaryKey = 'id' } = request.body;
      checkTableName(name);
      try {
        await app.db.createTable(name, { primaryKey });
      } catch (err) {
        throw fromEngineError(err, { table: name });
      }
      return reply.code(201).send({ created: true, name, primaryKey });
    },
  );

  app.delete<{ Params: { table: string } }>(
    '/api/tables/:table',
    {
      schema: {
        tags: ['tables'],
        summary: 'Drop a table and its documents',
        params: { $ref: 'TableParams#' },
        response: { 200: { $ref: 'Dropped#' }, ...errorResponses },
      },
    },
    async (request) => {
      const name = request.params.table;
      try {
        await app.db.dropTable(name);
      } catch (err) {
        throw fromEngineError(err, { table: name });
      }
      // The driver port's grants on it go with it (a new table of that name starts with none).
      if (app.hasDecorator('rethinkdb')) await app.rethinkdb.users?.forgetEngineTable(name);
      return { dropped: true, name };
    },
  );
}
