/**
 * The server's errors. Every error a client can see from the HTTP API, the ws channels or the
 * ReQL port has a code of Wharf's one catalogue (`errorCatalogue` in @wharf/wire, rendered in
 * docs/ERRORS.md), which gives its message template, HTTP status and ReQL error type. Engine
 * failures keep their code: the engine's codes are entries of the same catalogue.
 */
import {
  type ErrorCodeOf,
  errorCatalogue,
  errorCodesOf,
  formatErrorMessage,
  isErrorCode,
  type WharfErrorCode,
} from '@wharf/wire';

export type ErrorCode = WharfErrorCode;
export type EngineErrorCode = ErrorCodeOf<'engine'>;

/** An error of the catalogue, with the status the server answers it with. */
export class WharfServerError extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number;

  constructor(code: ErrorCode, args: readonly (string | number)[] = [], options: { cause?: unknown } = {}) {
    super(formatErrorMessage(code, args), options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'WharfServerError';
    this.code = code;
    this.statusCode = errorCatalogue[code].status;
  }
}

const ENGINE_CODES: ReadonlySet<string> = new Set(errorCodesOf('engine'));

/** The engine's error code, if `err` is an engine error (a WharfError of @wharf/engine). */
export function engineCodeOf(err: unknown): EngineErrorCode | undefined {
  if (err instanceof WharfServerError) return undefined;
  const code = (err as { code?: unknown } | null)?.code;
  return isErrorCode(code) && ENGINE_CODES.has(code) ? (code as EngineErrorCode) : undefined;
}

/**
 * The table and index an engine error concerns: the engine's own fields (set from core's error
 * by the binding), else what the caller knows from its request.
 */
export function engineErrorNames(
  err: unknown,
  context: { table?: string; index?: string } = {},
): { table?: string; index?: string } {
  const { table, index } = (err ?? {}) as { table?: unknown; index?: unknown };
  return {
    table: typeof table === 'string' ? table : context.table,
    index: typeof index === 'string' ? index : context.index,
  };
}

/**
 * Map any error into the catalogue. Engine errors keep their code; the table and index come from
 * the error's fields; the rest keep the engine's message (it names the argument). Catalogue
 * errors pass through; anything else becomes WHARF_ERR_INTERNAL.
 */
export function fromEngineError(err: unknown, context: { table?: string; index?: string } = {}): WharfServerError {
  if (err instanceof WharfServerError) return err;
  const code = engineCodeOf(err);
  const message = err instanceof Error ? err.message : String(err);
  if (code === undefined) return new WharfServerError('WHARF_ERR_INTERNAL', [message], { cause: err });
  const { table = '?', index = '?' } = engineErrorNames(err, context);
  switch (code) {
    case 'WHARF_ERR_TABLE_NOT_FOUND':
    case 'WHARF_ERR_TABLE_EXISTS':
      return new WharfServerError(code, [table], { cause: err });
    case 'WHARF_ERR_INDEX_NOT_FOUND':
    case 'WHARF_ERR_INDEX_EXISTS':
    case 'WHARF_ERR_INDEX_NOT_READY':
      return new WharfServerError(code, [index, table], { cause: err });
    case 'WHARF_ERR_CLOSED':
      return new WharfServerError(code, [], { cause: err });
    default:
      return new WharfServerError(code, [message], { cause: err });
  }
}
