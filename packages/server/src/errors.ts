/**
 * The server's error catalog: every error a client can see from the HTTP API or the ws ingest
 * channel has one stable `WHARF_ERR_*` code, an HTTP status and a message template, defined here
 * once. README.md ("Error catalog") lists each code with how to fix it.
 *
 * Engine failures (WharfError with a `WHARF_*` code from @wharf/engine) are mapped one-to-one by
 * `fromEngineError`; the engine's own code is kept as `engineCode`.
 */

export interface CatalogEntry {
  status: number;
  /** Message template; `%s` placeholders are filled in order. */
  message: string;
  /** How to fix it (rendered in README.md). */
  fix: string;
}

export const catalog = {
  WHARF_ERR_BAD_REQUEST: { status: 400, message: '%s', fix: 'The request does not match the route schema; see /openapi.json.' },
  WHARF_ERR_MALFORMED_JSON: { status: 400, message: 'Malformed JSON: %s', fix: 'Send valid JSON (or NDJSON with one document per line).' },
  WHARF_ERR_INVALID_ARGUMENT: { status: 400, message: '%s', fix: 'Check the argument named in the message (table name, key, option or document).' },
  WHARF_ERR_UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'Unsupported content type %s', fix: 'Use application/json (a JSON array) or application/x-ndjson.' },
  WHARF_ERR_BODY_TOO_LARGE: { status: 413, message: 'Request body exceeds the limit of %s bytes', fix: 'Split the batch, or raise the limit (--limit httpBodyBytes=N).' },
  WHARF_ERR_NOT_FOUND: { status: 404, message: 'Route %s not found', fix: 'See /openapi.json for the routes.' },
  WHARF_ERR_TABLE_NOT_FOUND: { status: 404, message: 'Table `%s` does not exist', fix: 'Create it first (POST /api/tables), or check the name.' },
  WHARF_ERR_TABLE_EXISTS: { status: 409, message: 'Table `%s` already exists', fix: 'Use the existing table, or drop it first.' },
  WHARF_ERR_INDEX_NOT_FOUND: { status: 404, message: 'Index `%s` does not exist on table `%s`', fix: 'Create it first (POST /api/tables/:table/indexes), or check the name (GET /api/tables/:table/indexes).' },
  WHARF_ERR_INDEX_EXISTS: { status: 409, message: 'Index `%s` already exists on table `%s`', fix: 'Use the existing index, or drop it first.' },
  WHARF_ERR_INDEX_NOT_READY: { status: 503, message: 'Index `%s` on table `%s` is still building', fix: 'Wait for it (POST /api/tables/:table/indexes/wait), or query with fresh=true, which waits.' },
  WHARF_ERR_DOCUMENT_NOT_FOUND: { status: 404, message: 'No document with key %s in table `%s`', fix: 'Check the key and its type (keyType=string|number).' },
  WHARF_ERR_SHUTTING_DOWN: { status: 503, message: 'The server is shutting down', fix: 'Retry against the restarted server.' },
  WHARF_ERR_ENGINE_POISONED: { status: 503, message: 'Writes are refused: %s', fix: 'Check the disk, then restart the server (recovery replays the journal).' },
  WHARF_ERR_ENGINE_CLOSED: { status: 503, message: 'The database is closed', fix: 'Restart the server.' },
  WHARF_ERR_ENGINE: { status: 500, message: 'Engine error: %s', fix: 'See the server log; the engine code is in `engineCode`.' },
  WHARF_ERR_INTERNAL: { status: 500, message: 'Internal error: %s', fix: 'A bug: report it with the server log.' },
  WHARF_ERR_WS_BAD_FRAME: { status: 400, message: '%s', fix: 'Frames are u32 LE header length | JSON header | payload (docs/CONTRACTS.md §2).' },
  WHARF_ERR_WS_BAD_MESSAGE: { status: 400, message: '%s', fix: 'Check the header fields against docs/CONTRACTS.md §2.' },
  WHARF_ERR_WS_FRAME_TOO_LARGE: { status: 413, message: '%s', fix: 'Keep one ws message at or below the limit (64 MiB by default; --limit wsMessageBytes=N).' },
  WHARF_ERR_WS_TEXT_FRAME: { status: 400, message: 'Text frames are not accepted on the ingest channel', fix: 'Send binary frames.' },
  WHARF_ERR_DOCUMENT_TOO_DEEP: { status: 400, message: '%s nests deeper than the limit of %s levels of objects and arrays', fix: 'Flatten the document; nothing of the batch was written.' },
  WHARF_ERR_UNAUTHORIZED: { status: 401, message: '%s', fix: 'Send the admin password (WHARF_PASSWORD): `Authorization: Bearer <password>` (or Basic with user admin); wharf://:<password>@host:port for the loader.' },
  WHARF_ERR_TOO_MANY_LOGINS: { status: 429, message: '%s failed logins from %s within a minute; retry in %s s', fix: 'Check the password; the address may try again when the minute is over (--limit loginFailuresPerMinute=N).' },
  WHARF_ERR_FORBIDDEN_ORIGIN: { status: 403, message: 'Origin %s may not %s: only pages served by this server (same origin) or clients that send no Origin', fix: 'Call the API from the admin UI or a non-browser client; a page of another site may not write here.' },
  WHARF_ERR_BAD_HOST: { status: 421, message: 'Host %s is not a name of this server (allowed: %s)', fix: 'Use one of the allowed names, or add yours with --allowed-host NAME (env WHARF_ALLOWED_HOSTS).' },
  WHARF_ERR_OVERLOADED: { status: 503, message: 'Request bodies in progress hold %s bytes, the limit (bufferedBodyBytes); retry later', fix: 'Retry later, send smaller batches, or raise --limit bufferedBodyBytes=N.' },
  WHARF_ERR_TOO_MANY_CONNECTIONS: { status: 503, message: 'The server has %s connections open, its limit (maxConnections)', fix: 'Close idle connections, or raise --limit maxConnections=N.' },
  WHARF_ERR_REQUEST_TIMEOUT: { status: 408, message: 'The request did not arrive in time (%s); the connection is closed', fix: 'Send requests at a reasonable pace, or raise --limit httpRequestTimeoutMs=N (httpHeadersTimeoutMs for headers).' },
  WHARF_ERR_HEADERS_TOO_LARGE: { status: 431, message: 'Request headers exceed 16 KiB', fix: 'Send smaller headers (long cookies or URLs).' },
  WHARF_ERR_SLOW_CLIENT: { status: 503, message: 'Closing a client that does not read its responses (%s bytes buffered)', fix: 'Read responses as they arrive.' },
} as const satisfies Record<string, CatalogEntry>;

