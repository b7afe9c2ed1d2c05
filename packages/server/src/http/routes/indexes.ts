/**
 * Secondary indexes: list, create (the build runs in the background), drop, wait, and the
 * indexed reads (getAll by value, between over a range). Engine failures map through the error
 * catalog: unknown table or index 404, an index that exists 409, one still building 503.
 */

import type { BetweenOptions, IndexInfo, IndexValue } from '@wharf/engine';
import type { FastifyInstance } from 'fastify';
import { fromEngineError, WharfServerError } from '../../errors.js';
import { errorResponses } from '../schemas/index.js';

/** The engine's rule for index names (the table-name rule). */
const INDEX_NAME = /^[A-Za-z0-9_.-]{1,127}$/;

const indexParams = {
  type: 'object',
  required: ['table', 'name'],
  properties: {
    table: { type: 'string', minLength: 1, maxLength: 512 },
    name: { type: 'string', minLength: 1, maxLength: 512 },
  },
} as const;

const indexList = {
  type: 'object',
  required: ['indexes'],
  properties: { indexes: { type: 'array', items: { $ref: 'IndexInfo#' } } },
} as const;

interface DocsQuery {
  value?: string[];
  lower?: string;
  upper?: string;
  leftBound?: 'closed' | 'open';
  rightBound?: 'closed' | 'open';
  limit: number;
  reverse: boolean;
  fresh: boolean;
}

/** An index value from a query string: JSON (`"Paris"`, `42`, `true`, `null`). */
function parseIndexValue(raw: string, what: string): IndexValue {
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    throw new WharfServerError('WHARF_ERR_BAD_REQUEST', [
      `${what} must be JSON: a string in double quotes ("Paris"), a number, true, false or null; got ${JSON.stringify(raw)}`,
    ]);
  }
  if (v === null || typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v)))
    return v;
  throw new WharfServerError('WHARF_ERR_BAD_REQUEST', [
    `${what} must be a string, a number, a boolean or null; got ${raw}`,
  ]);
}

