/**
 * POST /api/tables/:table/documents: the body goes to the engine's bulk path unparsed
 * (a JSON array → insertJsonArray, NDJSON → insertNdjson, a single JSON object is wrapped in an
 * array). It is parsed once, in Rust; that is why this route's body schema accepts any bytes.
 * Its own plugin, so the raw-body content-type parsers stay local to it.
 */

import type { WriteOptions, WriteResult } from '@wharf/engine';
import type { FastifyInstance } from 'fastify';
import { describeTooDeep, findTooDeep } from '../../depth.js';
import { fromEngineError, WharfServerError } from '../../errors.js';
import { MAX_DOCUMENT_DEPTH } from '../../limits.js';
import { errorResponses } from '../schemas/index.js';

interface InsertQuery {
  durability?: 'soft' | 'hard';
  conflict?: 'error' | 'replace' | 'update';
  waitForIndexes?: boolean;
}

const JSON_TYPES = ['application/json'];
// No text/plain (nor form types): a page of another site can send those cross-origin without a
// preflight, so accepting them would let any visited web page write here (CSRF). These types need
// a CORS preflight, which this server never grants.
const NDJSON_TYPES = ['application/x-ndjson', 'application/ndjson', 'application/jsonl', 'application/x-jsonlines'];

function firstNonSpace(buf: Buffer): number {
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i] as number;
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return c;
  }
  return -1;
}

export default async function insertRoute(app: FastifyInstance): Promise<void> {
  const bodyLimit = app.wharf.options.limits.httpBodyBytes;
  app.removeAllContentTypeParsers();
  app.addContentTypeParser([...JSON_TYPES, ...NDJSON_TYPES], { parseAs: 'buffer', bodyLimit }, (_req, body, done) =>
    done(null, body),
  );

  const raw = { description: 'Documents, parsed by the engine (not by the schema validator).' };
  app.post<{ Params: { table: string }; Querystring: InsertQuery; Body: Buffer }>(
    '/api/tables/:table/documents',
    {
      bodyLimit,
      schema: {
        tags: ['documents'],
        summary: 'Insert documents (a JSON array, one JSON object, or NDJSON)',
        description:
          'durability: soft answers when the documents are visible, hard when they are durable (default: the engine default, hard). ' +
          'conflict: what to do when the primary key exists (default error: the document is counted in errors, the rest is written). ' +
          'Bad documents are reported in document_errors by index (NDJSON line, blank lines count, or array element). ' +
          'waitForIndexes: answer only once every secondary index of the table reflects the write.',
        params: { $ref: 'TableParams#' },
        querystring: {
          type: 'object',
          properties: {
            durability: { type: 'string', enum: ['soft', 'hard'] },
            conflict: { type: 'string', enum: ['error', 'replace', 'update'] },
            waitForIndexes: { type: 'boolean' },
          },
        },
        response: {
          200: { $ref: 'WriteResult#' },
          413: { $ref: 'ErrorResponse#' },
          415: { $ref: 'ErrorResponse#' },
          ...errorResponses,
        },
      },
      // The body is raw bytes for the engine, so it has no validation schema; the OpenAPI document
      // describes it through this (see openApiBody in http/plugin.ts).
      config: {
        openApiBody: {
          required: true,
          content: {
            'application/json': {
              schema: { ...raw, type: 'array', items: { type: 'object', additionalProperties: true } },
            },
            'application/x-ndjson': { schema: { ...raw, type: 'string', description: 'One JSON document per line.' } },
          },
        },
      },
    },
    async (request) => {
      const { table } = request.params;
      const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      const opts: WriteOptions = {};
      if (request.query.durability) opts.durability = request.query.durability;
      if (request.query.conflict) opts.conflict = request.query.conflict;
      if (request.query.waitForIndexes) opts.waitForIndexes = true;
      const t = app.db.table(table);
      const type = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
      const first = firstNonSpace(body);
      const ndjson = NDJSON_TYPES.includes(type) && first !== 0x5b;
      const tooDeep = findTooDeep(body, MAX_DOCUMENT_DEPTH, ndjson);
      if (tooDeep !== null)
        throw new WharfServerError('WHARF_ERR_DOCUMENT_TOO_DEEP', [describeTooDeep(tooDeep), MAX_DOCUMENT_DEPTH]);
      let result: WriteResult;
      try {
        let op: Promise<WriteResult>;
        if (ndjson) op = t.insertNdjson(body, opts);
        else if (first === 0x7b)
          op = t.insertJsonArray(Buffer.concat([Buffer.from('['), body, Buffer.from(']')]), opts);
        else op = t.insertJsonArray(body, opts);
        result = await app.wharf.writes.track(op);
      } catch (err) {
        throw fromEngineError(err, { table });
      }
      app.wharf.counters.httpInsertBatches++;
      app.wharf.counters.documentsInserted += result.inserted;
      return result;
    },
  );
}
