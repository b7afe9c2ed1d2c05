/**
 * Every error the engine raises is a `WharfError` with a stable `code`. The codes are the
 * engine's (`core/src/error.rs`); the native binding passes them through unchanged.
 */
export const ERROR_CODES = [
  /** A bad argument: a table name, key, option or document batch. */
  'WHARF_INVALID_ARGUMENT',
  /** The named table does not exist. */
  'WHARF_TABLE_NOT_FOUND',
  /** `createTable` on a name that exists. */
  'WHARF_TABLE_EXISTS',
  /** The named secondary index does not exist on the table. */
  'WHARF_INDEX_NOT_FOUND',
  /** `createIndex` on a name the table already has. */
  'WHARF_INDEX_EXISTS',
  /** The index is still being built (query without `fresh`), or `indexWait` timed out. */
  'WHARF_INDEX_NOT_READY',
  /** An earlier journal write or fdatasync failed; writes fail until the database is reopened. */
  'WHARF_POISONED',
  /** The database was closed. */
  'WHARF_CLOSED',
  /** Another process has the database directory open. */
  'WHARF_LOCKED',
  /** The journal holds a damaged record followed by records that were already durable. */
  'WHARF_CORRUPT_JOURNAL',
  /** No manifest slot or checkpoint file validates. */
  'WHARF_CORRUPT_CHECKPOINT',
  /** The operating system refused an I/O call. */
  'WHARF_IO',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export class WharfError extends Error {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string) {
    super(message);
    this.name = 'WharfError';
    this.code = code;
  }
}

const KNOWN_CODES: ReadonlySet<string> = new Set(ERROR_CODES);

/** A `WharfError` from an error the native binding threw or rejected with; other values as is. */
export function toWharfError(error: unknown): unknown {
  if (error instanceof WharfError || !(error instanceof Error)) return error;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && KNOWN_CODES.has(code)) {
    return new WharfError(code as ErrorCode, error.message);
  }
  return error;
}

/** Shorthand for the argument errors raised in JS before anything reaches the engine. */
export function invalidArgument(message: string): WharfError {
  return new WharfError('WHARF_INVALID_ARGUMENT', message);
}
