/**
 * The rejects file: one JSON object per line, in input order, for every document not written:
 *   {"line":12,"offset":3456,"kind":"invalid","reason":"…","raw":"…the record as read…"}
 * Written synchronously as errors are released (in order), so a kill leaves a valid prefix.
 */
import { closeSync, existsSync, fstatSync, ftruncateSync, openSync, readSync, writeSync } from 'node:fs';
import type { DocumentError } from '@wharf/client';

export class RejectsFile {
  readonly path: string;
  #fd: number;
  #position: number;
  count = 0;

  /** `keep`: when resuming, the number of lines to keep (the rejects before the checkpoint). */
  constructor(path: string, keep?: number) {
    this.path = path;
    if (keep === undefined || !existsSync(path)) {
      this.#fd = openSync(path, 'w');
      this.#position = 0;
      return;
    }
    this.#fd = openSync(path, 'r+');
    this.#position = offsetAfterLines(this.#fd, keep);
    ftruncateSync(this.#fd, this.#position);
    this.count = keep;
  }

  write(e: DocumentError): void {
    const rec: Record<string, unknown> = {
      line: e.line ?? null,
      offset: e.offset ?? null,
      kind: e.kind,
      reason: e.reason,
    };
    if (e.range) rec.range = e.range;
    rec.raw = e.raw ?? null;
    const buf = Buffer.from(`${JSON.stringify(rec)}\n`);
    writeSync(this.#fd, buf, 0, buf.length, this.#position);
    this.#position += buf.length;
    this.count++;
  }

  close(): void {
    closeSync(this.#fd);
  }
}

/** Byte offset just after the first `n` lines of an open file (its size if it has fewer). */
function offsetAfterLines(fd: number, n: number): number {
  if (n === 0) return 0;
  const size = fstatSync(fd).size;
  const buf = Buffer.allocUnsafe(1 << 16);
  let pos = 0;
  let seen = 0;
  while (pos < size) {
    const got = readSync(fd, buf, 0, buf.length, pos);
    if (got <= 0) break;
    let i = -1;
    while ((i = buf.indexOf(0x0a, i + 1)) !== -1 && i < got) {
      if (++seen === n) return pos + i + 1;
    }
    pos += got;
  }
  return size;
}
