/**
 * Shared JSON schemas, registered once by `$id` and referenced from routes as `{ $ref: 'Name#' }`.
 * The OpenAPI document (/openapi.json) is generated from these and the route schemas.
 */
import type { FastifyInstance } from 'fastify';

export const WriteResult = {
  $id: 'WriteResult',
  type: 'object',
  description:
    "RethinkDB's write-result shape, plus document_errors (one per rejected document; the rest of the batch is written).",
  required: ['inserted', 'replaced', 'unchanged', 'deleted', 'skipped', 'errors'],
  properties: {
    inserted: { type: 'integer' },
    replaced: { type: 'integer' },
    unchanged: { type: 'integer' },
    deleted: { type: 'integer' },
    skipped: { type: 'integer' },
    errors: { type: 'integer' },
    first_error: { type: 'string' },
    generated_keys: {
      type: 'array',
      items: { type: 'string' },
      description: 'UUID v4 for each document that had no primary key, in order.',
    },
    document_errors: {
      type: 'array',
      items: {
        type: 'object',
        required: ['index', 'message'],
        properties: {
          index: { type: 'integer', description: '0-based NDJSON line (blank lines count) or array element' },
          message: { type: 'string' },
        },
      },
    },
  },
} as const;

export const TableInfo = {
  $id: 'TableInfo',
  type: 'object',
  required: ['name', 'primaryKey', 'documents', 'bytes'],
  properties: {
    name: { type: 'string' },
    primaryKey: { type: 'string' },
    documents: { type: 'integer' },
    bytes: { type: 'integer' },
  },
} as const;

export const IndexInfo = {
  $id: 'IndexInfo',
  type: 'object',
  required: ['name', 'field', 'multi', 'ready', 'indexed'],
  properties: {
    name: { type: 'string' },
    field: { type: 'string', description: 'Dotted field path, e.g. address.city' },
    multi: { type: 'boolean', description: 'Each element of an array value is an entry.' },
    ready: { type: 'boolean', description: 'The background build finished.' },
    indexed: { type: 'integer', description: 'Documents indexed so far by the build.' },
  },
} as const;

export const ErrorResponse = {
  $id: 'ErrorResponse',
  type: 'object',
  description: 'Every error answer. `code` is one of the WHARF_ERR_* codes of the error catalogue (docs/ERRORS.md).',
  required: ['statusCode', 'code', 'error', 'message'],
  properties: {
    statusCode: { type: 'integer' },
    code: { type: 'string' },
    error: { type: 'string' },
    message: { type: 'string' },
  },
} as const;

export const Document = {
  $id: 'Document',
  type: 'object',
  description: 'A stored JSON document; its primary-key field holds a string or a number.',
  additionalProperties: true,
} as const;

export const Synced = {
  $id: 'Synced',
  type: 'object',
  description: 'Answered once everything acknowledged before the request is durable.',
  required: ['synced'],
  properties: { synced: { type: 'integer', const: 1 } },
} as const;

export const TableParams = {
  $id: 'TableParams',
  type: 'object',
  required: ['table'],
  properties: { table: { type: 'string', minLength: 1, maxLength: 512 } },
} as const;

/** Error responses most routes can give. */
export const errorResponses = {
  400: { $ref: 'ErrorResponse#' },
  404: { $ref: 'ErrorResponse#' },
  500: { $ref: 'ErrorResponse#' },
  503: { $ref: 'ErrorResponse#' },
} as const;

export function registerSchemas(app: FastifyInstance): void {
  for (const s of [WriteResult, TableInfo, IndexInfo, ErrorResponse, Document, Synced, TableParams]) app.addSchema(s);
}
