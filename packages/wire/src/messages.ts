/**
 * Message types of the ws ingest protocol (`wharf://host:port`, served at `GET /ws/ingest`).
 * See docs/CONTRACTS.md §2. Client → server messages are binary frames (see frame.ts);
 * server → client messages are text frames holding one JSON object each.
 */

export type Durability = 'soft' | 'hard';
export type Conflict = 'error' | 'replace' | 'update';
export type PayloadFormat = 'ndjson' | 'json';

/**
 * The outcome of a write: RethinkDB's write-result shape (its field names) plus
 * `document_errors`. The engine returns it, the server sends it, the loader and the admin UI read it.
 */
export interface WriteResult {
  inserted: number;
  replaced: number;
  unchanged: number;
  deleted: number;
  skipped: number;
  errors: number;
  first_error?: string;
  /** UUID v4 for each document that had no primary key, in batch order. */
  generated_keys?: string[];
  /**
   * One entry per document that was not written. `index` is the 0-based line for NDJSON (blank
   * lines count) or the array element otherwise. The rest of the batch is written.
   */
  document_errors?: { index: number; message: string }[];
}

/** Create the table if it is absent. No payload. Answered with an `ack`. */
export interface EnsureTableMessage {
  type: 'ensureTable';
  id: number;
  table: string;
  primaryKey?: string;
}

/** One batch: the payload holds NDJSON or JSON-array bytes, handed to the engine's bulk path. */
export interface InsertMessage {
  type: 'insert';
  id: number;
  table: string;
  format: PayloadFormat;
  durability?: Durability;
  conflict?: Conflict;
}

/** Answered with `synced` once everything acknowledged before it is durable. No payload. */
export interface SyncMessage {
  type: 'sync';
  id: number;
}

export type ClientMessage = EnsureTableMessage | InsertMessage | SyncMessage;

export interface AckMessage {
  type: 'ack';
  id: number;
  result: WriteResult;
}

export interface SyncedMessage {
  type: 'synced';
  id: number;
}

/** `id: null` means the connection is bad and will close. */
export interface ErrorMessage {
  type: 'error';
  id: number | null;
  /** A code of the error catalogue (errors.ts, docs/ERRORS.md). */
  code: string;
  message: string;
}

export type ServerMessage = AckMessage | SyncedMessage | ErrorMessage;

/** The limits of the protocol. */
export const limits = {
  /** One client message (header + payload), in bytes. Larger: an error, then close code 1009. */
  maxMessageBytes: 64 * 1024 * 1024,
  /** The JSON header of one client message, in bytes. */
  maxHeaderBytes: 64 * 1024,
} as const;

/** WebSocket close codes the server uses. */
export const closeCodes = {
  normal: 1000,
  goingAway: 1001,
  protocolError: 1002,
  unsupportedData: 1003,
  policyViolation: 1008,
  messageTooBig: 1009,
  internalError: 1011,
} as const;

/** Paths served by the server. */
export const paths = {
  ingest: '/ws/ingest',
  stats: '/ws/stats',
} as const;
