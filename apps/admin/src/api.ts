/**
 * Typed client for the Wharf server's HTTP API and its /ws/stats feed (packages/server/README.md).
 * Every failed request throws an ApiError carrying the server's `{ statusCode, code, message }`,
 * so views can show it as is. Same origin by default (the server serves this app at /).
 */

export type Key = string | number;
export type Doc = Record<string, unknown>;
/**
 * Durability, conflict modes, RethinkDB's write-result shape, table listings and the engine's
 * counters: the shapes `@wharf/wire` defines once for the engine, the server and this app.
 */
export type { Conflict, Durability, EngineStats, TableInfo, WriteResult } from '@wharf/wire';

import type {
  Conflict,
  Durability,
  EngineStats,
  ImportRun,
  JobList,
  JobStatus,
  TableInfo,
  ServerCounters as WireServerCounters,
  WriteResult,
} from '@wharf/wire';

/** The server's counters (shape from `@wharf/wire`), plus what the snapshot adds. */
export type ServerCounters = WireServerCounters & {
  uptimeMs: number;
  inflightWrites: number;
  [other: string]: unknown;
};

export interface StatsSnapshot {
  time: number;
  engine: EngineStats;
  server: ServerCounters;
}

export interface ScanOptions {
  gt?: string;
  gte?: string;
  lt?: string;
  lte?: string;
  limit?: number;
  reverse?: boolean;
  after?: string;
}

export interface ScanPage {
  documents: Doc[];
  next: string | null;
}

/** Distributed imports (`wharf import --job`): the list's rows and one job's tasks and workers. */
export type { ImportFormat, ImportRun, JobList, JobStatus, JobSummary } from '@wharf/wire';

export type ImportRunStart = Pick<ImportRun, 'table' | 'file' | 'format' | 'bytes' | 'durability' | 'conflict'> & {
  source?: string;
};
export type ImportRunUpdate = Partial<
  Omit<ImportRun, 'id' | 'table' | 'source' | 'startedAt' | 'updatedAt' | 'finishedAt'>
>;

/** A failed request: the server's error body when it sent one, else a network/HTTP description. */
export class ApiError extends Error {
  readonly status: number;
  /** A code of the error catalogue (docs/ERRORS.md), or HTTP_<status> when the answer had none. */
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
  }
}

/** One line for the UI: `CODE (status): message`. */
export function describeError(err: unknown): string {
  if (err instanceof ApiError) return `${err.code}${err.status ? ` (${err.status})` : ''}: ${err.message}`;
  if (err instanceof Error) return err.message;
  return String(err);
}

const PASSWORD_KEY = 'wharf.password';

/** Fired on `window` when the server answers 401: the app then asks for the admin password. */
export const UNAUTHORIZED_EVENT = 'wharf:unauthorized';

/** The admin password for this tab (sessionStorage: gone when the tab closes), or null. */
export function storedPassword(): string | null {
  try {
    return sessionStorage.getItem(PASSWORD_KEY);
  } catch {
    return null;
  }
}

export function storePassword(password: string | null): void {
  try {
    if (password === null) sessionStorage.removeItem(PASSWORD_KEY);
    else sessionStorage.setItem(PASSWORD_KEY, password);
  } catch {
    // storage disabled: the password lasts until reload
  }
  memoryPassword = password;
}

let memoryPassword: string | null = null;

function currentPassword(): string | null {
  return memoryPassword ?? storedPassword();
}

