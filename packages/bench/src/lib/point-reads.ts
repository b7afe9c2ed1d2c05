// Paced point gets of acknowledged keys, measured: what the sustained scenario's two readers
// share. The embedded reader runs it on the loader's event loop, the server reader on its own
// worker thread (lib/http-reader.ts); they differ only in how one get is made.
import { createHistogram } from 'node:perf_hooks';
import { mulberry32 } from '../random.js';
import { docKey } from './docs.js';

/** The latency percentiles (ms) and counts of one reader's gets. */
export interface ReadResult {
  gets: number;
  misses: number;
  errors: number;
  skipped: number;
  ms: { p50: number; p99: number; 'p99.9': number; max: number; mean: number } | null;
}

/**
 * How one get ended: found, missing, or answered with an error (each counted as a get, with its
 * latency). A get that got no answer rejects: it counts as an error only.
 */
export type PointRead = 'found' | 'missing' | 'error';

/** At most this many gets in flight; a get due beyond it is skipped, not queued. */
const MAX_IN_FLIGHT = 64;
/** At most this many gets issued per tick; a larger backlog is skipped, so a stalled reader does not burst. */
const MAX_PER_TICK = 20;

/**
 * Starts `rate` gets per second of random keys below `acknowledged()` (none while it is 0), each
 * made by `read`. Returns `stop`, which waits for the gets in flight and gives the result.
 */
export function startPointReads(
  rate: number,
  acknowledged: () => number,
  read: (key: string) => Promise<PointRead>,
): () => Promise<ReadResult> {
  const hist = createHistogram();
  const rand = mulberry32(7);
  let gets = 0,
    misses = 0,
    errors = 0,
    inFlight = 0,
    skipped = 0,
    issued = 0,
    t0 = -1;
  const timer = setInterval(() => {
    const n = acknowledged();
    if (n <= 0) return;
    if (t0 < 0) t0 = performance.now();
    const due = Math.floor(((performance.now() - t0) / 1000) * rate) + 1 - issued;
    for (let k = 0; k < Math.min(due, MAX_PER_TICK); k++, issued++) {
      if (inFlight >= MAX_IN_FLIGHT) {
        skipped++;
        continue;
      }
      const started = performance.now();
      inFlight++;
      read(docKey(Math.floor(rand() * n)))
        .then(
          (outcome) => {
            hist.record(Math.max(1, Math.round((performance.now() - started) * 1e6)));
            gets++;
            if (outcome === 'missing') misses++;
            else if (outcome === 'error') errors++;
          },
          () => {
            errors++;
          },
        )
        .finally(() => {
          inFlight--;
        });
    }
    if (due > MAX_PER_TICK) {
      skipped += due - MAX_PER_TICK;
      issued += due - MAX_PER_TICK;
    }
  }, 5);
  return async () => {
    clearInterval(timer);
    while (inFlight > 0) await new Promise((res) => setTimeout(res, 10));
    const ms = (ns: number) => Math.round(ns / 1e3) / 1e3;
    return {
      gets,
      misses,
      errors,
      skipped,
      ms: gets
        ? {
            p50: ms(hist.percentile(50)),
            p99: ms(hist.percentile(99)),
            'p99.9': ms(hist.percentile(99.9)),
            max: ms(hist.max),
            mean: ms(hist.mean),
          }
        : null,
    };
  };
}
