/**
 * One stats snapshot, shared by GET /api/stats, /metrics and the /ws/stats feed.
 * Engine field names are the engine's (packages/engine/core/src/stats.rs, camelCase).
 */
import type { Database, EngineStats } from '@wharf/engine';
import type { EventLoopDelay } from './event-loop.js';
import type { GcPauses } from './heap.js';
import type { ServerCounters, ServerState } from './state.js';

export interface StatsSnapshot {
  time: number;
  engine: EngineStats;
  server: ServerCounters &
    EventLoopDelay &
    GcPauses & { uptimeMs: number; inflightWrites: number; openConnections: number; bufferedBodyBytes: number };
}

export function statsSnapshot(db: Database, state: ServerState): StatsSnapshot {
  return {
    time: Date.now(),
    engine: db.stats(),
    server: {
      ...state.counters,
      uptimeMs: Date.now() - state.startedAt,
      inflightWrites: state.writes.count,
      openConnections: state.openConnections,
      bufferedBodyBytes: state.bodyBytes.used,
      ...state.eventLoop.current(),
      ...state.gc.current(),
    },
  };
}

/**
 * Engine fields that only go up since open: exported as Prometheus counters (`…_total`). Every
 * other numeric field is a gauge (memory in use, the budget, the write-rate limit, pacing debt,
 * runs, measured rates, ratios, sequence numbers).
 */
const ENGINE_COUNTERS = new Set([
  'commits',
  'documentsWritten',
  'groups',
  'fdatasyncs',
  'segmentRotations',
  'bytesJournaled',
  'checkpoints',
  'merges',
  'segmentsCreated',
  'segmentsRecycled',
  'recordsReplayed',
  // bytes loaded and written to disk, by kind
  'bytesLoaded',
  'bytesWrittenJournal',
  'bytesWrittenFlushes',
  'bytesWrittenMerges',
  'bytesWrittenOther',
  'bytesWritten',
  'reads',
  'documentsRead',
  'readsFromMemory',
  // block cache
  'cacheHits',
  'cacheMisses',
  // adaptive write pacing
  'pacedGroups',
  'pacingDelayMs',
  'stallsAvoided',
  'writeStops',
  'writeStopMs',
  // journal compression
  'groupsCompressed',
  'journalBytesUncompressed',
  'journalBytesSaved',
]);

/** # HELP lines for the memory, pacing and compression metrics (names as exported). */
const ENGINE_HELP: Record<string, string> = {
  memoryBudget: 'Memory budget of the engine (bytes): memtables plus block cache.',
  memtableBytes: 'Bytes in the active memtables.',
  frozenMemtableBytes: 'Bytes in memtables being checkpointed into run files.',
  cacheBytes: 'Bytes in the block cache.',
  cacheHits: 'Block cache hits.',
  cacheMisses: 'Block cache misses (blocks read from run files).',
  runs: 'Run files of all tables.',
  runBytes: 'Bytes of run files on disk.',
  runIndexBytes: 'Memory used by run indexes and Bloom filters (bytes).',
  writeRateLimitBps: 'Current write-rate limit set by pacing (bytes/s; 0 = none).',
  pacingDebtBytes: 'Background work (flush/merge) the writers are ahead of (bytes).',
  mergeBacklogRuns: 'Runs waiting to be merged.',
  flushRateBps: 'Measured checkpoint (flush) rate (bytes/s).',
  mergeRateBps: 'Measured merge rate (bytes/s).',
  pacedGroups: 'Groups that waited for pacing.',
  pacingDelayMs: 'Total time groups waited for pacing (ms).',
  stallsAvoided: 'Times the memtable filled while a checkpoint still ran and pacing rode through.',
  writeStops: 'Last-resort write stops (memtables at their limit).',
  writeStopMs: 'Total time of write stops (ms).',
  readsFromMemory: 'Point reads answered from memory on the JS thread (no disk wait, no thread pool).',
  compressionRatio: 'Stored / uncompressed payload bytes of compressed journal groups (0 before any).',
  journalBytesSaved: 'Journal payload bytes kept off the disk by compression.',
  bytesLoaded: 'Document bytes accepted by writes (inserted or replaced JSON, as stored).',
  bytesWrittenJournal: 'Bytes written to the journal (records, segment headers).',
  bytesWrittenFlushes: 'Bytes of run files written by checkpoints.',
  bytesWrittenMerges: 'Bytes of run files written by merges.',
  bytesWrittenOther: 'Other bytes written: zero-filling new journal segments, manifests.',
  bytesWritten: 'Bytes written to disk, all kinds.',
  bytesWrittenPerByteLoaded: 'Journal, flush and merge bytes written per document byte loaded.',
};