/** base64url of UTF-8 text (the ws token subprotocol). */
function base64url(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** Subprotocols for a ws to the server: browsers cannot set Authorization on a WebSocket. */
export function wsProtocols(): string[] {
  const password = currentPassword();
  return password === null ? [] : ['wharf', `wharf-token.${base64url(password)}`];
}

export class WharfApi {
  readonly base: string;

  constructor(base = '') {
    this.base = base.replace(/\/$/, '');
  }

  async request<T>(
    method: string,
    path: string,
    body?: { json: unknown } | { text: string; type: string },
  ): Promise<T> {
    const password = currentPassword();
    const init: RequestInit = {
      method,
      headers: { accept: 'application/json', ...(password !== null ? { authorization: `Bearer ${password}` } : {}) },
    };
    if (body && 'json' in body) {
      init.body = JSON.stringify(body.json);
      init.headers = { ...init.headers, 'content-type': 'application/json' };
    } else if (body) {
      init.body = body.text;
      init.headers = { ...init.headers, 'content-type': body.type };
    }
    let res: Response;
    try {
      res = await fetch(`${this.base}${path}`, init);
    } catch (err) {
      throw new ApiError(
        0,
        'NETWORK_ERROR',
        `${method} ${path}: the server did not answer (${err instanceof Error ? err.message : String(err)})`,
      );
    }
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (res.status === 401 && typeof window !== 'undefined') window.dispatchEvent(new Event(UNAUTHORIZED_EVENT));
    if (!res.ok) {
      const e = parsed as { code?: string; message?: string } | undefined;
      throw new ApiError(
        res.status,
        e?.code ?? `HTTP_${res.status}`,
        e?.message ?? (text.slice(0, 300) || res.statusText),
      );
    }
    if (parsed === undefined && text !== '')
      throw new ApiError(res.status, 'BAD_RESPONSE', `${method} ${path}: the answer is not JSON`);
    return parsed as T;
  }

  listTables(): Promise<TableInfo[]> {
    return this.request<{ tables: TableInfo[] }>('GET', '/api/tables').then((r) => r.tables);
  }

  createTable(name: string, primaryKey?: string): Promise<{ created: boolean; name: string; primaryKey: string }> {
    return this.request('POST', '/api/tables', { json: primaryKey ? { name, primaryKey } : { name } });
  }

  dropTable(name: string): Promise<{ dropped: boolean; name: string }> {
    return this.request('DELETE', `/api/tables/${enc(name)}`);
  }

  count(table: string): Promise<number> {
    return this.request<{ count: number }>('GET', `/api/tables/${enc(table)}/count`).then((r) => r.count);
  }

  scan(table: string, opts: ScanOptions = {}): Promise<ScanPage> {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(opts)) if (v !== undefined && v !== '') q.set(k, String(v));
    const qs = q.toString();
    return this.request('GET', `/api/tables/${enc(table)}/documents${qs ? `?${qs}` : ''}`);
  }

  /** Get by key. A string key typed by a person can use keyType 'auto' (a number first, then the string). */
  get(table: string, key: Key, type: 'auto' | 'string' | 'number' = keyType(key)): Promise<Doc> {
    return this.request('GET', `/api/tables/${enc(table)}/documents/${enc(String(key))}?keyType=${type}`);
  }

  /** Insert one document or an array (JSON body). */
  insert(
    table: string,
    docs: Doc | Doc[],
    opts: { durability?: Durability; conflict?: Conflict } = {},
  ): Promise<WriteResult> {
    return this.request('POST', `/api/tables/${enc(table)}/documents${writeQuery(opts)}`, { json: docs });
  }

  /** Insert raw NDJSON text (parsed by the engine). */
  insertNdjson(
    table: string,
    ndjson: string,
    opts: { durability?: Durability; conflict?: Conflict } = {},
  ): Promise<WriteResult> {
    return this.request('POST', `/api/tables/${enc(table)}/documents${writeQuery(opts)}`, {
      text: ndjson,
      type: 'application/x-ndjson',
    });
  }

  /** Insert a batch already serialized: NDJSON text or a JSON array text. */
  insertRaw(
    table: string,
    body: string,
    kind: 'ndjson' | 'json',
    opts: { durability?: Durability; conflict?: Conflict } = {},
  ): Promise<WriteResult> {
    const type = kind === 'ndjson' ? 'application/x-ndjson' : 'application/json';
    return this.request('POST', `/api/tables/${enc(table)}/documents${writeQuery(opts)}`, { text: body, type });
  }

  delete(table: string, key: Key, opts: { durability?: Durability } = {}): Promise<WriteResult> {
    const q = new URLSearchParams({ keyType: keyType(key) });
    if (opts.durability) q.set('durability', opts.durability);
    return this.request('DELETE', `/api/tables/${enc(table)}/documents/${enc(String(key))}?${q}`);
  }

  stats(): Promise<StatsSnapshot> {
    return this.request('GET', '/api/stats');
  }

  listImports(): Promise<ImportRun[]> {
    return this.request<{ runs: ImportRun[] }>('GET', '/api/imports').then((r) => r.runs);
  }

  startImport(run: ImportRunStart): Promise<ImportRun> {
    return this.request('POST', '/api/imports', { json: run });
  }

  updateImport(id: number, update: ImportRunUpdate): Promise<ImportRun> {
    return this.request('PATCH', `/api/imports/${id}`, { json: update });
  }

  /** Every job in the server's coordination table (`wharf_jobs`), in name order. */
  listJobs(): Promise<JobList> {
    return this.request('GET', '/api/jobs');
  }

  /** One job's totals, workers and tasks; WHARF_ERR_JOB_NOT_FOUND (404) when the table has none of that name. */
  job(name: string): Promise<JobStatus> {
    return this.request('GET', `/api/jobs/${enc(name)}`);
  }
}

