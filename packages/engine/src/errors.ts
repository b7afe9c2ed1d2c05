/**
 * Every error the engine raises is a `WharfError` with a stable `code`. The codes are the
 * engine's (`core/src/error.rs`, passed through unchanged by the native binding) and are entries
 * of Wharf's one error catalogue (`@wharf/wire`, docs/ERRORS.md); a test keeps the two equal.
 */
import { type ErrorCodeOf, errorCodesOf, isErrorCode, type WharfErrorCode } from '@wharf/wire';

/** The codes the engine raises, from the catalogue (docs/ERRORS.md says what each means). */
export const ERROR_CODES: readonly ErrorCode[] = errorCodesOf('engine');

export type ErrorCode = ErrorCodeOf<'engine'>;

export class WharfError extends Error {
  readonly code: ErrorCode;
  /** The table the error concerns, when the engine named one. */
  readonly table?: string;
  /** The secondary index the error concerns, when the engine named one. */
  readonly index?: string;

  constructor(code: ErrorCode, message: string, names: { table?: string; index?: string } = {}) {
    super(message);
    this.name = 'WharfError';
    this.code = code;
    if (names.table !== undefined) this.table = names.table;
    if (names.index !== undefined) this.index = names.index;
  }
}

const ENGINE_CODES: ReadonlySet<WharfErrorCode> = new Set(ERROR_CODES);

/**
 * A `WharfError` from an error the native binding threw or rejected with (its `table` and
 * `index` properties, which the binding sets from the engine's error, are kept); other values as is.
 */
export function toWharfError(error: unknown): unknown {
  if (error instanceof WharfError || !(error instanceof Error)) return error;
  const { code, table, index } = error as { code?: unknown; table?: unknown; index?: unknown };
  if (isErrorCode(code) && ENGINE_CODES.has(code)) {
    return new WharfError(code as ErrorCode, error.message, {
      ...(typeof table === 'string' ? { table } : {}),
      ...(typeof index === 'string' ? { index } : {}),
    });
  }
  return error;
}

/** Shorthand for the argument errors raised in JS before anything reaches the engine. */
export function invalidArgument(message: string): WharfError {
  return new WharfError('WHARF_ERR_INVALID_ARGUMENT', message);
}
