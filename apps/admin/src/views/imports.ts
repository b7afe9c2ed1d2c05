/**
 * Imports: upload a file (NDJSON, JSON array, CSV) into a table with a progress bar and a live
 * per-interval throughput and latency chart, then the final report; below, the server's history
 * of import runs.
 */
import { html } from 'htm/preact';
import { useCallback, useEffect, useMemo, useState } from 'preact/hooks';
import {
  api,
  type Conflict,
  type Durability,
  describeError,
  type ImportFormat,
  type ImportRun,
  type TableInfo,
} from '../api.ts';
import { TimeChart } from '../charts/time-chart.ts';
import { formatBytes, formatCount, formatDuration, formatNumber, formatTime } from '../format.ts';
import { detectFormat } from '../import/batches.ts';
import { type ImportProgress, runImport } from '../import/runner.ts';

export function Imports({ initialTable }: { initialTable: string | null }) {
  const [tables, setTables] = useState<TableInfo[]>([]);
  const [table, setTable] = useState(initialTable ?? '');
  const [primaryKey, setPrimaryKey] = useState('id');
  const [file, setFile] = useState<File | null>(null);
  const [format, setFormat] = useState<ImportFormat | 'auto'>('auto');
  const [conflict, setConflict] = useState<Conflict>('error');
  const [durability, setDurability] = useState<Durability>('soft');
  const [progress, setProgress] = useState<ImportProgress | null>(null);
  const [running, setRunning] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [runs, setRuns] = useState<ImportRun[] | null>(null);
  const [historyError, setHistoryError] = useState<string | null>(null);
  const [tableCount, setTableCount] = useState<number | null>(null);

  const refreshHistory = useCallback(async () => {
    try {
      setRuns(await api.listImports());
      setHistoryError(null);
    } catch (err) {
      setHistoryError(describeError(err));
    }
  }, []);

  useEffect(() => {
    api.listTables().then(setTables, (err) => setError(describeError(err)));
    void refreshHistory();
    const t = setInterval(() => void refreshHistory(), 5000);
    return () => clearInterval(t);
  }, [refreshHistory]);

  const exists = tables.some((t) => t.name === table);
  const effectiveFormat: ImportFormat | null = format === 'auto' ? (file ? detectFormat(file.name) : null) : format;

  const start = async (ev: Event) => {
    ev.preventDefault();
    if (!file || !table || !effectiveFormat) return;
    setError(null);
    setTableCount(null);
    setRunning(true);
    try {
      const result = await runImport(
        {
          table,
          file,
          format: effectiveFormat,
          conflict,
          durability,
          ...(exists ? {} : { createTable: { primaryKey: primaryKey.trim() || 'id' } }),
        },
        setProgress,
      );
      if (!exists) setTables(await api.listTables());
      if (result.phase === 'done') setTableCount(await api.count(table));
    } catch (err) {
      setError(describeError(err));
    } finally {
      setRunning(false);
      void refreshHistory();
    }
  };

  const chartData = useMemo(() => {
    const iv = progress?.intervals ?? [];
    return [
      iv.map((i) => i.t),
      iv.map((i) => i.docsPerSec),
      iv.map((i) => i.latencyAvgMs),
      iv.map((i) => i.latencyMaxMs),
    ] as [number[], ...(number | null)[][]];
  }, [progress?.intervals]);

  const pct =
    progress && progress.total > 0
      ? Math.min(100, (progress.done / progress.total) * 100)
      : progress?.phase === 'done'
        ? 100
        : 0;

  return html`<section class="view" data-testid="view-imports">
    <h2>Imports</h2>
    <form class="import-form" onSubmit=${start} data-testid="import-form">
      <label>Table
        <input list="import-tables" data-testid="import-table" required value=${table} onInput=${(e: Event) => setTable((e.target as HTMLInputElement).value.trim())} placeholder="table name" />
        <datalist id="import-tables">${tables.map((t) => html`<option value=${t.name} />`)}</datalist>
      </label>
      ${table && !exists ? html`<label>Primary key (new table) <input value=${primaryKey} onInput=${(e: Event) => setPrimaryKey((e.target as HTMLInputElement).value)} /></label>` : null}
      <label>File
        <input type="file" data-testid="import-file" accept=".ndjson,.jsonl,.json,.csv,application/json,text/csv" onChange=${(
          e: Event,
        ) => {
          setFile((e.target as HTMLInputElement).files?.[0] ?? null);
          setProgress(null);
        }} />
      </label>
      <label>Format
        <select value=${format} onChange=${(e: Event) => setFormat((e.target as HTMLSelectElement).value as ImportFormat | 'auto')}>
          <option value="auto">auto (by extension)${file && format === 'auto' ? `: ${effectiveFormat ?? 'unknown'}` : ''}</option>
          <option value="ndjson">NDJSON</option><option value="json">JSON array</option><option value="csv">CSV (header row)</option>
        </select>
      </label>
      <label>On conflict
        <select value=${conflict} onChange=${(e: Event) => setConflict((e.target as HTMLSelectElement).value as Conflict)}>
          <option value="error">error</option><option value="replace">replace</option><option value="update">update</option>
        </select>
      </label>
      <label>Durability
        <select value=${durability} onChange=${(e: Event) => setDurability((e.target as HTMLSelectElement).value as Durability)}>
          <option value="soft">soft (answer when visible)</option><option value="hard">hard (answer when durable)</option>
        </select>
      </label>
      <button class="primary" type="submit" data-testid="import-start" disabled=${running || !file || !table || !effectiveFormat}>${running ? 'Importing…' : 'Import'}</button>
    </form>
    ${file && !effectiveFormat ? html`<div class="field-error" role="alert">Cannot tell the format of ${file.name}: choose one.</div>` : null}
    ${error ? html`<div class="error" role="alert" data-testid="import-error">${error}</div>` : null}
    ${
      progress
        ? html`<div class="import-progress" data-testid="import-progress">
      <div class="progress-row">
        <progress max="100" value=${pct} data-testid="import-bar"></progress>
        <span>${pct.toFixed(0)} % · ${progress.phase}</span>
      </div>
      <div class="muted small">${formatCount(progress.documents)} documents in ${formatCount(progress.batches)} batches, ${formatDuration(progress.elapsedMs)}</div>
      <${TimeChart} id="chart-import" title="Import throughput and batch latency (per interval)" height=${180} data=${chartData} series=${[
        { label: 'documents/s', color: '#2563eb' },
        { label: 'avg latency ms', color: '#d97706', scale: 'y2' },
        { label: 'max latency ms', color: '#dc2626', scale: 'y2' },
      ]} xTime=${false} xLabel="seconds since start" y2Format=${(v: number) => `${formatNumber(v)} ms`} />
      ${progress.fatal ? html`<div class="error" role="alert" data-testid="import-fatal">Import failed: ${progress.fatal}</div>` : null}
      ${progress.historyError ? html`<div class="warn" role="status">${progress.historyError}</div>` : null}
      ${
        progress.phase === 'done' || progress.phase === 'failed'
          ? html`<div class="report" data-testid="import-report">
        <h3>Report</h3>
        <dl>
          <dt>documents read</dt><dd data-testid="report-documents">${formatCount(progress.documents)}</dd>
          <dt>inserted</dt><dd data-testid="report-inserted">${formatCount(progress.inserted)}</dd>
          <dt>replaced / unchanged</dt><dd>${formatCount(progress.replaced)} / ${formatCount(progress.unchanged)}</dd>
          <dt>errors</dt><dd data-testid="report-errors">${formatCount(progress.errors)}</dd>
          <dt>time</dt><dd>${formatDuration(progress.elapsedMs)} (${formatNumber(progress.elapsedMs > 0 ? (progress.documents / progress.elapsedMs) * 1000 : 0)} documents/s)</dd>
          <dt>batch latency</dt><dd>${progress.latencyP50Ms === null ? '–' : `p50 ${progress.latencyP50Ms.toFixed(1)} ms, p99 ${(progress.latencyP99Ms ?? 0).toFixed(1)} ms, max ${(progress.latencyMaxMs ?? 0).toFixed(1)} ms`}</dd>
          ${tableCount !== null ? html`<dt>table ${table} now holds</dt><dd data-testid="report-table-count">${formatCount(tableCount)} documents</dd>` : null}
        </dl>
        ${
          progress.errorSamples.length
            ? html`<div class="error" role="alert" data-testid="import-doc-errors">
          <strong>${formatNumber(progress.errors)} document${progress.errors === 1 ? '' : 's'} rejected${progress.errors > progress.errorSamples.length ? ` (first ${progress.errorSamples.length} shown)` : ''}:</strong>
          <ul>${progress.errorSamples.map((e) => html`<li>${e}</li>`)}</ul>
        </div>`
            : null
        }
      </div>`
          : null
      }
    </div>`
        : null
    }
    <h3>History</h3>
    <p class="muted small">Import runs reported to this server process (kept in memory, newest first).</p>
    ${historyError ? html`<div class="error" role="alert">${historyError}</div>` : null}
    ${
      runs === null
        ? html`<p class="muted">Loading…</p>`
        : runs.length === 0
          ? html`<p class="muted">No import runs yet.</p>`
          : html`
      <div class="table-scroll"><table class="grid" data-testid="import-history">
        <thead><tr><th>#</th><th>started</th><th>table</th><th>file</th><th>status</th><th class="num">documents</th><th class="num">errors</th><th class="num">docs/s</th><th class="num">p99 ms</th><th>source</th></tr></thead>
        <tbody>${runs.map(
          (r) => html`<tr key=${r.id} data-testid="import-run" title=${r.firstError ?? ''}>
          <td>${r.id}</td><td>${formatTime(r.startedAt)}</td><td>${r.table}</td>
          <td>${r.file ?? ''}${r.bytes !== undefined ? html` <span class="muted">(${formatBytes(r.bytes)}, ${r.format})</span>` : null}</td>
          <td><span class=${`badge ${r.status}`}>${r.status}</span></td>
          <td class="num">${formatCount(r.documents ?? 0)}</td><td class="num">${formatCount(r.errors ?? 0)}</td>
          <td class="num">${r.docsPerSec !== undefined ? formatNumber(r.docsPerSec) : '–'}</td>
          <td class="num">${r.latencyP99Ms !== undefined ? r.latencyP99Ms.toFixed(1) : '–'}</td><td>${r.source}</td>
        </tr>`,
        )}</tbody>
      </table></div>`
    }
  </section>`;
}
