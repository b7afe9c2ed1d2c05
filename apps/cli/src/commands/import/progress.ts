/**
 * Live progress. On a terminal: one status line rewritten 4 times a second (documents, bytes and
 * % of the input, docs/s, ETA, current p99, rejected). Otherwise: a YCSB-style line every 10 s,
 * e.g.
 *   10 sec: 1043211 operations; 104321.1 current ops/sec; [INSERT: Count=1043211, Max=41.2ms,
 *   Avg=3.1ms, 90=5.0ms, 99=9.8ms, 99.9=20.1ms] 27.3% of input, 0 rejected
 */
import type { Loader } from '@wharf/client';

export interface ProgressOptions {
  loader: Loader;
  out: NodeJS.WritableStream;
  tty: boolean;
  /** Input size in bytes, when known. */
  totalBytes: number | null;
  /** Bytes of the input consumed so far (absolute offset). */
  bytesDone: () => number;
  /** Documents before this run (resume) to add to the counts shown. */
  base: { read: number; rejected: number };
  lineEveryMs?: number;
}

const fmtInt = (n: number) => Math.round(n).toLocaleString('en-US');

export function fmtBytes(n: number): string {
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(i === 0 ? 0 : 1)} ${u[i]}`;
}

export function fmtDuration(s: number): string {
  if (!Number.isFinite(s) || s < 0) return '?';
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = Math.floor(s % 60);
  return h > 0
    ? `${h}:${String(m).padStart(2, '0')}:${String(sec).padStart(2, '0')}`
    : `${m}:${String(sec).padStart(2, '0')}`;
}

export class Progress {
  #o: ProgressOptions;
  #timer: NodeJS.Timeout | null = null;
  #lastAt = 0;
  #startBytes = 0;
  #shown = false;

  constructor(o: ProgressOptions) {
    this.#o = o;
  }

  start(): void {
    const every = this.#o.tty ? 250 : (this.#o.lineEveryMs ?? 10_000);
    this.#lastAt = performance.now();
    this.#startBytes = this.#o.bytesDone();
    this.#timer = setInterval(() => (this.#o.tty ? this.#renderTty() : this.#renderLine()), every);
    this.#timer.unref();
  }

  #renderTty(): void {
    const p = this.#o.loader.progress();
    const bytes = this.#o.bytesDone();
    const total = this.#o.totalBytes;
    const rate =
      p.lastInterval && p.lastInterval.seconds > 0
        ? p.lastInterval.docs / p.lastInterval.seconds
        : p.elapsedSeconds > 0
          ? p.written / p.elapsedSeconds
          : 0;
    const parts = [`${fmtInt(this.#o.base.read + p.read)} docs`];
    if (total) {
      const pct = Math.min(100, (bytes / total) * 100);
      parts.push(`${fmtBytes(bytes)} / ${fmtBytes(total)} ${pct.toFixed(1)}%`);
      const avgBps = p.elapsedSeconds > 0 ? (bytes - this.#startBytes) / p.elapsedSeconds : 0;
      parts.push(`ETA ${avgBps > 0 ? fmtDuration((total - bytes) / avgBps) : '?'}`);
    } else parts.push(fmtBytes(bytes));
    parts.push(`${fmtInt(rate)} docs/s`);
    parts.push(`p99 ${p.current.count > 0 ? p.current.p99.toFixed(1) : '–'} ms`);
    const rejected = this.#o.base.rejected + p.rejected;
    if (rejected > 0) parts.push(`${fmtInt(rejected)} rejected`);
    this.#o.out.write(`\r\x1b[2K${parts.join('  ')}`);
    this.#shown = true;
  }

  #renderLine(): void {
    const p = this.#o.loader.progress();
    const w = this.#o.loader.takeWindow();
    const now = performance.now();
    const secs = (now - this.#lastAt) / 1000;
    this.#lastAt = now;
    const l = w.latency;
    const ms = (x: number) => `${x.toFixed(1)}ms`;
    const lat =
      l.count > 0
        ? `[INSERT: Count=${w.docs}, Max=${ms(l.max)}, Avg=${ms(l.mean)}, 90=${ms(l.p90)}, 99=${ms(l.p99)}, 99.9=${ms(l['p99.9'])}]`
        : '[INSERT: Count=0]';
    const total = this.#o.totalBytes;
    const pct = total ? ` ${((this.#o.bytesDone() / total) * 100).toFixed(1)}% of input,` : '';
    this.#o.out.write(
      `${Math.round(p.elapsedSeconds)} sec: ${this.#o.base.read + p.read} operations; ${(w.docs / (secs || 1)).toFixed(1)} current ops/sec; ${lat}${pct} ${this.#o.base.rejected + p.rejected} rejected\n`,
    );
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    if (this.#shown) this.#o.out.write('\r\x1b[2K');
  }
}
