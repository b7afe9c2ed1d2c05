/**
 * The error catalogue of Wharf: every code any package raises (engine, wire, server, client,
 * CLI), defined once, with what a caller sees at each surface: the HTTP status of the server's
 * answer, the ReQL error type the RethinkDB drivers raise, and the exit status of `wharf`.
 * docs/ERRORS.md is generated from it (`npm run docs:errors`); a test keeps the engine's codes
 * equal to the Rust `ErrorCode::ALL`. Zero dependencies, so every package can import it.
 */

/** The part of Wharf that raises a code. */
export type ErrorLayer = 'engine' | 'wire' | 'server' | 'client' | 'cli';

/**
 * RethinkDB's runtime error types (`ErrorType` of the protocol); the official drivers raise the
 * class in `reqlErrorClasses`. `null` in an entry: the code is not answered over the ReQL port.
 */
export type ReqlErrorType =
  | 'INTERNAL'
  | 'RESOURCE_LIMIT'
  | 'QUERY_LOGIC'
  | 'NON_EXISTENCE'
  | 'OP_FAILED'
  | 'OP_INDETERMINATE'
  | 'USER'
  | 'PERMISSION_ERROR';

/** The driver error class (JavaScript and Python drivers) for each ReQL error type. */
export const reqlErrorClasses: Readonly<Record<ReqlErrorType, string>> = {
  INTERNAL: 'ReqlInternalError',
  RESOURCE_LIMIT: 'ReqlResourceLimitError',
  QUERY_LOGIC: 'ReqlQueryLogicError',
  NON_EXISTENCE: 'ReqlNonExistenceError',
  OP_FAILED: 'ReqlOpFailedError',
  OP_INDETERMINATE: 'ReqlOpIndeterminateError',
  USER: 'ReqlUserError',
  PERMISSION_ERROR: 'ReqlPermissionError',
};

/** Exit statuses of `wharf` for the codes that stop it. */
export const exitCodes = {
  /** The command failed. */
  failed: 1,
  /** A bad command line (an argument, an option, the target). */
  usage: 2,
  /** Interrupted; `wharf import --resume` continues. */
  interrupted: 130,
} as const;

export interface ErrorSpec {
  /** Who raises it. */
  readonly layers: readonly ErrorLayer[];
  /** When it is raised, one sentence. */
  readonly meaning: string;
  /** The message the server sends; `%s` placeholders are filled in order. */
  readonly message: string;
  /** The HTTP status of the server's answer (ws `error` messages carry the code only). */
  readonly status: number;
  /** The ReQL error type a driver query fails with, or null when the ReQL port never answers it. */
  readonly reql: ReqlErrorType | null;
  /** The exit status of `wharf import` when this error stops it. */
  readonly exit: number;
  /** A passing condition: the loader retries a batch that failed with it (with backoff, while retries remain). */
  readonly retryable: boolean;
  /** How to fix it. */
  readonly fix: string;
}

const { failed, usage, interrupted } = exitCodes;

/**
 * Every code, once. The order is the order of docs/ERRORS.md: engine, wire, server, client, CLI.
 * An engine code's `message` is what the server answers; the engine's own message (which names
 * the table, index or argument) is the error's `message` in process.
 */
