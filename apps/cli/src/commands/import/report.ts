/**
 * The JSON report (--report FILE.json) and the text summary. The report's schema is documented
 * in apps/cli/README.md; `version` changes when a field changes meaning or goes away.
 */
import { writeFileSync } from 'node:fs';
import { type DocumentError, exitCodes, type LoadSummary } from '@wharf/client';
import { fmtBytes } from './progress.js';
import type { ThresholdResult } from './thresholds.js';

export type ImportStatus = 'ok' | 'rejects' | 'thresholds' | 'failed' | 'interrupted' | 'dry-run';

/**
 * Exit statuses of `wharf import`. A failure exits with its error code's status in the error
 * catalogue (`exitCodeOf`, docs/ERRORS.md): `failed`, or `usage` for a bad command line.
 */
export const EXIT = {
  ok: 0,
  failed: exitCodes.failed,
  usage: exitCodes.usage,
  rejects: 3,
  thresholds: 4,
  interrupted: exitCodes.interrupted,
} as const;

/** The run's figures in the report: the loader's summary (`LoadSummary`) fields of these names. */
const RUN_FIGURES = [
  'wallSeconds',
  'docsPerSec',
  'latencyMs',
  'batchLatencyMs',
  'finalSyncMs',
  'batches',
  'retries',
  'intervalMs',
  'intervals',
  'intervals10s',
  'zeroIntervals',
  'engine',
  'failover',
] as const satisfies readonly (keyof LoadSummary)[];

type RunFigures = Pick<LoadSummary, (typeof RUN_FIGURES)[number]>;

export interface ImportReport extends RunFigures, Pick<LoadSummary, 'indexes' | 'indexBuildMs'> {
  version: 1;
  status: ImportStatus;
  /** True only when every document read was written or rejected and nothing failed. */
  ok: boolean;
  exitCode: number;
  startedAt: string;
  finishedAt: string;
  target: string;
  table: string;
  format: string;
  dryRun: boolean;
  input: { path: string | null; bytes: number | null; bytesRead: number };
  resumed: null | { fromOffset: number; fromLine: number; documentsBefore: number; resent: number };
  options: {
    primaryKey: string;
    batchSize: number;
    batchBytes: number;
    flushMs: number;
    concurrency: number;
    durability: string;
    finalSync: boolean;
    naive: boolean;
    conflict: string;
    maxErrors: number | null;
    /** rethinkdb:// only, when given. */
    shards?: number;
    replicas?: number;
    writeAcks?: 'single' | 'majority';
  };
  /** Counts over the whole import (all runs, when resumed). written = read − rejected when ok. */
  documents: { read: number; written: number; rejected: number; present: number; missing: number };
  /** Counts of this run only. */
  run: { read: number; written: number; rejected: number };
  thresholds: ThresholdResult[];
  rejects: { file: string | null; count: number; first: DocumentError[] };
  /** `resumable`: the checkpoint file exists and records durable progress, so --resume skips input. */
  checkpoint: { path: string | null; complete: boolean; resumable: boolean };
  memory: { peakRssMB: number };
  error: null | { code: string; message: string; line?: number };
}

export function writeReport(path: string, report: ImportReport): void {
  writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
}

const int = (n: number) => n.toLocaleString('en-US');
const ms = (n: number) => (n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2));

/** A figure of the engine's stats, when it reported it as a number. */
const num = (e: NonNullable<ImportReport['engine']>, name: string): number | null =>
  typeof e[name] === 'number' ? (e[name] as number) : null;

/**
 * "bytes written per byte loaded", from the engine's counters after its close (so the final
 * checkpoint is in): journal, runs written by checkpoints, merges, each per document byte
 * loaded (a load of a few bytes shows the fixed costs of records and run headers, not the ratio
 * of a bulk load). Null for an engine without them.
 */
export function bytesWrittenLine(e: NonNullable<ImportReport['engine']>): string | null {
  const loaded = num(e, 'bytesLoaded');
  const ratio = num(e, 'bytesWrittenPerByteLoaded');
  if (!loaded || ratio === null) return null;
  const per = (name: string) => ((num(e, name) ?? 0) / loaded).toFixed(2);
  return `  bytes written per byte loaded ${ratio.toFixed(2)} (journal ${per('bytesWrittenJournal')}, runs ${per('bytesWrittenFlushes')}, merges ${per('bytesWrittenMerges')}); ${fmtBytes(loaded)} loaded, ${fmtBytes(num(e, 'bytesWrittenOther') ?? 0)} more for new journal segments and manifests`;
}

