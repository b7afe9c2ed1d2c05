/**
 * Finds the first document of a batch that nests deeper than MAX_DOCUMENT_DEPTH, without parsing
 * it: a scan of the bytes for `{ [ } ]` outside strings. The HTTP and ws entries run it before
 * the engine sees a batch, so a too-deep document is refused (400 naming the limit and its NDJSON
 * line or array element) instead of being stored and later failing every read that meets it.
 * One pass in plain JS (about 1 GB/s), little next to the engine's parse. Malformed JSON is not this scan's business: the engine reports it.
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
