/**
 * The resume checkpoint: where an interrupted import continues (--resume).
 *
 * `low` is the contiguous low-water mark of acknowledged *and durable* input: every record before
 * `low.offset` was written or rejected, and is on disk (a sync precedes each update, or the
 * writes were hard). `high` is the furthest input ever sent: records between `low` and `high`
 * may or may not be stored, so a resumed import re-sends them as re-sends (a primary-key conflict
 * on one of them means "already stored", not a rejection). Nothing before `low` is read again
 * (no duplicates), nothing after it is skipped (no gaps).
 *
 * The file has two fixed 8 KiB slots written alternately, each with a sequence number and a
 * CRC-32, so a torn write leaves the other slot valid (the manifest scheme of the engine):
 *   "WHARFCKPT1 <seq> <length> <crc32 hex>\n" + JSON + padding
 */
import { closeSync, existsSync, fdatasyncSync, openSync, readFileSync, writeSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { crc32 } from 'node:zlib';
import { parseTarget } from '@wharf/client';
import type { Format } from './formats/index.js';

export const SLOT_BYTES = 8192;
const MAGIC = 'WHARFCKPT1';

export interface Checkpoint {
  version: 1;
  input: { path: string | null; size: number | null };
  target: string;
  table: string;
  format: Format;
  low: {
    /** Byte offset where reading continues. */
    offset: number;
    /** Line of the last record before it (informational). */
    lastLine: number | null;
    /** Records before it, and what became of them. */
    docs: number;
    written: number;
    rejected: number;
    present: number;
  };
  high: { offset: number; docs: number };
  /** The rejects file the import writes (its first low.rejected lines belong before `low`). */
  rejects: string | null;
  /** True once the whole input was imported: --resume then has nothing to do. */
  complete: boolean;
  updatedAt: string;
}

/** Where the checkpoint lives unless --checkpoint says: beside the report, else beside the data directory, else in the working directory. */
export function defaultCheckpointPath(o: { report?: string; target: string; table: string }): string {
  if (o.report) return `${o.report.replace(/\.json$/i, '')}.checkpoint`;
  const t = parseTarget(o.target);
  const safeTable = o.table.replace(/[^A-Za-z0-9_.-]/g, '_');
  if (t.kind === 'embedded') {
    const dir = resolve(t.dir);
    return join(dirname(dir), `${basename(dir)}.${safeTable}.checkpoint`);
  }
  return resolve(`wharf-import-${safeTable}.checkpoint`);
}

function decodeSlot(buf: Buffer): { seq: number; cp: Checkpoint } | null {
  const nl = buf.indexOf(0x0a);
  if (nl < 0) return null;
  const m = new RegExp(`^${MAGIC} (\\d+) (\\d+) ([0-9a-f]{8})$`).exec(buf.toString('latin1', 0, nl));
  if (!m) return null;
  const len = Number(m[2]);
  if (nl + 1 + len > buf.length) return null;
  const body = buf.subarray(nl + 1, nl + 1 + len);
  if (crc32(body).toString(16).padStart(8, '0') !== m[3]) return null;
  try {
    return { seq: Number(m[1]), cp: JSON.parse(body.toString('utf8')) as Checkpoint };
  } catch {
    return null;
  }
}

function newestSlot(path: string): { seq: number; cp: Checkpoint } | null {
  const buf = readFileSync(path);
  const slots = [0, 1]
    .map((i) => decodeSlot(buf.subarray(i * SLOT_BYTES, (i + 1) * SLOT_BYTES)))
    .filter((s): s is { seq: number; cp: Checkpoint } => s !== null);
  slots.sort((a, b) => b.seq - a.seq);
  return slots[0] ?? null;
}

/** Reads the newest valid slot; null when the file is absent. Throws when no slot is valid. */
export function readCheckpoint(path: string): Checkpoint | null {
  if (!existsSync(path)) return null;
  const newest = newestSlot(path);
  if (!newest) throw new Error(`checkpoint ${path} is unreadable (no valid slot)`);
  return newest.cp;
}

/**
 * Whether `--resume` would skip anything: the checkpoint file exists, validates, is not complete
 * and records durable progress. Only then does the CLI suggest it.
 */
export function canResumeFrom(path: string): boolean {
  try {
    const cp = readCheckpoint(path);
    return cp !== null && !cp.complete && (cp.low.offset > 0 || cp.low.docs > 0);
  } catch {
    return false;
  }
}

export class CheckpointWriter {
  readonly path: string;
  #fd: number;
  #seq = 0;

  constructor(path: string) {
    this.path = path;
    const exists = existsSync(path);
    // Continue after the newest slot already there, so the next write is the newest.
    this.#seq = exists ? (newestSlot(path)?.seq ?? 0) : 0;
    this.#fd = openSync(path, exists ? 'r+' : 'w+');
  }

  /** Writes the next slot. `sync`: fdatasync it (once the state it records is durable). */
  write(cp: Checkpoint, sync: boolean): void {
    this.#seq++;
    const body = Buffer.from(JSON.stringify(cp), 'utf8');
    const head = Buffer.from(
      `${MAGIC} ${this.#seq} ${body.length} ${crc32(body).toString(16).padStart(8, '0')}\n`,
      'latin1',
    );
    if (head.length + body.length > SLOT_BYTES) throw new Error('checkpoint state too large for its slot');
    const slot = Buffer.alloc(SLOT_BYTES, 0x20);
    head.copy(slot, 0);
    body.copy(slot, head.length);
    slot[SLOT_BYTES - 1] = 0x0a;
    writeSync(this.#fd, slot, 0, SLOT_BYTES, (this.#seq % 2) * SLOT_BYTES);
    if (sync) fdatasyncSync(this.#fd);
  }

  close(): void {
    closeSync(this.#fd);
  }
}
