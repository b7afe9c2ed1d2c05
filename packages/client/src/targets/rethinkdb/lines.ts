/** A batch's NDJSON lines: as one JSON array text, checked one by one, and compared with what is stored. */

/**
 * NDJSON as the bytes of a JSON array: `[`, the lines with their newlines made commas, `]`. Null
 * when there is no document. A blank line makes an empty element, which fails the query like a
 * bad line does (`checkLines` then drops it).
 */
export function arrayOfLines(ndjson: Buffer): Buffer | null {
  let end = ndjson.length;
  while (end > 0 && isSpace(ndjson[end - 1] as number)) end--;
  if (end === 0) return null;
  const out = Buffer.allocUnsafe(end + 2);
  out[0] = 0x5b;
  ndjson.copy(out, 1, 0, end);
  out[end + 1] = 0x5d;
  for (let i = out.indexOf(0x0a, 1); i !== -1; i = out.indexOf(0x0a, i + 1)) out[i] = 0x2c;
  return out;
}

function isSpace(c: number): boolean {
  return c === 0x0a || c === 0x0d || c === 0x20 || c === 0x09;
}

/** One document of a batch: its 0-based line (blank lines count), its text and its parsed value. */
export interface BatchDoc {
  index: number;
  text: string;
  doc: Record<string, unknown>;
}

/**
 * Each line of an NDJSON batch checked in this process: the JSON objects, and an error for
 * every other non-blank line with its 0-based line (blank lines count, as the engine counts them).
 */
export function checkLines(ndjson: string): {
  good: BatchDoc[];
  errors: { index: number; message: string }[];
  blank: boolean;
} {
  const good: BatchDoc[] = [];
  const errors: { index: number; message: string }[] = [];
  let blank = false;
  const lines = ndjson.split('\n');
  // The text after the last newline is a line only when it holds something.
  if (lines.length > 1 && lines[lines.length - 1]!.trim() === '') lines.pop();
  lines.forEach((line, index) => {
    if (line.trim() === '') {
      blank = true;
      return;
    }
    let doc: unknown;
    try {
      doc = JSON.parse(line);
    } catch (err) {
      errors.push({ index, message: `invalid JSON: ${(err as Error).message}` });
      return;
    }
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc))
      errors.push({ index, message: 'a document must be a JSON object' });
    else good.push({ index, text: line, doc: doc as Record<string, unknown> });
  });
  return { good, errors, blank };
}

/** The documents of a JSON-array payload (elements numbered from 0). */
export function arrayDocs(json: Buffer): BatchDoc[] {
  const parsed = JSON.parse(json.toString('utf8')) as unknown[];
  return parsed.map((doc, index) => ({ index, text: JSON.stringify(doc), doc: doc as Record<string, unknown> }));
}

/** The texts as one JSON array. */
export function arrayOf(docs: BatchDoc[]): Buffer {
  return Buffer.from(`[${docs.map((d) => d.text).join(',')}]`, 'utf8');
}

/**
 * True when a stored document is the one sent: the same JSON value, whatever the order of its
 * fields (a server may store them sorted). Numbers compare as JSON numbers (1 and 1.0 are equal).
 */
export function sameDocument(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((v, i) => sameDocument(v, bb[i]));
  }
  const ak = Object.keys(a);
  const bo = b as Record<string, unknown>;
  if (ak.length !== Object.keys(bo).length) return false;
  return ak.every((k) => Object.hasOwn(bo, k) && sameDocument((a as Record<string, unknown>)[k], bo[k]));
}
