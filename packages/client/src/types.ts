/** Public types shared by the loader and its targets. */

/**
 * Durability (`soft`: acknowledged when **visible**; `hard`: when **durable**, after the
 * fdatasync of the group holding it), conflict modes and RethinkDB's write-result shape are the
 * wire protocol's (docs/CONTRACTS.md), shared by every target.
 */
export type { Conflict, Durability, WriteResult } from '@wharf/wire';

import type { Conflict, Durability } from '@wharf/wire';

/** A secondary index the loader builds once every document is loaded and synced. */
export interface IndexSpec {
  /** 1 to 127 letters, digits, '_', '-' or '.' (the table-name rule). */
  name: string;
  /** Dotted field path, e.g. `address.city`. */
  field: string;
  /** Each element of an array value is an entry. Default false. */
  multi?: boolean;
}

/** How one index build went (in `LoadSummary.indexes`). */
export interface IndexBuild {
  name: string;
  field: string;
  multi: boolean;
  /** From the creation request to the index being ready and caught up (ms). */
  buildMs: number;
  /** The index existed already (e.g. a re-run): it was waited for, not created. */
  existed: boolean;
}

/**
 * How a table is created on a RethinkDB cluster (rethinkdb:// to a real RethinkDB only):
 * `shards` and `replicas` when the loader creates the table, `writeAcks` (its `write_acks`
 * config) set on every load that gives it.
 */
export interface TableOptions {
  /** 1 to 64 shards (RethinkDB's limit is 64 in 2.4). */
  shards?: number;
  /** Replicas of each shard, at most the number of servers. */
  replicas?: number;
  /** `single`: a write is acknowledged by its primary; `majority`: by most of its replicas. */
  writeAcks?: 'single' | 'majority';
}

/**
 * What failed over during a load to a RethinkDB cluster (`summary.failover`, rethinkdb:// only).
 * A batch is *resolved* when its outcome was unknown (its connection died after sending it, the
 * server could not say, or a shard could not take writes) and was made definite by reading back
 * its primary keys: documents stored as sent count as written, the others were sent again.
 */
export interface FailoverReport {
  /** Each node a connection to failed, with the first error and when (ISO time). */
  nodesFailed: { host: string; error: string; at: string }[];
  /** Connections reopened on another host than the one they were opened on. */
  connectionsMoved: number;
  /** Batches whose outcome was unknown and was resolved by reading back their keys. */
  batchesResolved: number;
  /** Of those, batches some of whose documents were sent again. */
  batchesResent: number;
  /** Documents found stored as sent by a read-back (counted as written, never sent twice). */
  documentsConfirmed: number;
  /** Documents sent again because a read-back did not find them. */
  documentsResent: number;
  /** Documents without a primary key in a resolved batch: sent again, so possibly stored twice. */
  unkeyedResent: number;
}

/** Where a document came from in the caller's input. Both fields are optional. */
export interface SourcePosition {
  /** 1-based line where the document starts. */
  line?: number;
  /** Byte offset just past the document in the input: where a resumed read continues. */
  offset?: number;
}

/** Why a document was not written. */
export type DocumentErrorKind =
  /** The primary key already exists (conflict: 'error'). */
  | 'conflict'
  /** Not valid JSON, not an object, a bad primary key, too large… */
  | 'invalid'
  /** The target reported errors for a batch without saying which documents (e.g. a real RethinkDB). */
  | 'unattributed';

/** One document that was not written, reported in input order. Never swallowed. */
export interface DocumentError {
  /** 0-based ordinal of the document among everything handed to the loader. */
  seq: number;
  line?: number;
  offset?: number;
  kind: DocumentErrorKind;
  reason: string;
  /** The document's JSON text as sent (or as given, for documents rejected before sending). */
  raw?: string;
  /** For 'unattributed' errors: the input range of the batch they came from. */
  range?: { firstSeq: number; lastSeq: number; firstLine?: number; lastLine?: number };
}

/**
 * A point in the input: everything before it has been acknowledged (written or rejected).
 * Batches finish out of order, so this is the contiguous low-water mark, not the last ack.
 */
export interface Mark {
  /** Documents handed to the loader before this point (= the next document's seq). */
  seq: number;
  /** Line of the last document before this point (undefined when positions were not given). */
  line?: number;
  /** Input byte offset just past the last document before this point. */
  offset?: number;
  /** Counters for the documents before this point. */
  written: number;
  rejected: number;
  /** Of `written`: documents found already stored when re-sent (resume, or retry of a batch). */
  present: number;
}

/** Latency figures in milliseconds. */
export interface LatencyMs {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  'p99.9': number;
  max: number;
  mean: number;
}

/** One throughput interval. `t` is seconds since the first write, at the interval's end. */
export interface Interval {
  t: number;
  /** Documents acknowledged in the interval. */
  docs: number;
  /** Length of the interval in seconds (the last one may be short). */
  seconds: number;
  /** Latency of the documents acknowledged in the interval (ms); absent when docs = 0. */
  p50?: number;
  p99?: number;
  max?: number;
}

/** Engine counters reported by the embedded target (names as in @wharf/engine's stats()). */
export type TargetStats = Record<string, number | boolean | number[] | undefined>;

/** What `end()` returns. */
export interface LoadSummary {
  ok: boolean;
  target: string;
  table: string;
  durability: Durability;
  conflict: Conflict;
  naive: boolean;
  finalSync: boolean;
  documents: {
    /** Handed to the loader. */
    read: number;
    /** Acknowledged as stored (inserted, replaced, unchanged, or already present on a re-send). */
    written: number;
    rejected: number;
    /** Of written: found already stored when re-sent after a resume or a retry. */
    present: number;
    /** read − written − rejected: documents with no outcome. Non-zero means ok = false. */
    missing: number;
  };
  inserted: number;
  replaced: number;
  unchanged: number;
  batches: number;
  retries: number;
  /** From the first write to the end of the final sync. */
  wallSeconds: number;
  /** written / wallSeconds. */
  docsPerSec: number;
  /** Per document, from the moment it was handed to the loader to its acknowledgement. */
  latencyMs: LatencyMs;
  /** Per batch, from dispatch to acknowledgement. */
  batchLatencyMs: LatencyMs;
  /** Duration of the final sync, timed apart (null when none was made). */
  finalSyncMs: number | null;
  intervalMs: number;
  intervals: Interval[];
  /** The same, aggregated over 10 s. */
  intervals10s: Interval[];
  /** Intervals (of intervalMs) with no completion while documents were outstanding: stalls. */
  zeroIntervals: number;
  /** Engine counters (embedded target), null otherwise. */
  engine: TargetStats | null;
  /**
   * The indexes built after the load (option `indexes`), each with its build time; empty when
   * none were asked for or the load failed before them. Their time is not in wallSeconds.
   */
  indexes: IndexBuild[];
  /** From the first index creation to the last index ready (ms); null when none were built. */
  indexBuildMs: number | null;
  /** rethinkdb:// only: nodes that failed and how batches in flight were resolved (null otherwise). */
  failover?: FailoverReport | null;
  /** Set when the load stopped early (fatal error, max errors, abort). */
  error?: { code: string; message: string };
}
