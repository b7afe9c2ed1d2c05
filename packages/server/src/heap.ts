/**
 * The V8 heap of a server process: one tuning, applied by the process entry points (`main.ts`,
 * `wharf serve`), and the garbage-collection pauses that `/api/stats` reports.
 *
 * Why the tuning. An ingesting server allocates little JavaScript but many short-lived
 * ArrayBuffers: each socket read (up to 64 KiB) and each WebSocket message that spans reads
 * (~75 KB for a batch of 500 documents) gets one. V8 counts ArrayBuffer bytes allocated since
 * the last mark-compact against the old generation's limit, and frees dead young ones only at a
 * scavenge, which this little JavaScript triggers rarely (every second or two). With the
 * server's ~16 MB of live objects, V8's limit for it was about 40 MB. So at 60 MB/s of buffers,
 * V8 started a mark-compact every 130–150 ms, each holding the loop for 5–30 ms: 120–250
 * mark-compacts in 25–45 s, in 4 of 5 runs of a 30-s sustained load (`--trace-gc`).
 * A limit of 4 × the live heap (V8's own largest dynamic factor) leaves room for the buffers to
 * die at the next scavenge: 4–5 mark-compacts in the same load, and the point-get p99 and
 * ingest-batch p99 about halved (docs/BENCHMARKS.md).
 *
 * `--heap-growing-percent` is read whenever V8 recomputes the limit after a GC, so it can be set
 * at run time (unlike `--initial-old-space-size`, which had the same effect but only as a
 * command-line flag). It applies to the whole process, which is why only the entry points that
 * own the process call it; an application that embeds `startServer` decides for itself.
 */

import { constants, PerformanceObserver } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';

/** Grow the old generation's limit to 4 × its live size after each mark-compact. */
export function tuneHeapForIngest(): void {
  setFlagsFromString('--heap-growing-percent=300');
}

/** Garbage-collection pauses of this process since the server started. */
export interface GcPauses {
  /** Mark-compacts (full collections) and their total pause (ms). */
  gcMajor: number;
  gcMajorMs: number;
  /** Scavenges (young-generation collections) and their total pause (ms). */
  gcMinor: number;
  gcMinorMs: number;
}

export class GcMonitor {
  readonly #pauses: GcPauses = { gcMajor: 0, gcMajorMs: 0, gcMinor: 0, gcMinorMs: 0 };
  readonly #observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = (entry as { detail?: { kind?: number } }).detail?.kind;
      if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) {
        this.#pauses.gcMajor++;
        this.#pauses.gcMajorMs += entry.duration;
      } else if (kind === constants.NODE_PERFORMANCE_GC_MINOR) {
        this.#pauses.gcMinor++;
        this.#pauses.gcMinorMs += entry.duration;
      }
    }
  });

  constructor() {
    this.#observer.observe({ entryTypes: ['gc'] });
  }

  current(): GcPauses {
    const p = this.#pauses;
    const ms = (x: number) => Math.round(x * 100) / 100;
    return { gcMajor: p.gcMajor, gcMajorMs: ms(p.gcMajorMs), gcMinor: p.gcMinor, gcMinorMs: ms(p.gcMinorMs) };
  }

  close(): void {
    this.#observer.disconnect();
  }
}