const SERVER_HELP: Record<string, string> = {
  openConnections: 'Open connections, HTTP (ws included) and driver port (limit maxConnections).',
  driverFeeds:
    'Changefeeds open now on the driver port, each an engine subscription (limit driverFeedsPerConnection per connection).',
  bufferedBodyBytes: 'HTTP request-body bytes held in memory now, all requests together (limit bufferedBodyBytes).',
  eventLoopDelayP99Ms: 'p99 of how late the event loop ran, over the last 10 to 20 s (ms).',
  eventLoopDelayMaxMs: 'Longest the event loop was held, over the last 10 to 20 s (ms).',
  gcMajor: 'Mark-compact garbage collections of the server process.',
  gcMajorMs: 'Total pause of those mark-compacts (ms).',
  gcMinor: 'Scavenges (young-generation collections) of the server process.',
  gcMinorMs: 'Total pause of those scavenges (ms).',
};

const SERVER_COUNTERS = new Set([
  'httpRequests',
  'httpInsertBatches',
  'wsConnectionsTotal',
  'wsBatches',
  'wsDocuments',
  'wsErrors',
  'driverConnectionsTotal',
  'driverHandshakeFailures',
  'driverQueries',
  'driverBatches',
  'driverErrors',
  'documentsInserted',
  'gcMajor',
  'gcMajorMs',
  'gcMinor',
  'gcMinorMs',
]);

function snake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** Prometheus text exposition format 0.0.4. */
export function prometheusText(s: StatsSnapshot): string {
  const lines: string[] = [];
  const emit = (prefix: string, counters: Set<string>, values: object): void => {
    for (const [k, v] of Object.entries(values)) {
      const value = typeof v === 'boolean' ? (v ? 1 : 0) : v;
      if (typeof value !== 'number' || !Number.isFinite(value)) continue;
      const isCounter = counters.has(k);
      const name = `${prefix}_${snake(k)}${isCounter ? '_total' : ''}`;
      const help = (prefix === 'wharf_engine' ? ENGINE_HELP : SERVER_HELP)[k];
      if (help) lines.push(`# HELP ${name} ${help}`);
      lines.push(`# TYPE ${name} ${isCounter ? 'counter' : 'gauge'}`, `${name} ${value}`);
    }
  };
  emit('wharf_engine', ENGINE_COUNTERS, s.engine);
  lines.push('# HELP wharf_engine_groups_by_ops Groups committed, by operations merged (bucket i: 2^i to 2^(i+1)-1).');
  lines.push('# TYPE wharf_engine_groups_by_ops gauge');
  for (const [i, n] of s.engine.groupOpsHistogram.entries()) {
    lines.push(`wharf_engine_groups_by_ops{min_ops="${2 ** i}",max_ops="${2 ** (i + 1) - 1}"} ${n}`);
  }
  lines.push(
    '# HELP wharf_engine_write_stage_us Write latency by stage since open, µs (upper bound of the power-of-two bucket holding the quantile).',
  );
  lines.push('# TYPE wharf_engine_write_stage_us gauge');
  for (const [stage, q] of Object.entries(s.engine.writeStages)) {
    for (const [quantile, us] of [
      ['0.5', q.p50Us],
      ['0.99', q.p99Us],
      ['0.999', q.p999Us],
      ['1', q.maxUs],
    ] as const) {
      lines.push(`wharf_engine_write_stage_us{stage="${snake(stage)}",quantile="${quantile}"} ${us}`);
    }
  }
  emit('wharf_server', SERVER_COUNTERS, s.server);
  return `${lines.join('\n')}\n`;
}
