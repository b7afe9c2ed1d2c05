/**
 * Shapes the server's HTTP and ws stats endpoints answer with, shared by the server (which
 * produces them) and the admin UI (which reads them). The engine's own counters come from
 * `@wharf/engine`'s `EngineStats`.
 */
import type { Conflict, Durability } from './messages.js';

/** The server's own counters in `/api/stats` and `/ws/stats` (`server`), since it started. */
export interface ServerCounters {
  httpRequests: number;
  httpInsertBatches: number;
  wsConnections: number;
  wsConnectionsTotal: number;
  wsBatches: number;
  wsDocuments: number;
  wsErrors: number;
  statsSubscribers: number;
  driverConnections: number;
  driverConnectionsTotal: number;
  driverHandshakeFailures: number;
  driverQueries: number;
  /** Cursor batches sent (first batches and CONTINUE answers). */
  driverBatches: number;
  driverErrors: number;
  documentsInserted: number;
}

export type ImportFormat = 'ndjson' | 'json' | 'csv';

/** One import run in `/api/imports`: what its client reported (the admin UI, `wharf import`). */
export interface ImportRun {
  id: number;
  table: string;
  source: string;
  file?: string;
  format?: ImportFormat;
  bytes?: number;
  durability?: Durability;
  conflict?: Conflict;
  status: 'running' | 'done' | 'failed';
  startedAt: number;
  updatedAt: number;
  finishedAt?: number;
  bytesDone?: number;
  documents?: number;
  inserted?: number;
  replaced?: number;
  unchanged?: number;
  errors?: number;
  batches?: number;
  durationMs?: number;
  docsPerSec?: number;
  latencyP50Ms?: number;
  latencyP99Ms?: number;
  latencyMaxMs?: number;
  firstError?: string;
}

/**
 * One distributed import (`wharf import --job`) in `GET /api/jobs`: its `JobStatus` (jobs.ts)
 * summed up. Counts are the tasks' checkpoints; `docsPerSec` the running tasks' rates.
 */
export interface JobSummary {
  job: string;
  /** The table the job loads (null only for a definition without one). */
  table: string | null;
  format: string | null;
  complete: boolean;
  tasks: number;
  tasksDone: number;
  docs: number;
  written: number;
  rejected: number;
  docsPerSec: number;
  /** live: running, idle or joining; dead: no heartbeat within deadAfterMs, or left; done: finished. */
  workers: { live: number; dead: number; done: number };
  /** ms since the epoch, by the creating worker's clock. */
  createdAt: number | null;
  /** The latest heartbeat or checkpoint, by the workers' clocks. */
  updatedAt: number | null;
}

/** `GET /api/jobs`: every job in the coordination table `jobTable`, in name order. */
export interface JobList {
  jobTable: string;
  jobs: JobSummary[];
}
