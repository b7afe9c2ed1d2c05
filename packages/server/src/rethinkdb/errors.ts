/**
 * ReQL errors and the response bodies that carry them. Every error response has `"b":[]` at
 * least (the official driver crashes without it) and RUNTIME_ERROR carries `e`.
 */
import { ErrorType, type ErrorTypeValue, ResponseType } from './protocol.js';

export type Frame = number | string;

export class ReqlError extends Error {
  readonly responseType: number;
  readonly errorType: ErrorTypeValue | undefined;
  backtrace: Frame[];

  constructor(responseType: number, message: string, errorType?: ErrorTypeValue, backtrace: Frame[] = []) {
    super(message);
    this.name = 'ReqlError';
    this.responseType = responseType;
    this.errorType = errorType;
    this.backtrace = backtrace;
  }
}

export class ReqlClientError extends ReqlError {
  constructor(message: string) {
    super(ResponseType.CLIENT_ERROR, message);
    this.name = 'ReqlClientError';
  }
}

export class ReqlCompileError extends ReqlError {
  constructor(message: string, backtrace: Frame[] = []) {
    super(ResponseType.COMPILE_ERROR, message, undefined, backtrace);
    this.name = 'ReqlCompileError';
  }
}

export class ReqlRuntimeError extends ReqlError {
  constructor(message: string, errorType: ErrorTypeValue = ErrorType.QUERY_LOGIC, backtrace: Frame[] = []) {
    super(ResponseType.RUNTIME_ERROR, message, errorType, backtrace);
    this.name = 'ReqlRuntimeError';
  }
}

/**
 * `r.error()` with no message: inside a `default` fallback it means "the original error" (or the
 * original null); escaping, it is a QUERY_LOGIC error (RethinkDB's EMPTY_USER).
 */
export class EmptyUserError extends ReqlRuntimeError {}

/** RethinkDB's text for an array past the array limit (the `array_limit` global optarg). */
export const arrayOverLimit = (limit: number): ReqlRuntimeError =>
  new ReqlRuntimeError(
    `Array over size limit \`${limit}\`.  To raise the number of allowed elements, modify the \`array_limit\` option to \`.run\` (not available in the Data Explorer), or use an index.`,
    ErrorType.RESOURCE_LIMIT,
  );

export const queryLogic = (message: string): ReqlRuntimeError => new ReqlRuntimeError(message, ErrorType.QUERY_LOGIC);
export const nonExistence = (message: string): ReqlRuntimeError =>
  new ReqlRuntimeError(message, ErrorType.NON_EXISTENCE);
export const opFailed = (message: string): ReqlRuntimeError => new ReqlRuntimeError(message, ErrorType.OP_FAILED);
export const resourceLimit = (message: string): ReqlRuntimeError =>
  new ReqlRuntimeError(message, ErrorType.RESOURCE_LIMIT);
export const internalError = (message: string): ReqlRuntimeError => new ReqlRuntimeError(message, ErrorType.INTERNAL);

/** The JSON body of an error response. */
export function errorBody(err: ReqlError): string {
  const body: Record<string, unknown> = { t: err.responseType };
  if (err.responseType === ResponseType.RUNTIME_ERROR) body.e = err.errorType ?? ErrorType.INTERNAL;
  body.r = [err.message];
  body.b = err.backtrace;
  return JSON.stringify(body);
}

/** Any thrown value as a ReqlError (unexpected failures become RUNTIME_ERROR INTERNAL). */
export function asReqlError(err: unknown): ReqlError {
  if (err instanceof ReqlError) return err;
  if (err instanceof RangeError && /call stack/i.test(err.message)) {
    // The compiler's depth limits keep evaluation well within the stack; should a query still
    // exhaust it, the client gets a limit error, not a crash or V8's message.
    return new ReqlRuntimeError('The query is too deeply nested to evaluate.', ErrorType.RESOURCE_LIMIT);
  }
  const message = err instanceof Error ? err.message : String(err);
  return internalError(`Internal error: ${message}`);
}
