// A plain-text table for the terminal.

export function formatTable(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (c ?? '').padEnd(widths[i]!)).join(' │ ');
  const sep = widths.map((w) => '─'.repeat(w)).join('─┼─');
  return [line(header), sep, ...rows.map(line)].join('\n');
}

export function fmtMs(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(1)} ms`;
}

export function fmtRate(perS: number, unit = 'docs/s'): string {
  if (perS >= 1e6) return `${(perS / 1e6).toFixed(2)} M ${unit}`;
  if (perS >= 1e3) return `${(perS / 1e3).toFixed(1)} k ${unit}`;
  return `${perS.toFixed(0)} ${unit}`;
}

export function fmtRatio(x: number): string {
  return `${x.toFixed(2)}×`;
}
