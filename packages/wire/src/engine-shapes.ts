/**
 * The shapes of what the engine answers (table listings, index states, its counters), defined once
 * here so the engine (`@wharf/engine`, which returns them), the server (which sends them) and the
 * admin UI (which reads them, without the native engine) share them. Write results are
 * `WriteResult` in messages.ts.
 */

export interface TableInfo {
  name: string;
  primaryKey: string;
  documents: number;
  bytes: number;
}

/** A snapshot of the engine's counters since open (names as in `core/src/stats.rs`, camelCased). */
export interface EngineStats {
  /** Write operations (insert/delete/table batches) committed. */
  commits: number;
  /** Documents inserted, replaced or deleted. */
  documentsWritten: number;
  /** Groups the committer wrote: one journal write call each. */
  groups: number;
  /** fdatasync calls on journal segments. */
  fdatasyncs: number;
  /** fdatasyncs made because a segment filled up. */
  segmentRotations: number;
  /** Largest group, in write operations. */
  maxGroupOps: number;
  /** Bucket i counts groups of 2^i to 2^(i+1)-1 write operations. */
  groupOpsHistogram: number[];
  /** Bytes appended to the journal, record headers included. */
  bytesJournaled: number;
  /** Groups stored LZ4-compressed (at least one of their records smaller compressed). */
  groupsCompressed: number;
  /** Record payload bytes before compression, for all groups. */
  journalBytesUncompressed: number;
  /** Payload bytes compression kept off the disk. */
  journalBytesSaved: number;
  /** Stored / uncompressed payload bytes of the compressed groups (0 before any). */
  compressionRatio: number;
  /** The journal's running estimates: LZ4 ns per input byte, write + fdatasync ns per byte written (0 before any). */
  compressNsPerByte: number;
  writeNsPerByte: number;
  /** Read calls (get, get_many, scan, count) and the documents they returned. */
  reads: number;
  documentsRead: number;
  /** Point reads (get, getMany) answered from memory on the calling thread, with no disk wait. */
  readsFromMemory: number;
  /** Group commit latency (taking the group → its fdatasync returning): bucket i is 2^i..2^(i+1)-1 µs. */
  commitLatencyHistogramUs: number[];
  /** Percentiles of that histogram since open (bucket upper bounds, µs; 0 before any commit). */
  commitLatencyP50Us: number;
  commitLatencyP99Us: number;
  /** Sequence number of the newest visible group. */
  appliedSeq: number;
  /** Sequence number of the newest durable group. */
  durableSeq: number;
  journalBytesSinceCheckpoint: number;
  checkpoints: number;
  /** Merges of run files done by the merge thread. */
  merges: number;
  /** The memory budget (bytes) and what uses it now: active memtables, memtables being checkpointed, the block cache. */
  memoryBudget: number;
  memtableBytes: number;
  frozenMemtableBytes: number;
  cacheBytes: number;
  cacheHits: number;
  cacheMisses: number;
  /** Run files of all tables, their bytes on disk, and the memory their indexes and Bloom filters use. */
  runs: number;
  runBytes: number;
  runIndexBytes: number;
  /** Pacing: the current write-rate limit (bytes/s; 0 = none), the debt behind it, and the measured background rates (bytes/s). */
  writeRateLimitBps: number;
  pacingDebtBytes: number;
  mergeBacklogRuns: number;
  flushRateBps: number;
  mergeRateBps: number;
  /** Groups that waited for pacing, and their total wait. */
  pacedGroups: number;
  pacingDelayMs: number;
  /** Times the active memtable filled while a checkpoint still ran (a stop-the-world engine stops there) that pacing rode through. */
  stallsAvoided: number;
  /** Last-resort stops (memtables at their limit) and their total time. */
  writeStops: number;
  writeStopMs: number;
  segmentsCreated: number;
  segmentsRecycled: number;
  /** Time the last open spent in recovery, and the journal records it replayed. */
  recoveryMs: number;
  recordsReplayed: number;
  /** Document bytes accepted by writes: each inserted or replaced document's JSON as stored. */
  bytesLoaded: number;
  /**
   * Bytes written to disk since open, by kind: journal records and segment headers; run files
   * written by checkpoints; run files written by merges; everything else (zero-filling each new
   * journal segment once, manifests). `bytesWritten` is the four together.
   */
  bytesWrittenJournal: number;
  bytesWrittenFlushes: number;
  bytesWrittenMerges: number;
  bytesWrittenOther: number;
  bytesWritten: number;
  /**
   * (journal + flushes + merges) / `bytesLoaded`: how many times each loaded byte was written (0
   * before any). A bulk load into an empty table in key order stays at or below 2.
   */
  bytesWrittenPerByteLoaded: number;
  /** True once a write or fdatasync failed: writes fail until the database is reopened. */
  poisoned: boolean;
  /** The database's journal segment size in bytes, fixed when it was created. */
  segmentSize: number;
  /**
   * What the open did differently from what it was asked, one sentence each: an option that
   * shapes the files on disk (`segmentSize`) passed with another value than the database's own
   * is ignored, and said here. Empty when nothing.
   */
  openNotes: string[];
  /** Where the time of each write (insert, delete) went since open, stage by stage. */
  writeStages: WriteStages;
  /** Answers JS took while polling for them (`spinWaitUs`), and on the doorbell (the thread woken). */
  answersPolled: number;
  answersOnDoorbell: number;
}

/**
 * The stages of a write, from the call to the settled promise. A batch of 64 KiB or more is
 * parsed on the libuv pool (`poolWait`, `parse`); a smaller one on the calling thread, inside the
 * call. Compare a latency tail with these to see where it comes from: a busy pool, a slow parse,
 * the engine's queue (pacing among it), its commit, or an event loop too busy to take the answer.
 */
export interface WriteStages {
  /** The call → a pool thread starts parsing the batch. */
  poolWait: LatencySummary;
  /** Parsing the batch on the pool. */
  parse: LatencySummary;
  /** Handed to the engine → the committer takes it into a group: behind the group before it, the cohort being gathered, pacing. */
  queue: LatencySummary;
  /** Taken → acknowledged: applying, the journal write, and for a hard write the group's fdatasync. */
  commit: LatencySummary;
  /** Acknowledged → the callback that settles the promise ran on the event loop. */
  delivery: LatencySummary;
}

/** A latency histogram: bucket i counts 2^i to 2^(i+1)-1 µs; percentiles are bucket upper bounds (0 when empty). */
export interface LatencySummary {
  count: number;
  p50Us: number;
  p99Us: number;
  p999Us: number;
  maxUs: number;
  histogramUs: number[];
}

/** A secondary index and how far its build got. */
export interface IndexInfo {
  name: string;
  /** Field name or dotted path. */
  field: string;
  multi: boolean;
  /** Built: holds every document (queries may still wait to be fresh). */
  ready: boolean;
  /** Documents indexed so far by the build (the table's count once ready). */
  indexed: number;
}
