import type { Key, ScanOptions } from '@wharf/engine';
import type { FastifyInstance } from 'fastify';
import { fromEngineError, WharfServerError } from '../../errors.js';
import { encodeBoundKey, type KeyType, parseBoundKey, pathKeyCandidates } from '../keys.js';
import { errorResponses } from '../schemas/index.js';

const keyParams = {
  type: 'object',
  required: ['table', 'key'],
  properties: { table: { type: 'string', minLength: 1, maxLength: 512 }, key: { type: 'string' } },
} as const;

const keyTypeQuery = {
  keyType: {
    type: 'string',
    enum: ['auto', 'string', 'number'],
    default: 'auto',
    description: 'How to read the key in the path (auto: a numeric key is tried as a number, then as a string).',
  },
} as const;

interface ScanQuery {
  gt?: string;
  gte?: string;
  lt?: string;
  lte?: string;
  after?: string;
  limit: number;
  reverse: boolean;
}

export default async function documentsRoutes(app: FastifyInstance): Promise<void> {
  const { limits } = app.wharf.options;

  app.get<{ Params: { table: string; key: string }; Querystring: { keyType: KeyType } }>(
    '/api/tables/:table/documents/:key',
    {
      schema: {
        tags: ['documents'],
        summary: 'Get a document by primary key',
        params: keyParams,
        querystring: { type: 'object', properties: keyTypeQuery },
        response: { 200: { $ref: 'Document#' }, ...errorResponses },
      },
    },
    async (request) => {
      const { table, key } = request.params;
      const candidates = pathKeyCandidates(key, request.query.keyType);
      let docs: (object | null)[];
      try {
        docs = await app.db.table(table).getMany(candidates);
      } catch (err) {
        throw fromEngineError(err, { table });
      }
      const doc = docs.find((d) => d !== null);
      if (!doc) throw new WharfServerError('WHARF_ERR_DOCUMENT_NOT_FOUND', [JSON.stringify(key), table]);
      return doc;
    },
  );

  app.delete<{
    Params: { table: string; key: string };
    Querystring: { keyType: KeyType; durability?: 'soft' | 'hard' };
  }>(
    '/api/tables/:table/documents/:key',
    {
      schema: {
        tags: ['documents'],
        summary: 'Delete a document by primary key',
        description: 'durability: soft answers when the delete is visible, hard when it is durable.',
        params: keyParams,
        querystring: {
          type: 'object',
          properties: { ...keyTypeQuery, durability: { type: 'string', enum: ['soft', 'hard'] } },
        },
        response: { 200: { $ref: 'WriteResult#' }, ...errorResponses },
      },
    },
    async (request) => {
      const { table, key } = request.params;
      const t = app.db.table(table);
      try {
        let candidates = pathKeyCandidates(key, request.query.keyType);
        if (candidates.length > 1) {
          // auto: delete the key that exists (number first), so "42" never deletes both 42 and "42".
          const found = await t.getMany(candidates);
          const i = found.findIndex((d) => d !== null);
          candidates = [candidates[i === -1 ? 0 : i] as Key];
        }
        const opts = request.query.durability ? { durability: request.query.durability } : {};
        return await app.wharf.writes.track(t.delete(candidates[0] as Key, opts));
      } catch (err) {
        throw fromEngineError(err, { table });
      }
    },
  );

  app.get<{ Params: { table: string }; Querystring: ScanQuery }>(
    '/api/tables/:table/documents',
    {
      schema: {
        tags: ['documents'],
        summary: 'Scan documents in primary-key order (numbers before strings)',
        description:
          'Bounds are JSON when they parse as a JSON string or number (42 is a number, "42" a string), else raw text. ' +
          'Pass the `next` of a page as `after` to get the following page; `next` is null on the last page.',
        params: { $ref: 'TableParams#' },
        querystring: {
          type: 'object',
          properties: {
            gt: { type: 'string' },
            gte: { type: 'string' },
            lt: { type: 'string' },
            lte: { type: 'string' },
            after: { type: 'string', description: 'Paging token: the `next` of the previous page.' },
            limit: { type: 'integer', minimum: 1, maximum: limits.scanPageRows, default: 100 },
            reverse: { type: 'boolean', default: false },
          },
        },
        response: {
          200: {
            type: 'object',
            required: ['documents', 'next'],
            properties: {
              documents: { type: 'array', items: { $ref: 'Document#' } },
              next: { type: ['string', 'null'], description: 'Token for the next page, or null at the end.' },
            },
          },
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { table } = request.params;
      const q = request.query;
      const info = app.db.listTables().find((t) => t.name === table);
      if (!info) throw new WharfServerError('WHARF_ERR_TABLE_NOT_FOUND', [table]);
      const opts: ScanOptions = { limit: q.limit + 1, reverse: q.reverse };
      for (const b of ['gt', 'gte', 'lt', 'lte'] as const)
        if (q[b] !== undefined) opts[b] = parseBoundKey(q[b] as string);
      if (q.after !== undefined) {
        const after = parseBoundKey(q.after);
        if (q.reverse) {
          delete opts.lte;
          opts.lt = after;
        } else {
          delete opts.gte;
          opts.gt = after;
        }
      }
      let docs: object[];
      try {
        docs = await app.db.table(table).scan(opts);
      } catch (err) {
        throw fromEngineError(err, { table });
      }
      let next: string | null = null;
      if (docs.length > q.limit) {
        docs = docs.slice(0, q.limit);
        const last = docs[docs.length - 1] as Record<string, unknown>;
        next = encodeBoundKey(last[info.primaryKey] as Key);
      }
      return { documents: docs, next };
    },
  );

  app.get<{ Params: { table: string } }>(
    '/api/tables/:table/count',
    {
      schema: {
        tags: ['documents'],
        summary: 'Count the documents of a table',
        params: { $ref: 'TableParams#' },
        response: {
          200: { type: 'object', required: ['count'], properties: { count: { type: 'integer' } } },
          ...errorResponses,
        },
      },
    },
    async (request) => {
      try {
        return { count: await app.db.table(request.params.table).count() };
      } catch (err) {
        throw fromEngineError(err, { table: request.params.table });
      }
    },
  );
}