export default async function indexesRoutes(app: FastifyInstance): Promise<void> {
  const { limits } = app.wharf.options;

  /** The table, or 404 naming it (before the engine's index calls, whose errors name the index). */
  const tableOf = (name: string) => {
    if (!app.db.listTables().some((t) => t.name === name))
      throw new WharfServerError('WHARF_ERR_TABLE_NOT_FOUND', [name]);
    return app.db.table(name);
  };

  app.get<{ Params: { table: string } }>(
    '/api/tables/:table/indexes',
    {
      schema: {
        tags: ['indexes'],
        summary: "List a table's secondary indexes",
        description: 'ready: the background build finished; indexed: documents the build has indexed so far.',
        params: { $ref: 'TableParams#' },
        response: { 200: indexList, ...errorResponses },
      },
    },
    async (request) => {
      const { table } = request.params;
      try {
        return { indexes: await tableOf(table).listIndexes() };
      } catch (err) {
        throw fromEngineError(err, { table });
      }
    },
  );

  app.post<{ Params: { table: string }; Body: { name: string; field: string; multi?: boolean } }>(
    '/api/tables/:table/indexes',
    {
      schema: {
        tags: ['indexes'],
        summary: 'Create a secondary index on a field path',
        description:
          'Answers 201 once the creation is durable; the index then builds in the background (see GET …/indexes, POST …/indexes/wait). ' +
          'field is a dotted path (`address.city`). Documents whose field is missing are not indexed, nor (unless multi) those where it is an array or object. ' +
          'multi: each element of an array value is an entry.',
        params: { $ref: 'TableParams#' },
        body: {
          type: 'object',
          required: ['name', 'field'],
          additionalProperties: false,
          properties: {
            name: {
              type: 'string',
              minLength: 1,
              maxLength: 512,
              description: "1 to 127 letters, digits, '_', '-' or '.'",
            },
            field: {
              type: 'string',
              minLength: 1,
              maxLength: 4096,
              description: 'Dotted field path, e.g. address.city',
            },
            multi: { type: 'boolean', default: false },
          },
        },
        response: {
          201: {
            type: 'object',
            required: ['created', 'name', 'field', 'multi'],
            properties: {
              created: { type: 'boolean' },
              name: { type: 'string' },
              field: { type: 'string' },
              multi: { type: 'boolean' },
            },
          },
          409: { $ref: 'ErrorResponse#' },
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const { table } = request.params;
      const { name, field, multi = false } = request.body;
      if (!INDEX_NAME.test(name)) {
        throw new WharfServerError('WHARF_ERR_INVALID_ARGUMENT', [
          `index name must be 1 to 127 letters, digits, '_', '-' or '.'; got ${JSON.stringify(name)}`,
        ]);
      }
      try {
        await tableOf(table).createIndex(name, field, { multi });
      } catch (err) {
        throw fromEngineError(err, { table, index: name });
      }
      return reply.code(201).send({ created: true, name, field, multi });
    },
  );

  app.post<{ Params: { table: string }; Body: { names?: string[]; timeoutMs?: number } }>(
    '/api/tables/:table/indexes/wait',
    {
      schema: {
        tags: ['indexes'],
        summary: 'Wait until indexes are built and caught up',
        description:
          'Answers once the named indexes (default: all of the table) are ready and reflect every write acknowledged before the request. ' +
          'timeoutMs: give up after this long (503 WHARF_ERR_INDEX_NOT_READY).',
        params: { $ref: 'TableParams#' },
        body: {
          type: 'object',
          additionalProperties: false,
          properties: {
            names: { type: 'array', items: { type: 'string', minLength: 1 } },
            timeoutMs: { type: 'integer', minimum: 1 },
          },
        },
        response: { 200: indexList, ...errorResponses },
      },
    },
    async (request) => {
      const { table } = request.params;
      const { names, timeoutMs } = request.body ?? {};
      try {
        const t = tableOf(table);
        if (names) {
          // Name the missing index in the 404 (the engine may report only the first one it meets).
          const known = new Set((await t.listIndexes()).map((i) => i.name));
          const missing = names.find((n) => !known.has(n));
          if (missing !== undefined) throw new WharfServerError('WHARF_ERR_INDEX_NOT_FOUND', [missing, table]);
        }
        const indexes: IndexInfo[] = await t.indexWait(names, timeoutMs === undefined ? undefined : { timeoutMs });
        return { indexes };
      } catch (err) {
        throw fromEngineError(err, { table, index: names?.length === 1 ? names[0] : undefined });
      }
    },
  );

  app.delete<{ Params: { table: string; name: string } }>(
    '/api/tables/:table/indexes/:name',
    {
      schema: {
        tags: ['indexes'],
        summary: 'Drop a secondary index',
        params: indexParams,
        response: {
          200: {
            type: 'object',
            required: ['dropped', 'name'],
            properties: { dropped: { type: 'boolean' }, name: { type: 'string' } },
          },
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { table, name } = request.params;
      try {
        await tableOf(table).dropIndex(name);
      } catch (err) {
        throw fromEngineError(err, { table, index: name });
      }
      return { dropped: true, name };
    },
  );

  app.get<{ Params: { table: string; name: string }; Querystring: DocsQuery }>(
    '/api/tables/:table/indexes/:name/docs',
    {
      schema: {
        tags: ['indexes'],
        summary: 'Read documents through a secondary index: by value (getAll) or over a range (between)',
        description:
          'Values and bounds are JSON (`"Paris"`, `42`, `true`, `null`). With one or more `value`: the documents whose indexed field equals one of them. ' +
          'Otherwise between `lower` and `upper` (either may be omitted: unbounded; leftBound closed and rightBound open by default), in index order. ' +
          'fresh (default true) answers once the index reflects every write acknowledged before the request (and waits for a building index); ' +
          'fresh=false answers at once, and 503 while the index is still building. truncated: more documents matched than limit.',
        params: indexParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            value: { type: 'array', items: { type: 'string' }, description: 'JSON value; repeat for several' },
            lower: { type: 'string', description: 'JSON lower bound' },
            upper: { type: 'string', description: 'JSON upper bound' },
            leftBound: { type: 'string', enum: ['closed', 'open'] },
            rightBound: { type: 'string', enum: ['closed', 'open'] },
            limit: {
              type: 'integer',
              minimum: 1,
              maximum: limits.scanPageRows,
              default: Math.min(1000, limits.scanPageRows),
            },
            reverse: { type: 'boolean', default: false },
            fresh: { type: 'boolean', default: true },
          },
        },
        response: {
          200: {
            type: 'object',
            required: ['documents', 'truncated'],
            properties: {
              documents: { type: 'array', items: { $ref: 'Document#' } },
              truncated: { type: 'boolean', description: 'More documents matched than limit.' },
            },
          },
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { table, name } = request.params;
      const q = request.query;
      const values = q.value ?? [];
      const ranged =
        q.lower !== undefined ||
        q.upper !== undefined ||
        q.leftBound !== undefined ||
        q.rightBound !== undefined ||
        q.reverse;
      if (values.length > 0 && ranged) {
        throw new WharfServerError('WHARF_ERR_BAD_REQUEST', [
          'give either value (getAll) or lower/upper/leftBound/rightBound/reverse (between), not both',
        ]);
      }
      const t = tableOf(table);
      let docs: object[];
      try {
        if (values.length > 0) {
          const parsed = values.map((v, i) => parseIndexValue(v, values.length === 1 ? 'value' : `value[${i}]`));
          docs = await t.getAll(name, parsed, { fresh: q.fresh });
        } else {
          const lower = q.lower === undefined ? null : parseIndexValue(q.lower, 'lower');
          const upper = q.upper === undefined ? null : parseIndexValue(q.upper, 'upper');
          const opts: BetweenOptions = { limit: q.limit + 1, reverse: q.reverse, fresh: q.fresh };
          if (q.leftBound) opts.leftBound = q.leftBound;
          if (q.rightBound) opts.rightBound = q.rightBound;
          docs = await t.between(name, lower, upper, opts);
        }
      } catch (err) {
        throw fromEngineError(err, { table, index: name });
      }
      const truncated = docs.length > q.limit;
      return { documents: truncated ? docs.slice(0, q.limit) : docs, truncated };
    },
  );
}
