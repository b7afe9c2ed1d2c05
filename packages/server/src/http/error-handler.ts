/**
 * Turns every failure into the ErrorResponse shape with a WHARF_ERR_* code of the catalogue
 * (@wharf/wire, docs/ERRORS.md), answered with the status the catalogue gives it.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { engineCodeOf, fromEngineError, WharfServerError } from '../errors.js';

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  408: 'Request Timeout',
  421: 'Misdirected Request',
  429: 'Too Many Requests',
  409: 'Conflict',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

export function toServerError(
  err: FastifyError | Error,
  tableHint?: string,
  contentType?: string,
  indexHint?: string,
  bodyLimit?: number,
): WharfServerError {
  if (err instanceof WharfServerError) return err;
  const fe = err as FastifyError;
  if (fe.validation) return new WharfServerError('WHARF_ERR_BAD_REQUEST', [fe.message], { cause: err });
  switch (fe.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new WharfServerError('WHARF_ERR_BODY_TOO_LARGE', [String(bodyLimit ?? '?')], { cause: err });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new WharfServerError('WHARF_ERR_UNSUPPORTED_MEDIA_TYPE', [JSON.stringify(contentType ?? '')], {
        cause: err,
      });
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new WharfServerError('WHARF_ERR_MALFORMED_JSON', [fe.message], { cause: err });
  }
  if (err instanceof SyntaxError)
    return new WharfServerError('WHARF_ERR_MALFORMED_JSON', [err.message], { cause: err });
  if (engineCodeOf(err) !== undefined) return fromEngineError(err, { table: tableHint, index: indexHint });
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return new WharfServerError('WHARF_ERR_BAD_REQUEST', [fe.message], { cause: err });
  }
  return fromEngineError(err, { table: tableHint });
}

export function sendError(reply: FastifyReply, e: WharfServerError): FastifyReply {
  const body: Record<string, unknown> = {
    statusCode: e.statusCode,
    code: e.code,
    error: STATUS_TEXT[e.statusCode] ?? 'Error',
    message: e.message,
  };
  return reply.code(e.statusCode).type('application/json').send(body);
}

export function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const params = request.params as { table?: string; name?: string } | undefined;
    const e = toServerError(
      err,
      params?.table,
      request.headers['content-type'],
      params?.name,
      request.routeOptions.bodyLimit ?? app.initialConfig.bodyLimit,
    );
    if (e.statusCode >= 500) request.log.error({ err }, e.message);
    else request.log.info({ code: e.code }, e.message);
    return sendError(reply, e);
  });
  app.setNotFoundHandler((request, reply) => {
    return sendError(reply, new WharfServerError('WHARF_ERR_NOT_FOUND', [`${request.method} ${request.url}`]));
  });
}
