/** Errors the loader raises. Each has a stable string `code`. */

export type LoaderErrorCode =
  /** The target string is not embedded:DIR, wharf://host:port or rethinkdb://…/db. */
  | 'WHARF_BAD_TARGET'
  /** An option is out of range or of the wrong type. */
  | 'WHARF_INVALID_ARGUMENT'
  /** embedded: target but the optional @wharf/engine package is not installed. */
  | 'WHARF_ENGINE_MISSING'
  /** write() after end() or abort(). */
  | 'WHARF_LOADER_CLOSED'
  /** More documents were rejected than maxErrors allows. */
  | 'WHARF_MAX_ERRORS'
  /** abort() was called. */
  | 'WHARF_ABORTED'
  /** A connection to a remote target failed or closed (retried while retries remain). */
  | 'WHARF_TRANSPORT'
  /** The target answered a request with an error. */
  | 'WHARF_TARGET_ERROR'
  /** The acknowledged counts do not add up to the documents handed over. */
  | 'WHARF_INCOMPLETE';

export class LoaderError extends Error {
  readonly code: LoaderErrorCode | string;
  /** Set on the error end() throws: the summary of what was done before the failure. */
  summary?: import('./types.js').LoadSummary;
  constructor(code: LoaderErrorCode | string, message: string, options?: { cause?: unknown }) {
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
