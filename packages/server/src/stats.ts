/**
 * One stats snapshot, shared by GET /api/stats, /metrics and the /ws/stats feed.
 * Engine field names are the engine's (packages/engine/core/src/stats.rs, camelCase).
 */
import type { EngineDatabase, EngineStats } from './engine-types.js';
import type { ServerCounters, ServerState } from './state.js';

export interface StatsSnapshot {
  time: number;
  engine: EngineStats;
  server: ServerCounters & { uptimeMs: number; inflightWrites: number };
}

export function statsSnapshot(db: EngineDatabase, state: ServerState): StatsSnapshot {
  return {
    time: Date.now(),
    engine: db.stats(),
    server: {
      ...state.counters,
      uptimeMs: Date.now() - state.startedAt,
      inflightWrites: state.writes.count,
    },
  };
}

const ENGINE_COUNTERS = new Set([
  'commits', 'documentsWritten', 'groups', 'fdatasyncs', 'segmentRotations', 'bytesJournaled', 'checkpoints',
  'merges', 'segmentsCreated', 'segmentsRecycled', 'recordsReplayed',
]);
const SERVER_COUNTERS = new Set([
  'httpRequests', 'httpInsertBatches', 'wsConnectionsTotal', 'wsBatches', 'wsDocuments', 'wsErrors',
  'driverConnectionsTotal', 'driverHandshakeFailures', 'driverQueries', 'driverBatches', 'driverErrors', 'documentsInserted',
]);

function snake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** Prometheus text exposition format 0.0.4. */
export function prometheusText(s: StatsSnapshot): string {
  const lines: string[] = [];
  const emit = (prefix: string, counters: Set<string>, values: Record<string, unknown>): void => {
    for (const [k, v] of Object.entries(values)) {
      const value = typeof v === 'boolean' ? (v ? 1 : 0) : v;
      if (typeof value !== 'number' || !Number.isFinite(value)) continue;
      const isCounter = counters.has(k);
      const name = `${prefix}_${snake(k)}${isCounter ? '_total' : ''}`;
      lines.push(`# TYPE ${name} ${isCounter ? 'counter' : 'gauge'}`, `${name} ${value}`);
    }
  };
  emit('wharf_engine', ENGINE_COUNTERS, s.engine);
  const hist = s.engine.groupOpsHistogram;
  if (Array.isArray(hist)) {
    lines.push('# HELP wharf_engine_groups_by_ops Groups committed, by operations merged (bucket i: 2^i to 2^(i+1)-1).');
    lines.push('# TYPE wharf_engine_groups_by_ops gauge');
    hist.forEach((n, i) => lines.push(`wharf_engine_groups_by_ops{min_ops="${2 ** i}",max_ops="${2 ** (i + 1) - 1}"} ${n}`));
  }
  emit('wharf_server', SERVER_COUNTERS, s.server as unknown as Record<string, unknown>);
  return `${lines.join('\n')}\n`;
}
