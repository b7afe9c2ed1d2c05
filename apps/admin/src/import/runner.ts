/**
 * Runs one import from the browser: batches from batches.ts are POSTed to the table's documents
 * route, a few at a time; every interval a point (documents/s, batch latency) is added for the
 * live chart. The run is recorded in the server's import history (/api/imports): opened at the
 * start, updated about once a second, closed with the final report.
 *
 * A document the server rejects is counted and sampled with its line; a failed request (the table
 * is gone, the server is down, a batch too large) stops the run and is reported as its error.
 */
import {
  api,
  type Conflict,
  type Durability,
  describeError,
  type ImportFormat,
  type ImportRun,
  type WriteResult,
} from '../api.ts';
import { type Batch, FileFormatError, type PreparedFile, prepare } from './batches.ts';

export interface ImportOptions {
  table: string;
  file: File;
  format: ImportFormat;
  conflict: Conflict;
  durability: Durability;
  batchDocs?: number;
  batchBytes?: number;
  concurrency?: number;
  intervalMs?: number;
  /** Create the table (with this primary key) once the file has parsed, before the first batch. */
  createTable?: { primaryKey?: string };
}

export interface IntervalPoint {
  /** Seconds since the import started. */
  t: number;
  docsPerSec: number;
  latencyAvgMs: number | null;
  latencyMaxMs: number | null;
}

export interface ImportProgress {
  phase: 'reading' | 'writing' | 'done' | 'failed';
  runId: number | null;
  done: number;
  total: number;
  unit: 'characters' | 'documents';
  documents: number;
  inserted: number;
  replaced: number;
  unchanged: number;
  errors: number;
  batches: number;
  elapsedMs: number;
  intervals: IntervalPoint[];
  /** The first document errors, with where they came from. */
  errorSamples: string[];
  latencyP50Ms: number | null;
  latencyP99Ms: number | null;
  latencyMaxMs: number | null;
  /** Why the run stopped (failed). */
  fatal: string | null;
  /** Problems with the import history route (the import itself went on). */
  historyError: string | null;
}

const MAX_SAMPLES = 20;

function quantile(sorted: number[], q: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? null;
}