export type ErrorCode = keyof typeof catalog;

/** An error from the catalog. `engineCode` is set when it wraps an engine failure. */
export class WharfServerError extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number;
  readonly engineCode?: string;

  constructor(code: ErrorCode, args: readonly (string | number)[] = [], options: { engineCode?: string; cause?: unknown } = {}) {
    super(format(catalog[code].message, args), options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'WharfServerError';
    this.code = code;
    this.statusCode = catalog[code].status;
    if (options.engineCode !== undefined) this.engineCode = options.engineCode;
  }
}

function format(template: string, args: readonly (string | number)[]): string {
  let i = 0;
  return template.replace(/%s/g, () => String(args[i++] ?? ''));
}

/** Engine codes (docs/CONTRACTS.md §1) → catalog codes. */
const ENGINE_CODES: Record<string, ErrorCode> = {
  WHARF_INVALID_ARGUMENT: 'WHARF_ERR_INVALID_ARGUMENT',
  WHARF_TABLE_NOT_FOUND: 'WHARF_ERR_TABLE_NOT_FOUND',
  WHARF_TABLE_EXISTS: 'WHARF_ERR_TABLE_EXISTS',
  WHARF_POISONED: 'WHARF_ERR_ENGINE_POISONED',
  WHARF_CLOSED: 'WHARF_ERR_ENGINE_CLOSED',
  WHARF_INDEX_NOT_FOUND: 'WHARF_ERR_INDEX_NOT_FOUND',
  WHARF_INDEX_EXISTS: 'WHARF_ERR_INDEX_EXISTS',
  WHARF_INDEX_NOT_READY: 'WHARF_ERR_INDEX_NOT_READY',
};

/** The engine's error code, if `err` is an engine error. */
export function engineCodeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('WHARF_') && !code.startsWith('WHARF_ERR_') ? code : undefined;
}

/**
 * Map any error into the catalog. Engine errors keep their message (it names the table or the
 * argument), catalog errors pass through, anything else becomes WHARF_ERR_INTERNAL.
 */
export function fromEngineError(err: unknown, context: { table?: string; index?: string } = {}): WharfServerError {
  if (err instanceof WharfServerError) return err;
  const engineCode = engineCodeOf(err);
  const message = err instanceof Error ? err.message : String(err);
  if (engineCode !== undefined) {
    const code = ENGINE_CODES[engineCode] ?? 'WHARF_ERR_ENGINE';
    let e: WharfServerError;
    if (code === 'WHARF_ERR_TABLE_NOT_FOUND' || code === 'WHARF_ERR_TABLE_EXISTS') {
      e = new WharfServerError(code, [context.table ?? '?'], { engineCode, cause: err });
    } else if (code === 'WHARF_ERR_INDEX_NOT_FOUND' || code === 'WHARF_ERR_INDEX_EXISTS' || code === 'WHARF_ERR_INDEX_NOT_READY') {
      e = new WharfServerError(code, [context.index ?? indexNameIn(message) ?? '?', context.table ?? '?'], { engineCode, cause: err });
    } else if (code === 'WHARF_ERR_ENGINE_CLOSED') {
      e = new WharfServerError(code, [], { engineCode, cause: err });
    } else {
      e = new WharfServerError(code, [message], { engineCode, cause: err });
    }
    return e;
  }
  return new WharfServerError('WHARF_ERR_INTERNAL', [message], { cause: err });
}

/** The first backquoted or quoted name in an engine message ("index `by_city` …"), if any. */
function indexNameIn(message: string): string | undefined {
  const m = /index [`'"]([^`'"]+)[`'"]/i.exec(message);
  return m?.[1];
}

/**
 * Like fromEngineError, for bulk inserts: a batch the engine's parser can't read at all (not one
 * bad document: those come back in document_errors) is WHARF_ERR_MALFORMED_JSON.
 */
export function fromInsertError(err: unknown, table: string): WharfServerError {
  if (engineCodeOf(err) === 'WHARF_INVALID_ARGUMENT' && /^invalid JSON/i.test((err as Error).message)) {
    return new WharfServerError('WHARF_ERR_MALFORMED_JSON', [(err as Error).message], { engineCode: 'WHARF_INVALID_ARGUMENT', cause: err });
  }
  return fromEngineError(err, { table });
}
