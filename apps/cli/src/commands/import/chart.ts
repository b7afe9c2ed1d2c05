/**
 * --chart FILE.html: a self-contained page (uPlot's JS and CSS inlined from the `uplot` package)
 * with throughput per interval and per-interval latency percentiles over time, plus the summary.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { ImportReport } from './report.js';

const require = createRequire(import.meta.url);

function asset(path: string): string {
  return readFileSync(require.resolve(path), 'utf8');
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

export function chartHtml(r: ImportReport): string {
  const js = asset('uplot/dist/uPlot.iife.min.js');
  const css = asset('uplot/dist/uPlot.min.css');
  const data = {
    t: r.intervals.map((i) => i.t),
    rate: r.intervals.map((i) => (i.seconds > 0 ? Math.round(i.docs / i.seconds) : 0)),
    p50: r.intervals.map((i) => i.p50 ?? null),
    p99: r.intervals.map((i) => i.p99 ?? null),
    max: r.intervals.map((i) => i.max ?? null),
  };
  const l = r.latencyMs;
  const title = `wharf import → ${r.target} ${r.table}`;
  const rows: [string, string][] = [
    ['status', `${r.status} (exit ${r.exitCode})`],
    ['documents', `${r.documents.read} read, ${r.documents.written} written, ${r.documents.rejected} rejected`],
    ['wall', `${r.wallSeconds} s, ${Math.round(r.docsPerSec)} docs/s`],
    ['latency ms', `p50 ${l.p50}, p90 ${l.p90}, p99 ${l.p99}, p99.9 ${l['p99.9']}, max ${l.max}, mean ${l.mean}`],
    ['final sync', r.finalSyncMs === null ? 'none' : `${r.finalSyncMs} ms`],
    [
      'durability',
      r.options.naive
        ? 'naive (one per insert, hard)'
        : `${r.options.durability}, batch ${r.options.batchSize}, concurrency ${r.options.concurrency}`,
    ],
    ['stalls', `${r.zeroIntervals} intervals with no completion`],
  ];
  if (r.engine) rows.push(['engine', `fdatasyncs ${r.engine.fdatasyncs}, groups ${r.engine.groups}`]);
  // `</` would end the script element early.
  const json = JSON.stringify(data).replace(/<\//g, '<\\/');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${escapeHtml(title)}</title>
<style>${css}</style>
<style>
  body { font: 14px system-ui, sans-serif; margin: 24px; color: #222; }
  table { border-collapse: collapse; margin-bottom: 16px; }
  td { padding: 2px 12px 2px 0; vertical-align: top; }
  td:first-child { color: #666; }
  h1 { font-size: 18px; }
  h2 { font-size: 15px; margin-top: 24px; }
</style>
</head>
<body>
<h1>${escapeHtml(title)}</h1>
<table>${rows.map(([k, v]) => `<tr><td>${escapeHtml(k)}</td><td>${escapeHtml(v)}</td></tr>`).join('')}</table>
<h2>Throughput (documents acknowledged per second, per ${r.intervalMs / 1000} s interval)</h2>
<div id="rate"></div>
<h2>Latency per interval (ms, per document, from hand-over to acknowledgement)</h2>
<div id="latency"></div>
<script>${js}</script>
<script>
const d = ${json};
const width = Math.min(1100, window.innerWidth - 48);
new uPlot({ width, height: 280, scales: { x: { time: false }, y: { range: (u, min, max) => [0, Math.max(1, max) * 1.1] } },
  axes: [{ label: 'seconds' }, { label: 'docs/s', size: 80 }],
  series: [{ label: 't (s)' }, { label: 'docs/s', stroke: '#1f77b4', fill: 'rgba(31,119,180,0.1)' }] },
  [d.t, d.rate], document.getElementById('rate'));
new uPlot({ width, height: 280, scales: { x: { time: false }, y: { distr: 3 } }, axes: [{ label: 'seconds' }, { label: 'ms', size: 80 }],
  series: [{ label: 't (s)' }, { label: 'p50', stroke: '#2ca02c' }, { label: 'p99', stroke: '#ff7f0e' }, { label: 'max', stroke: '#d62728' }] },
  [d.t, d.p50, d.p99, d.max], document.getElementById('latency'));
</script>
</body>
</html>
`;
}

export function writeChart(path: string, r: ImportReport): void {
  writeFileSync(path, chartHtml(r));
}