export async function runImport(opts: ImportOptions, onProgress: (p: ImportProgress) => void): Promise<ImportProgress> {
  const started = performance.now();
  const p: ImportProgress = {
    phase: 'reading',
    runId: null,
    done: 0,
    total: opts.file.size,
    unit: 'characters',
    documents: 0,
    inserted: 0,
    replaced: 0,
    unchanged: 0,
    errors: 0,
    batches: 0,
    elapsedMs: 0,
    intervals: [],
    errorSamples: [],
    latencyP50Ms: null,
    latencyP99Ms: null,
    latencyMaxMs: null,
    fatal: null,
    historyError: null,
  };
  const latencies: number[] = [];
  const emit = (): void => onProgress({ ...p, intervals: p.intervals.slice(), errorSamples: p.errorSamples.slice() });

  let run: ImportRun | null = null;
  try {
    run = await api.startImport({
      table: opts.table,
      file: opts.file.name,
      format: opts.format,
      bytes: opts.file.size,
      conflict: opts.conflict,
      durability: opts.durability,
      source: 'admin',
    });
    p.runId = run.id;
  } catch (err) {
    p.historyError = `Could not record the run in the import history: ${describeError(err)}`;
  }
  emit();

  const finishReport = () => {
    const sorted = latencies.slice().sort((a, b) => a - b);
    p.latencyP50Ms = quantile(sorted, 0.5);
    p.latencyP99Ms = quantile(sorted, 0.99);
    p.latencyMaxMs = sorted.length ? (sorted[sorted.length - 1] as number) : null;
    p.elapsedMs = performance.now() - started;
  };
  const historyUpdate = async (final: boolean): Promise<void> => {
    if (!run) return;
    finishReport();
    try {
      await api.updateImport(run.id, {
        ...(final ? { status: p.phase === 'failed' ? 'failed' : 'done' } : {}),
        bytesDone: p.unit === 'characters' ? p.done : Math.round((p.done / Math.max(1, p.total)) * opts.file.size),
        documents: p.documents,
        inserted: p.inserted,
        replaced: p.replaced,
        unchanged: p.unchanged,
        errors: p.errors,
        batches: p.batches,
        durationMs: p.elapsedMs,
        docsPerSec: p.elapsedMs > 0 ? (p.documents / p.elapsedMs) * 1000 : 0,
        ...(p.latencyP50Ms !== null
          ? { latencyP50Ms: p.latencyP50Ms, latencyP99Ms: p.latencyP99Ms ?? 0, latencyMaxMs: p.latencyMaxMs ?? 0 }
          : {}),
        ...(p.fatal
          ? { firstError: p.fatal.slice(0, 4000) }
          : p.errorSamples[0]
            ? { firstError: p.errorSamples[0].slice(0, 4000) }
            : {}),
      });
    } catch (err) {
      p.historyError = `Could not update the import history: ${describeError(err)}`;
    }
  };

  let prepared: PreparedFile;
  try {
    const text = await opts.file.text();
    prepared = prepare(text, opts.format, opts.file.name, {
      docs: opts.batchDocs ?? 1000,
      bytes: opts.batchBytes ?? 1 << 20,
    });
  } catch (err) {
    p.phase = 'failed';
    p.fatal = err instanceof FileFormatError ? err.message : `Could not read ${opts.file.name}: ${describeError(err)}`;
    await historyUpdate(true);
    emit();
    return p;
  }
  if (opts.createTable) {
    try {
      await api.createTable(opts.table, opts.createTable.primaryKey);
    } catch (err) {
      p.phase = 'failed';
      p.fatal = `Could not create table ${opts.table}: ${describeError(err)}`;
      await historyUpdate(true);
      emit();
      return p;
    }
  }
  p.total = prepared.total;
  p.unit = prepared.unit;
  for (const e of prepared.parseErrors) {
    p.errors++;
    if (p.errorSamples.length < MAX_SAMPLES) p.errorSamples.push(e);
  }
  p.phase = 'writing';
  emit();

  // Per-interval accounting for the live chart.
  const intervalMs = opts.intervalMs ?? 250;
  p.intervals.push({ t: (performance.now() - started) / 1000, docsPerSec: 0, latencyAvgMs: null, latencyMaxMs: null });
  let tickDocs = 0;
  let tickLatencies: number[] = [];
  let lastTick = performance.now();
  const tick = (): void => {
    const now = performance.now();
    const secs = (now - lastTick) / 1000;
    if (secs <= 0) return;
    p.intervals.push({
      t: (now - started) / 1000,
      docsPerSec: tickDocs / secs,
      latencyAvgMs: tickLatencies.length ? tickLatencies.reduce((a, b) => a + b, 0) / tickLatencies.length : null,
      latencyMaxMs: tickLatencies.length ? Math.max(...tickLatencies) : null,
    });
    tickDocs = 0;
    tickLatencies = [];
    lastTick = now;
    p.elapsedMs = now - started;
    emit();
  };
  const timer = setInterval(tick, intervalMs);
  let lastHistory = performance.now();

  const iterator = prepared.batches();
  const next = (): Batch | null => {
    const r = iterator.next();
    return r.done ? null : r.value;
  };
  const account = (batch: Batch, r: WriteResult, ms: number): void => {
    p.batches++;
    p.documents += batch.documents;
    p.inserted += r.inserted;
    p.replaced += r.replaced;
    p.unchanged += r.unchanged;
    p.errors += r.errors;
    p.done += batch.units;
    latencies.push(ms);
    tickLatencies.push(ms);
    tickDocs += batch.documents;
    if (r.errors > 0) {
      const list = r.document_errors ?? [];
      for (const d of list)
        if (p.errorSamples.length < MAX_SAMPLES) p.errorSamples.push(`${batch.locate(d.index)}: ${d.message}`);
      if (list.length === 0 && r.first_error && p.errorSamples.length < MAX_SAMPLES) p.errorSamples.push(r.first_error);
    }
  };

  const worker = async (): Promise<void> => {
    for (let batch = next(); batch && !p.fatal; batch = next()) {
      const t0 = performance.now();
      try {
        const r = await api.insertRaw(opts.table, batch.body, batch.kind, {
          conflict: opts.conflict,
          durability: opts.durability,
        });
        account(batch, r, performance.now() - t0);
      } catch (err) {
        p.fatal ??= `Batch ${p.batches + 1} (from ${batch.locate(0)}) failed: ${describeError(err)}`;
        return;
      }
      if (performance.now() - lastHistory > 1000) {
        lastHistory = performance.now();
        void historyUpdate(false);
      }
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency ?? 2 }, () => worker()));
  clearInterval(timer);
  tick();
  p.phase = p.fatal ? 'failed' : 'done';
  finishReport();
  await historyUpdate(true);
  emit();
  return p;
}
