// The self-contained HTML report of `wharf bench`: the summary table, the machine, and the charts
// (throughput per interval, latency percentiles, the group-commit curve) drawn with uPlot, whose JS
// and CSS are inlined from the `uplot` package (a dependency of this package): no network needed.
//
//   npx tsx packages/bench/src/report-html.ts results/bench-<timestamp>/results.json [out.html]

import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ChartSpec, Row, ScenarioResult } from './scenarios/common.js';

const require = createRequire(import.meta.url);
const asset = (p: string) => readFileSync(require.resolve(p), 'utf8');
const esc = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

interface ReportData {
  command: string;
  started: string;
  seconds: number;
  quick: boolean;
  machine: object;
  notes: string[];
  rows: Row[];
  scenarios: ScenarioResult[];
}

function ratioText(r: Row): string {
  if (r.ratioText) return r.ratioText;
  return r.ratio === undefined ? '' : `${r.ratio.toFixed(2)}×`;
}

export function renderReportHtml(d: ReportData): string {
  const js = asset('uplot/dist/uPlot.iife.min.js');
  const css = asset('uplot/dist/uPlot.min.css');
  const charts: ChartSpec[] = d.scenarios.flatMap((s) => s.charts ?? []);
  const rows = d.rows
    .map((r) => {
      const cls = r.met === true ? 'met' : r.met === false ? 'not' : '';
      const res = r.met === undefined || r.met === null ? '' : r.met ? 'met' : 'NOT MET';
      const per = r.ratios?.length ? ` title="per round: ${r.ratios.map((x) => x.toFixed(3)).join(', ')}"` : '';
      return `<tr><td>${esc(r.scenario)}</td><td>${esc(r.measure)}</td><td>${esc(r.value)}</td><td${per}>${esc(ratioText(r))}</td><td>${esc(r.reference ?? '')}</td><td>${esc(r.goal ?? '')}</td><td class="${cls}">${res}</td></tr>`;
    })
    .join('\n');
  const m = d.machine;
  const machine = Object.entries(m)
    .map(([k, v]) => `<tr><th>${esc(k)}</th><td>${esc(Array.isArray(v) ? v.join(' ') : String(v))}</td></tr>`)
    .join('');
  const times = d.scenarios.map((s) => `${esc(s.name)} ${s.seconds ?? '?'} s`).join(', ');
  const json = JSON.stringify(charts).replace(/<\//g, '<\\/');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(d.command)}</title>
<style>${css}
body{font:14px system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
table{border-collapse:collapse;margin:8px 0 24px}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}.met{color:#070;font-weight:600}.not{color:#b00;font-weight:600}.chart{margin:16px 0 32px}
h2{margin-top:32px}small{color:#666}
</style></head><body>
<h1>${esc(d.command)}</h1>
<p>Started ${esc(d.started)}, took ${d.seconds} s (${times}). Every ratio is the median of per-round ratios, each round running
the measured system and its reference back to back (A B A B …); hover a ratio for the rounds.</p>
${d.notes.map((n) => `<p><small>note: ${esc(n)}</small></p>`).join('\n')}
<h2>Results</h2>
<table><tr><th>scenario</th><th>measure</th><th>value</th><th>ratio</th><th>to</th><th>goal</th><th>result</th></tr>
${rows}
</table>
<h2>Charts</h2>
<div id="charts"></div>
<h2>Machine</h2>
<table>${machine}</table>
<script>${js}</script>
<script>
const charts = ${json};
const colors = ['#1f77b4','#d62728','#2ca02c','#ff7f0e','#9467bd','#8c564b','#17becf'];
for (const c of charts) {
  const div = document.createElement('div'); div.className = 'chart';
  const h = document.createElement('h3'); h.textContent = c.title; div.appendChild(h);
  document.getElementById('charts').appendChild(div);
  const hasY2 = c.series.some(s => s.axis === 'y2');
  const series = [{ label: c.xLabel }].concat(c.series.map((s, i) => ({
    label: s.label, stroke: colors[i % colors.length], width: 2, scale: s.axis === 'y2' ? 'y2' : 'y',
    points: { show: c.x.length < 40 }, spanGaps: false,
    ...(c.bars ? { paths: uPlot.paths.bars({ size: [0.6, 60] }), fill: colors[i % colors.length] + '55' } : {}),
  })));
  const axes = [{ label: c.xLabel }, { label: c.yLabel, scale: 'y' }];
  if (hasY2) axes.push({ label: c.y2Label || '', scale: 'y2', side: 1, grid: { show: false } });
  const scales = { x: { time: false, ...(c.logX ? { distr: 3 } : {}) }, y: c.logY ? { distr: 3 } : {}, y2: {} };
  new uPlot({ width: Math.min(1100, window.innerWidth - 60), height: 320, series, axes, scales }, [c.x].concat(c.series.map(s => s.values)), div);
}
</script>
</body></html>
`;
}

// Run directly: re-render a report from a results.json.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const file = process.argv[2];
  if (!file) {
    process.stderr.write('usage: npx tsx packages/bench/src/report-html.ts results.json [out.html]\n');
    process.exit(2);
  }
  const data = JSON.parse(readFileSync(file, 'utf8')) as ReportData;
  const out = process.argv[3] ?? join(dirname(file), 'report.html');
  writeFileSync(out, renderReportHtml(data));
  process.stdout.write(`wrote ${out}\n`);
}