export const errorCatalogue = {
  // ---- engine (core/src/error.rs `ErrorCode`; the binding passes the code through) ----
  WHARF_ERR_INVALID_ARGUMENT: {
    layers: ['engine', 'server', 'client'],
    meaning: 'A bad argument: a table name, key, option, document batch or loader option.',
    message: '%s',
    status: 400,
    reql: 'QUERY_LOGIC',
    exit: usage,
    retryable: false,
    fix: 'Check the argument named in the message.',
  },
  WHARF_ERR_TABLE_NOT_FOUND: {
    layers: ['engine'],
    meaning: 'The named table does not exist.',
    message: 'Table `%s` does not exist',
    status: 404,
    reql: 'OP_FAILED',
    exit: failed,
    retryable: false,
    fix: 'Create it first (POST /api/tables, `r.tableCreate`), or check the name.',
  },
  WHARF_ERR_TABLE_EXISTS: {
    layers: ['engine'],
    meaning: 'Creating a table whose name exists.',
    message: 'Table `%s` already exists',
    status: 409,
    reql: 'OP_FAILED',
    exit: failed,
    retryable: false,
    fix: 'Use the existing table, or drop it first.',
  },
  WHARF_ERR_INDEX_NOT_FOUND: {
    layers: ['engine'],
    meaning: 'The named secondary index does not exist on the table.',
    message: 'Index `%s` does not exist on table `%s`',
    status: 404,
    reql: 'OP_FAILED',
    exit: failed,
    retryable: false,
    fix: 'Create it first (POST /api/tables/:table/indexes), or check the name (GET /api/tables/:table/indexes).',
  },
  WHARF_ERR_INDEX_EXISTS: {
    layers: ['engine'],
    meaning: 'Creating an index whose name the table already has.',
    message: 'Index `%s` already exists on table `%s`',
    status: 409,
    reql: 'OP_FAILED',
    exit: failed,
    retryable: false,
    fix: 'Use the existing index, or drop it first.',
  },
  WHARF_ERR_INDEX_NOT_READY: {
    layers: ['engine'],
    meaning: 'The index is still being built (a query without `fresh`), or waiting for it timed out.',
    message: 'Index `%s` on table `%s` is still building',
    status: 503,
    reql: 'OP_FAILED',
    exit: failed,
    retryable: false,
    fix: 'Wait for it (POST /api/tables/:table/indexes/wait), or query with fresh=true, which waits.',
  },
  WHARF_ERR_POISONED: {
    layers: ['engine'],
    meaning: 'An earlier journal write or fdatasync failed; writes fail until the database is reopened.',
    message: 'Writes are refused: %s',
    status: 503,
    reql: 'OP_FAILED',
    exit: failed,
    retryable: false,
    fix: 'Check the disk, then restart the server (recovery replays the journal).',
  },
  WHARF_ERR_CLOSED: {
    layers: ['engine'],
    meaning: 'The database was closed.',
    message: 'The database is closed',
    status: 503,
    reql: 'OP_FAILED',
    exit: failed,
    retryable: false,
    fix: 'Open it again (restart the server).',
  },
  WHARF_ERR_LOCKED: {
    layers: ['engine'],
    meaning: 'Another process has the database directory open.',
    message: '%s',
    status: 503,
    reql: 'OP_FAILED',
    exit: failed,
    retryable: false,
    fix: 'Stop the other process, or use another directory.',
  },
  WHARF_ERR_CORRUPT_JOURNAL: {
    layers: ['engine'],
    meaning: 'The journal holds a damaged record followed by records that were already durable.',
    message: '%s',
    status: 500,
    reql: 'INTERNAL',
    exit: failed,
    retryable: false,
    fix: 'Restore the directory from a backup; the message names the segment and offset.',
  },
  WHARF_ERR_CORRUPT_CHECKPOINT: {
    layers: ['engine'],
    meaning: 'No manifest slot or checkpoint file validates.',
    message: '%s',
    status: 500,
    reql: 'INTERNAL',
    exit: failed,
    retryable: false,
    fix: 'Restore the directory from a backup; the message names the file.',
  },
  WHARF_ERR_IO: {
    layers: ['engine'],
    meaning: 'The operating system refused an I/O call.',
    message: '%s',
    status: 500,
    reql: 'OP_FAILED',
    exit: failed,
    retryable: false,
    fix: 'Check the path, its permissions and the free space; the message has the OS error.',
  },

  // ---- wire (the ws ingest frame codec, `@wharf/wire`) ----
  WHARF_ERR_WS_BAD_FRAME: {
    layers: ['wire'],
    meaning: 'A ws ingest frame could not be decoded.',
    message: '%s',
    status: 400,
    reql: null,
    exit: failed,
    retryable: false,
    fix: 'Frames are u32 LE header length | JSON header | payload (docs/CONTRACTS.md §2).',
  },
  WHARF_ERR_WS_FRAME_TOO_LARGE: {
    layers: ['wire', 'server'],
    meaning: 'A ws ingest message (or its header) is over the limit.',
    message: '%s',
    status: 413,
    reql: null,
    exit: failed,
    retryable: false,
    fix: 'Keep one ws message at or below the limit (64 MiB by default; --limit wsMessageBytes=N).',
  },
  WHARF_ERR_WS_BAD_MESSAGE: {
    layers: ['wire'],
    meaning: "A ws message's header is not a valid client message.",
    message: '%s',
    status: 400,
    reql: null,
    exit: failed,
    retryable: false,
    fix: 'Check the header fields against docs/CONTRACTS.md §2.',
  },

  // ---- server (HTTP API, ws channels, RethinkDB port) ----
  WHARF_ERR_BAD_REQUEST: {
    layers: ['server'],
    meaning: 'The request does not match the route schema.',
    message: '%s',
    status: 400,
    reql: null,
    exit: failed,
    retryable: false,
    fix: 'See /openapi.json for the route.',
  },
  WHARF_ERR_MALFORMED_JSON: {
    layers: ['engine', 'server'],
    meaning: 'A request body or a whole batch is not JSON (one bad document is a document error instead).',
    message: 'Malformed JSON: %s',
    status: 400,
    reql: 'QUERY_LOGIC',
    exit: failed,
    retryable: false,
    fix: 'Send valid JSON (or NDJSON with one document per line).',
  },
  WHARF_ERR_UNSUPPORTED_MEDIA_TYPE: {
    layers: ['server'],
    meaning: 'A body of a content type the route does not take.',
    message: 'Unsupported content type %s',
    status: 415,
    reql: null,
    exit: failed,
    retryable: false,
    fix: 'Use application/json (a JSON array) or application/x-ndjson.',
  },
  WHARF_ERR_BODY_TOO_LARGE: {
    layers: ['server'],
    meaning: 'A request body over the limit.',
    message: 'Request body exceeds the limit of %s bytes',
    status: 413,
    reql: null,
    exit: failed,
    retryable: false,
    fix: 'Split the batch, or raise the limit (--limit httpBodyBytes=N).',
  },
  WHARF_ERR_NOT_FOUND: {
    layers: ['server'],
    meaning: 'No such route.',
    message: 'Route %s not found',
    status: 404,
    reql: null,
    exit: failed,
    retryable: false,
    fix: 'See /openapi.json for the routes.',
  },
  WHARF_ERR_DOCUMENT_NOT_FOUND: {
    layers: ['server'],
    meaning: 'GET of a key the table does not hold.',
    message: 'No document with key %s in table `%s`',
    status: 404,
    reql: null,
    exit: failed,
    retryable: false,
    fix: 'Check the key and its type (keyType=string|number).',
  },
  WHARF_ERR_JOB_NOT_FOUND: {
    layers: ['server'],
    meaning: 'GET /api/jobs/:job of a job the coordination table does not hold.',
    message: 'No job `%s` in table `%s`',
    status: 404,
    reql: null,
    exit: failed,
    retryable: false,
    fix: 'Check the name (GET /api/jobs lists the jobs) and the table (jobTable, `wharf import --job-table`).',
  },
  WHARF_ERR_DOCUMENT_TOO_DEEP: {
    layers: ['server'],
    meaning: 'A document nests deeper than the limit; nothing of its batch is written.',
    message: '%s nests deeper than the limit of %s levels of objects and arrays',
    status: 400,
    reql: null,
    exit: failed,
    retryable: false,
    fix: 'Flatten the document.',
  },
  WHARF_ERR_WS_TEXT_FRAME: {
    layers: ['server'],
    meaning: 'A text frame on the ws ingest channel, which takes binary frames.',
    message: 'Text frames are not accepted on the ingest channel',
    status: 400,
    reql: null,
    exit: failed,
    retryable: false,
    fix: 'Send binary frames.',
  },
  WHARF_ERR_UNAUTHORIZED: {
    layers: ['server'],
    meaning: 'A password is required and was missing or wrong.',
    message: '%s',
    status: 401,
    reql: null,
    exit: failed,
    retryable: false,
    fix: 'Send the admin password (WHARF_PASSWORD): `Authorization: Bearer <password>` (or Basic with user admin); wharf://:<password>@host:port for the loader.',
  },
  WHARF_ERR_FORBIDDEN_ORIGIN: {
    layers: ['server'],
    meaning: 'A browser page of another origin tried to write or read.',
    message: 'Origin %s may not %s: only pages served by this server (same origin) or clients that send no Origin',
    status: 403,
    reql: null,
    exit: failed,
    retryable: false,
    fix: 'Call the API from the admin UI or a non-browser client; a page of another site may not write here.',
  },
  WHARF_ERR_REQUEST_TIMEOUT: {
    layers: ['server'],
    meaning: 'A request did not arrive in time; its connection is closed.',
    message: 'The request did not arrive in time (%s); the connection is closed',
    status: 408,
    reql: null,
    exit: failed,
    retryable: false,
    fix: 'Send requests at a reasonable pace, or raise --limit httpRequestTimeoutMs=N (httpHeadersTimeoutMs for headers).',
  },
  WHARF_ERR_BAD_HOST: {
    layers: ['server'],
    meaning: 'The Host header is not a name of this server (DNS rebinding protection).',
    message: 'Host %s is not a name of this server (allowed: %s)',
    status: 421,
    reql: null,
    exit: failed,
    retryable: false,
    fix: 'Use one of the allowed names, or add yours with --allowed-host NAME (env WHARF_ALLOWED_HOSTS).',
  },
  WHARF_ERR_TOO_MANY_LOGINS: {
    layers: ['server'],
    meaning: 'Too many failed logins from one address within a minute.',
    message: '%s failed logins from %s within a minute; retry in %s s',
    status: 429,
    reql: null,
    exit: failed,
    retryable: false,
    fix: 'Check the password; the address may try again when the minute is over (--limit loginFailuresPerMinute=N).',
  },
  WHARF_ERR_HEADERS_TOO_LARGE: {
    layers: ['server'],
    meaning: 'Request headers over 16 KiB.',
    message: 'Request headers exceed 16 KiB',
    status: 431,
    reql: null,
    exit: failed,
    retryable: false,
    fix: 'Send smaller headers (long cookies or URLs).',
  },
  WHARF_ERR_INTERNAL: {
    layers: ['server', 'cli'],
    meaning: 'An unexpected failure: a bug.',
    message: 'Internal error: %s',
    status: 500,
    reql: 'INTERNAL',
    exit: failed,
    retryable: false,
    fix: 'Report it with the server log (or the `wharf` output).',
  },
  WHARF_ERR_SHUTTING_DOWN: {
    layers: ['server'],
    meaning: 'The server is shutting down.',
    message: 'The server is shutting down',
    status: 503,
    reql: null,
    exit: failed,
    retryable: true,
    fix: 'Retry against the restarted server.',
  },
  WHARF_ERR_OVERLOADED: {
    layers: ['server'],
    meaning: 'Request bodies in progress hold the memory limit; the connection is closed.',
    message: 'Request bodies in progress hold %s bytes, the limit (bufferedBodyBytes); retry later',
    status: 503,
    reql: null,
    exit: failed,
    retryable: true,
    fix: 'Retry later, send smaller batches, or raise --limit bufferedBodyBytes=N.',
  },
  WHARF_ERR_TOO_MANY_CONNECTIONS: {
    layers: ['server'],
    meaning: 'The server has its limit of connections open.',
    message: 'The server has %s connections open, its limit (maxConnections)',
    status: 503,
    reql: null,
    exit: failed,
    retryable: false,
    fix: 'Close idle connections, or raise --limit maxConnections=N.',
  },
  WHARF_ERR_SLOW_CLIENT: {
    layers: ['server'],
    meaning: 'A client does not read its responses; its connection is closed.',
    message: 'Closing a client that does not read its responses (%s bytes buffered)',
    status: 503,
    reql: null,
    exit: failed,
    retryable: false,
    fix: 'Read responses as they arrive.',
  },

  // ---- client (`@wharf/client`, the loader) ----
  WHARF_ERR_BAD_TARGET: {
    layers: ['client'],
    meaning: 'The target string is not embedded:DIR, wharf://host:port or rethinkdb://host:port/db.',
    message: '%s',
    status: 400,
    reql: null,
    exit: usage,
    retryable: false,
    fix: "Check --target (or the loader's `target`).",
  },
  WHARF_ERR_ENGINE_MISSING: {
    layers: ['client'],
    meaning: 'An embedded: target, but the optional @wharf/engine package is not installed.',
    message: '%s',
    status: 500,
    reql: null,
    exit: failed,
    retryable: false,
    fix: 'npm install @wharf/engine, or load through a server (wharf://).',
  },
  WHARF_ERR_LOADER_CLOSED: {
    layers: ['client'],
    meaning: 'write() after end() or abort(), or a call on a closed target.',
    message: '%s',
    status: 500,
    reql: null,
    exit: failed,
    retryable: false,
    fix: 'Write before end(); a bug in the caller.',
  },
  WHARF_ERR_MAX_ERRORS: {
    layers: ['client'],
    meaning: 'More documents were rejected than maxErrors (--max-errors) allows.',
    message: '%s',
    status: 400,
    reql: null,
    exit: failed,
    retryable: false,
    fix: 'See the rejected documents (--rejects FILE); fix the input or raise --max-errors.',
  },
  WHARF_ERR_ABORTED: {
    layers: ['client'],
    meaning: 'abort() was called (Ctrl-C).',
    message: '%s',
    status: 500,
    reql: null,
    exit: interrupted,
    retryable: false,
    fix: 'Continue with `wharf import --resume`.',
  },
  WHARF_ERR_TRANSPORT: {
    layers: ['client'],
    meaning: 'A connection to a remote target failed or closed (retried while retries remain).',
    message: '%s',
    status: 503,
    reql: null,
    exit: failed,
    retryable: true,
    fix: 'Check that the server runs and is reachable.',
  },
  WHARF_ERR_TARGET: {
    layers: ['client'],
    meaning: 'The target answered a request with an error that has no code of its own, or cannot do what was asked.',
    message: '%s',
    status: 500,
    reql: null,
    exit: failed,
    retryable: false,
    fix: "See the message; it holds the target's answer.",
  },
  WHARF_ERR_INCOMPLETE: {
    layers: ['client', 'cli'],
    meaning: 'The acknowledged counts do not add up to the documents handed over (written ≠ read − rejected).',
    message: '%s',
    status: 500,
    reql: null,
    exit: failed,
    retryable: false,
    fix: 'A bug in the target or the loader: report it; `--resume` re-sends what is missing.',
  },

  // ---- cli (`wharf`) ----
  WHARF_ERR_USAGE: {
    layers: ['cli'],
    meaning: 'A bad command line, or a checkpoint that belongs to another import.',
    message: '%s',
    status: 400,
    reql: null,
    exit: usage,
    retryable: false,
    fix: 'See `wharf <command> --help`.',
  },
  WHARF_ERR_BAD_INPUT: {
    layers: ['cli'],
    meaning:
      'The input file cannot be read as the format (CSV structure, an unterminated JSON array); the report names the line.',
    message: '%s',
    status: 400,
    reql: null,
    exit: failed,
    retryable: false,
    fix: 'Fix the input at the line named; what was read before it is written.',
  },
} as const satisfies Record<string, ErrorSpec>;

