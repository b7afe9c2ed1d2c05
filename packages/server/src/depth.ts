/**
 * Finds the first document of a batch that nests deeper than MAX_DOCUMENT_DEPTH, without parsing
 * it: a scan of the bytes for `{ [ } ]` outside strings. The HTTP and ws entries run it before
 * the engine sees a batch, so a too-deep document is refused (400 naming the limit and its NDJSON
 * line or array element) instead of being stored and later failing every read that meets it.
 * Malformed JSON is not this scan's business: the engine reports it.
 *
 * A document cannot nest deeper than the number of `{` and `[` bytes it holds, so NDJSON is first
 * walked from one of those bytes to the next with Buffer#indexOf (native), and only a line
 * holding more than the limit of them is scanned byte by byte: a byte loop over every batch in JS
 * cost the server more CPU than the engine's parse of it.
 */

export interface TooDeep {
  /** NDJSON: 0-based line (blank lines count, as in document_errors); JSON: 0-based array element (0 for a lone object). */
  index: number;
  /** What `index` counts, for the message. */
  unit: 'line' | 'element';
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const NEWLINE = 0x0a;

/** The index of the closing quote of the string opened at `open` (an escape skips the next byte), or buf.length. */
function stringEnd(buf: Uint8Array, open: number): number {
  const n = buf.length;
  for (let i = open + 1; i < n; i++) {
    const c = buf[i] as number;
    if (c === QUOTE) return i;
    if (c === BACKSLASH) i++;
  }
  return n;
}

/**
 * The first document deeper than `maxDepth` in `buf`, or null. `ndjson`: one document per line;
 * else a JSON array of documents (or one object, counted as element 0).
 */
export function findTooDeep(buf: Uint8Array, maxDepth: number, ndjson: boolean): TooDeep | null {
  const bytes = Buffer.isBuffer(buf) ? buf : Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  return ndjson ? findTooDeepLine(bytes, maxDepth) : scanTooDeep(bytes, maxDepth, false);
}

/** NDJSON: the first line with more than `maxDepth` opening bytes that also nests that deep. */
function findTooDeepLine(buf: Buffer, maxDepth: number): TooDeep | null {
  let brace = buf.indexOf(0x7b);
  let bracket = buf.indexOf(0x5b);
  let lineEnd = -1; // the newline ending the line of the last opening byte seen (-1: not found yet)
  let opens = 0;
  while (brace !== -1 || bracket !== -1) {
    let at: number;
    if (bracket === -1 || (brace !== -1 && brace < bracket)) {
      at = brace;
      brace = buf.indexOf(0x7b, at + 1);
    } else {
      at = bracket;
      bracket = buf.indexOf(0x5b, at + 1);
    }
    if (at > lineEnd) {
      lineEnd = buf.indexOf(NEWLINE, at);
      if (lineEnd === -1) lineEnd = buf.length;
      opens = 0;
    }
    if (++opens > maxDepth) {
      const lineStart = at === 0 ? 0 : buf.lastIndexOf(NEWLINE, at - 1) + 1;
      if (scanTooDeep(buf.subarray(lineStart, lineEnd), maxDepth, true) !== null)
        return { index: linesBefore(buf, lineStart), unit: 'line' };
      // Not too deep after all (brackets inside strings): go on after this line.
      opens = Number.NEGATIVE_INFINITY;
    }
  }
  return null;
}

/** Newlines before `end`: the 0-based line starting there. */
function linesBefore(buf: Buffer, end: number): number {
  let n = 0;
  for (let i = buf.indexOf(NEWLINE); i !== -1 && i < end; i = buf.indexOf(NEWLINE, i + 1)) n++;
  return n;
}

/** The byte-by-byte scan: every `{ [ } ]` outside strings. */
function scanTooDeep(buf: Uint8Array, maxDepth: number, ndjson: boolean): TooDeep | null {
  let depth = 0;
  let line = 0;
  let element = 0;
  // A JSON array batch: documents sit at depth 1, so the array itself does not count.
  let base = 0;
  let sawOpen = false;
  // NDJSON: the next newline, so an unterminated string ends with its line (cached: one search per line).
  let lineEnd = -1;
  const n = buf.length;
  for (let i = 0; i < n; i++) {
    const c = buf[i] as number;
    if (c === QUOTE) {
      const end = stringEnd(buf, i);
      if (ndjson) {
        if (lineEnd < i) {
          lineEnd = i;
          while (lineEnd < n && buf[lineEnd] !== NEWLINE) lineEnd++;
        }
        i = end > lineEnd ? lineEnd - 1 : end;
      } else {
        i = end;
      }
    } else if (c === 0x7b || c === 0x5b) {
      if (!ndjson && !sawOpen) {
        sawOpen = true;
        if (c === 0x5b) {
          base = 1;
          depth = 1;
          continue;
        }
      }
      depth++;
      if (depth - base > maxDepth) return ndjson ? { index: line, unit: 'line' } : { index: element, unit: 'element' };
    } else if (c === 0x7d || c === 0x5d) {
      if (depth > 0) depth--;
    } else if (c === 0x2c) {
      if (!ndjson && depth === base) element++;
    } else if (c === NEWLINE && ndjson) {
      line++;
      depth = 0; // a line is one document: an unbalanced line must not shift the next
    }
  }
  return null;
}

/** "the document at line 3" / "the document at element 0", for WHARF_ERR_DOCUMENT_TOO_DEEP. */
export function describeTooDeep(t: TooDeep): string {
  return `the document at ${t.unit} ${t.index}`;
}
