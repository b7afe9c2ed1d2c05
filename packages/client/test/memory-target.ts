/**
 * A Target for unit tests of the loader's own logic (batching, backpressure, ordering, retries):
 * it keeps documents in a Map and can hold, reorder or fail acknowledgements on demand.
 * Integration tests use the real engine instead (test/import/).
 */
import type { InsertOptions, Payload, Target } from '../src/targets/target.js';
import type { WriteResult } from '../src/types.js';

export interface Call {
  payload: string;
  count: number;
  opts: InsertOptions;
}

export class MemoryTarget implements Target {
  readonly kind = 'memory';
  readonly url = 'memory:';
  payloadFormat: 'ndjson' | 'json' = 'ndjson';
  maxPayloadBytes?: number;
  readonly docs = new Map<string | number, object>();
  readonly calls: Call[] = [];
  active = 0;
  maxActive = 0;
  syncs = 0;
  /** When set, each insert waits until `release()` lets it through (in any order). */
  hold = false;
  #held: (() => void)[] = [];
  /**
   * When set, inserts are served one at a time, each taking this long (a target that is the
   * bottleneck: batches sent together wait for each other).
   */
  serialMs = 0;
  #serial: Promise<void> = Promise.resolve();
  /** Fail this many inserts with a transient error, after writing them (an ambiguous failure). */
  failAfterWrite = 0;
  /** Fail every insert with a non-transient error. */
  fatal = false;
  closed = false;

  async open(): Promise<void> {}
  async ensureTable(): Promise<void> {}

  heldCount(): number {
    return this.#held.length;
  }

  /** Lets held inserts finish: the one at `index` (default all, last first). */
  release(index?: number): void {
    if (index === undefined) {
      const all = this.#held.reverse();
      this.#held = [];
      for (const f of all) f();
    } else {
      const [f] = this.#held.splice(index, 1);
      f?.();
    }
  }

  async insert(_table: string, payload: Payload, opts: InsertOptions): Promise<WriteResult> {
    this.active++;
    this.maxActive = Math.max(this.maxActive, this.active);
    try {
      if (this.hold) await new Promise<void>((resolve) => this.#held.push(resolve));
      if (this.serialMs > 0) {
        const turn = this.#serial.then(() => tick(this.serialMs)).then(() => undefined);
        this.#serial = turn;
        await turn;
      }
      if (this.fatal) throw Object.assign(new Error('disk on fire'), { code: 'WHARF_ERR_IO' });
      const text = payload.bytes.toString('utf8');
      this.calls.push({ payload: text, count: payload.count, opts });
      const items = payload.format === 'ndjson' ? text.split('\n').slice(0, -1) : splitArray(text);
      const res: WriteResult = { inserted: 0, replaced: 0, unchanged: 0, deleted: 0, skipped: 0, errors: 0, document_errors: [] };
      items.forEach((line, index) => {
        let doc: Record<string, unknown>;
        try {
          doc = JSON.parse(line);
        } catch (err) {
          res.errors++;
          res.document_errors!.push({ index, message: `invalid JSON: ${(err as Error).message}` });
          return;
        }
        if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
          res.errors++;
          res.document_errors!.push({ index, message: 'not an object' });
          return;
        }
        const key = (doc.id ?? `gen-${this.docs.size}`) as string | number;
        if (this.docs.has(key) && opts.conflict === 'error') {
          res.errors++;
          res.document_errors!.push({ index, message: `Duplicate primary key \`id\`: ${JSON.stringify(key)}` });
          return;
        }
        if (this.docs.has(key)) res.replaced++;
        else res.inserted++;
        this.docs.set(key, doc);
      });
      if (this.failAfterWrite > 0) {
        this.failAfterWrite--;
        throw Object.assign(new Error('connection reset'), { code: 'WHARF_ERR_TRANSPORT' });
      }
      return res;
    } finally {
      this.active--;
    }
  }

  async sync(): Promise<void> {
    this.syncs++;
  }

  async stats() {
    return { fdatasyncs: this.syncs, groups: this.calls.length };
  }

  isTransient(err: unknown): boolean {
    return (err as { code?: string }).code === 'WHARF_ERR_TRANSPORT';
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

function splitArray(text: string): string[] {
  const arr = JSON.parse(text) as unknown[];
  return arr.map((x) => JSON.stringify(x));
}

export const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));