export type WharfErrorCode = keyof typeof errorCatalogue;

/** The codes a layer raises, as a type: `ErrorCodeOf<'engine'>`. */
export type ErrorCodeOf<L extends ErrorLayer> = {
  [K in WharfErrorCode]: L extends (typeof errorCatalogue)[K]['layers'][number] ? K : never;
}[WharfErrorCode];

/** Every code, in catalogue order. */
export const errorCodes = Object.keys(errorCatalogue) as WharfErrorCode[];

/** The codes a layer raises. */
export function errorCodesOf<L extends ErrorLayer>(layer: L): ErrorCodeOf<L>[] {
  return errorCodes.filter((code) =>
    (errorCatalogue[code].layers as readonly ErrorLayer[]).includes(layer),
  ) as ErrorCodeOf<L>[];
}

export function isErrorCode(code: unknown): code is WharfErrorCode {
  return typeof code === 'string' && Object.hasOwn(errorCatalogue, code);
}

/** The entry of a code. */
export function errorSpec(code: WharfErrorCode): ErrorSpec {
  return errorCatalogue[code];
}

/** The code's message template with `%s` filled in order. */
export function formatErrorMessage(code: WharfErrorCode, args: readonly (string | number)[] = []): string {
  let i = 0;
  return errorCatalogue[code].message.replace(/%s/g, () => String(args[i++] ?? ''));
}

/** The exit status of `wharf` for an error with this code; unknown or absent codes: 1 (failed). */
export function exitCodeOf(code: unknown): number {
  return isErrorCode(code) ? errorCatalogue[code].exit : exitCodes.failed;
}

/** The codes of the frame codec. */
export type WireErrorCode = ErrorCodeOf<'wire'>;

/** Why a frame or message could not be decoded. `code` is stable and also sent in `error` messages. */
export class WireError extends Error {
  readonly code: WireErrorCode;
  /** The message id, when the header was readable far enough to have one. */
  readonly id: number | null;

  constructor(code: WireErrorCode, message: string, id: number | null = null) {
    super(message);
    this.name = 'WireError';
    this.code = code;
    this.id = id;
  }
}