function enc(s: string): string {
  return encodeURIComponent(s);
}

function keyType(key: Key): 'number' | 'string' {
  return typeof key === 'number' ? 'number' : 'string';
}

function writeQuery(opts: { durability?: Durability; conflict?: Conflict }): string {
  const q = new URLSearchParams();
  if (opts.durability) q.set('durability', opts.durability);
  if (opts.conflict) q.set('conflict', opts.conflict);
  const s = q.toString();
  return s ? `?${s}` : '';
}

export type FeedState = 'connecting' | 'live' | 'reconnecting';

/**
 * The /ws/stats feed with reconnection: after a close (server restart, network), it retries with
 * a backoff of 0.5 s doubling up to 5 s, forever, until stop().
 */
export class StatsFeed {
  #url: string;
  #ws: WebSocket | null = null;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #delay = 500;
  #stopped = false;
  #onSnapshot: (s: StatsSnapshot) => void;
  #onState: (s: FeedState, detail?: string) => void;

  constructor(
    onSnapshot: (s: StatsSnapshot) => void,
    onState: (s: FeedState, detail?: string) => void,
    url = defaultStatsUrl(),
  ) {
    this.#url = url;
    this.#onSnapshot = onSnapshot;
    this.#onState = onState;
    this.#connect();
  }

  #connect(): void {
    if (this.#stopped) return;
    this.#onState(this.#ws ? 'reconnecting' : 'connecting');
    let ws: WebSocket;
    try {
      const protocols = wsProtocols();
      ws = protocols.length > 0 ? new WebSocket(this.#url, protocols) : new WebSocket(this.#url);
    } catch (err) {
      this.#retry(err instanceof Error ? err.message : String(err));
      return;
    }
    this.#ws = ws;
    ws.onopen = () => {
      this.#delay = 500;
      this.#onState('live');
    };
    ws.onmessage = (ev: MessageEvent) => {
      try {
        this.#onSnapshot(JSON.parse(String(ev.data)) as StatsSnapshot);
      } catch (err) {
        console.error('bad stats message', err);
      }
    };
    ws.onclose = (ev: CloseEvent) => {
      if (this.#ws === ws) this.#retry(`closed (${ev.code}${ev.reason ? ` ${ev.reason}` : ''})`);
    };
  }

  #retry(detail: string): void {
    if (this.#stopped) return;
    this.#onState('reconnecting', `${detail}; retrying in ${(this.#delay / 1000).toFixed(1)} s`);
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#connect(), this.#delay);
    this.#delay = Math.min(this.#delay * 2, 5000);
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    const ws = this.#ws;
    this.#ws = null;
    if (ws) {
      ws.onclose = null;
      ws.close();
    }
  }
}

export function defaultStatsUrl(): string {
  const { protocol, host } = window.location;
  return `${protocol === 'https:' ? 'wss:' : 'ws:'}//${host}/ws/stats`;
}

export const api = new WharfApi();