/** The human summary printed at the end. */
export function summaryText(r: ImportReport): string {
  const d = r.documents;
  const lines: string[] = [];
  const verb = r.dryRun ? 'validated' : 'written';
  const head = r.dryRun
    ? `${int(d.read)} documents read, ${int(d.read - d.rejected)} valid, ${int(d.rejected)} rejected`
    : `${int(d.read)} documents read, ${int(d.written)} ${verb}, ${int(d.rejected)} rejected`;
  lines.push(`wharf import ${r.input.path ?? '-'} → ${r.target} table ${r.table} (${r.format})`);
  lines.push(`  ${head} in ${r.wallSeconds.toFixed(2)} s — ${int(Math.round(r.docsPerSec))} docs/s`);
  if (r.resumed) {
    lines.push(
      `  resumed at byte ${int(r.resumed.fromOffset)} (line ${int(r.resumed.fromLine)}) after ${int(r.resumed.documentsBefore)} documents; ${int(r.resumed.resent)} re-sent`,
    );
  }
  if (d.present > 0)
    lines.push(`  ${int(d.present)} of the written were already stored (re-sent after a resume or retry)`);
  if (!r.dryRun) {
    const l = r.latencyMs;
    lines.push(
      `  latency ms (per document, hand-over → ack): p50 ${ms(l.p50)}  p90 ${ms(l.p90)}  p99 ${ms(l.p99)}  p99.9 ${ms(l['p99.9'])}  max ${ms(l.max)}  mean ${ms(l.mean)}`,
    );
    const dur = r.options.naive
      ? 'naive: one document per insert, hard, one at a time'
      : `${r.options.durability}${r.options.durability === 'soft' ? (r.options.finalSync ? ' + final sync' : ', no final sync') : ''}; batches of ≤ ${int(r.options.batchSize)} docs / ${fmtBytes(r.options.batchBytes)} / ${r.options.flushMs} ms, up to ${r.options.concurrency} in flight`;
    lines.push(`  durability ${dur}`);
    if (r.finalSyncMs !== null) lines.push(`  final sync ${ms(r.finalSyncMs)} ms`);
    lines.push(
      `  intervals ${r.intervals.length} × ${r.intervalMs / 1000} s, ${r.zeroIntervals} with no completion (stalls)${r.retries ? `, ${r.retries} retries` : ''}`,
    );
    for (const ix of r.indexes ?? []) {
      lines.push(
        `  index ${ix.name} on ${ix.field}${ix.multi ? ' (multi)' : ''}: ${ix.existed ? 'existed; caught up' : 'built'} in ${ms(ix.buildMs)} ms`,
      );
    }
    const f = r.failover;
    if (f && (f.nodesFailed.length > 0 || f.batchesResolved > 0 || f.connectionsMoved > 0)) {
      for (const n of f.nodesFailed) lines.push(`  node ${n.host} failed at ${n.at}: ${n.error.slice(0, 200)}`);
      lines.push(
        `  failover: ${int(f.connectionsMoved)} connections moved to other nodes; ${int(f.batchesResolved)} batches with an unknown outcome resolved by reading back their keys (${int(f.documentsConfirmed)} documents found stored), ${int(f.batchesResent)} of them partly re-sent (${int(f.documentsResent)} documents)`,
      );
      if (f.unkeyedResent > 0)
        lines.push(
          `  ${int(f.unkeyedResent)} documents without a primary key were re-sent after an unknown outcome: they may be stored twice`,
        );
    }
    if (r.engine) {
      const e = r.engine;
      lines.push(
        `  engine fdatasyncs ${e.fdatasyncs ?? '?'}, groups ${e.groups ?? '?'}, commits ${e.commits ?? '?'}, max group ${e.maxGroupOps ?? '?'} ops`,
      );
      const written = bytesWrittenLine(e);
      if (written) lines.push(written);
    }
  }
  if (d.rejected > 0) {
    lines.push(
      `  rejected: ${int(d.rejected)}${r.rejects.file ? ` (all in ${r.rejects.file})` : ' (use --rejects FILE to keep them all)'}`,
    );
    for (const e of r.rejects.first.slice(0, 5)) {
      lines.push(`    line ${e.line ?? '?'}: ${e.reason.slice(0, 200)}`);
    }
  }
  for (const t of r.thresholds) {
    lines.push(`  threshold ${t.expr}: ${t.ok ? 'ok' : 'BREACHED'} (actual ${t.actual === null ? 'n/a' : t.actual})`);
  }
  if (r.error) lines.push(`  error: ${r.error.message}${r.error.line ? ` (line ${r.error.line})` : ''}`);
  const verdict: Record<ImportStatus, string> = {
    ok: 'OK: every document was written',
    'dry-run':
      d.rejected === 0
        ? 'OK: every document is valid (nothing written: --dry-run)'
        : 'DRY RUN: some documents are invalid (nothing written)',
    rejects: 'DONE WITH REJECTS: every document was written or rejected',
    thresholds: 'THRESHOLDS BREACHED',
    interrupted: r.checkpoint.resumable
      ? `INTERRUPTED: continue with --resume (checkpoint ${r.checkpoint.path})`
      : 'INTERRUPTED: nothing was durable yet; run the import again',
    failed: `FAILED${
      r.error?.code === 'WHARF_ERR_MAX_ERRORS'
        ? `: stopped after more than ${r.options.maxErrors} rejections; ${int(d.missing)} documents read after that were not sent`
        : d.missing > 0
          ? `: ${int(d.missing)} documents have no outcome (not written, not rejected)`
          : ''
    }${
      r.checkpoint.resumable
        ? `; fix the cause, then continue with --resume (checkpoint ${r.checkpoint.path})`
        : r.dryRun
          ? ''
          : '; fix the cause, then run the import again (no checkpoint to resume from)'
    }`,
  };
  lines.push(`  ${verdict[r.status]} (exit ${r.exitCode})`);
  return `${lines.join('\n')}\n`;
}

/** Fills the report's run figures from a loader summary. */
export function figuresOf(s: LoadSummary): RunFigures {
  return Object.fromEntries(RUN_FIGURES.map((name) => [name, s[name]])) as RunFigures;
}
