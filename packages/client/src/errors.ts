/**
 * Errors the loader raises. Each has a stable `code` of Wharf's one error catalogue (@wharf/wire,
 * docs/ERRORS.md): the client's own codes, or the code a target answered with, passed through.
 */
import type { ErrorCodeOf, WharfErrorCode } from '@wharf/wire';

/** The codes the loader itself raises. */
export type LoaderErrorCode = ErrorCodeOf<'client'>;

export class LoaderError extends Error {
  readonly code: WharfErrorCode | string;
  /** Set on the error end() throws: the summary of what was done before the failure. */
  summary?: import('./types.js').LoadSummary;
  constructor(code: WharfErrorCode | string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'LoaderError';
    this.code = code;
  }
}

/** The `code` of an error, if it has a string one. */
export function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}
