/**
 * Splits an import file into write batches. NDJSON goes to the server as is (the engine parses
 * it); a JSON array is parsed here and sent as JSON arrays; CSV is parsed here with Papa Parse
 * (header row, numbers and booleans typed) and sent as JSON arrays. Each batch remembers where
 * it starts so a document error can be reported by its line (NDJSON, CSV) or element (JSON).
 */
import Papa from 'papaparse';
import type { ImportFormat } from '../api.ts';

export interface Batch {
  kind: 'ndjson' | 'json';
  body: string;
  /** Documents in the batch (NDJSON: non-blank lines). */
  documents: number;
  /** Progress units this batch completes (characters of the file, or documents). */
  units: number;
  /** Where the batch's element `index` came from, for error messages. */
  locate: (index: number) => string;
}

export interface PreparedFile {
  format: ImportFormat;
  /** Progress total, in `unit`. */
  total: number;
  unit: 'characters' | 'documents';
  /** Problems found while parsing (CSV rows that do not fit the header); those rows are skipped. */
  parseErrors: string[];
  batches: () => Generator<Batch>;
}

export class FileFormatError extends Error {
  override name = 'FileFormatError';
}

export function detectFormat(fileName: string): ImportFormat | null {
  const n = fileName.toLowerCase();
  if (n.endsWith('.ndjson') || n.endsWith('.jsonl') || n.endsWith('.ldjson')) return 'ndjson';
  if (n.endsWith('.json')) return 'json';
  if (n.endsWith('.csv')) return 'csv';
  return null;
}

export interface BatchLimits {
  docs: number;
  bytes: number;
}

export function prepare(text: string, format: ImportFormat, fileName: string, limits: BatchLimits): PreparedFile {
  if (format === 'ndjson') return prepareNdjson(text, limits);
  if (format === 'json') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      throw new FileFormatError(`${fileName} is not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
    }
    const docs = Array.isArray(parsed) ? parsed : parsed !== null && typeof parsed === 'object' ? [parsed] : null;
    if (!docs)
      throw new FileFormatError(
        `${fileName} holds a JSON ${typeof parsed}; expected an array of objects (or one object).`,
      );
    return prepareArray(docs, 'json', [], (i) => `element ${i}`, limits);
  }
  const result = Papa.parse<Record<string, unknown>>(text, {
    header: true,
    dynamicTyping: true,
    skipEmptyLines: 'greedy',
  });
  if (!result.meta.fields || result.meta.fields.length === 0)
    throw new FileFormatError(`${fileName} has no CSV header row.`);
  const badRows = new Set<number>();
  const parseErrors = result.errors.map((e) => {
    if (typeof e.row === 'number') badRows.add(e.row);
    return `${typeof e.row === 'number' ? `row ${e.row + 1} (line ${e.row + 2})` : 'file'}: ${e.message}`;
  });
  if (result.data.length === 0 && parseErrors.length > 0) throw new FileFormatError(`${fileName}: ${parseErrors[0]}`);
  const rows: unknown[] = [];
  const lineOf: number[] = [];
  result.data.forEach((row, i) => {
    if (badRows.has(i)) return;
    rows.push(row);
    lineOf.push(i + 2);
  });
  return prepareArray(rows, 'csv', parseErrors, (i) => `line ${lineOf[i] ?? '?'}`, limits);
}

function prepareNdjson(text: string, limits: BatchLimits): PreparedFile {
  return {
    format: 'ndjson',
    total: text.length,
    unit: 'characters',
    parseErrors: [],
    *batches() {
      let pos = 0;
      let line = 1;
      while (pos < text.length) {
        const start = pos;
        const firstLine = line;
        let docs = 0;
        while (pos < text.length && docs < limits.docs && pos - start < limits.bytes) {
          let nl = text.indexOf('\n', pos);
          if (nl === -1) nl = text.length - 1;
          if (text.slice(pos, nl + 1).trim() !== '') docs++;
          pos = nl + 1;
          line++;
        }
        yield {
          kind: 'ndjson',
          body: text.slice(start, pos),
          documents: docs,
          units: pos - start,
          locate: (index: number) => `line ${firstLine + index}`,
        };
      }
    },
  };
}

function prepareArray(
  docs: unknown[],
  format: ImportFormat,
  parseErrors: string[],
  locate: (i: number) => string,
  limits: BatchLimits,
): PreparedFile {
  return {
    format,
    total: docs.length,
    unit: 'documents',
    parseErrors,
    *batches() {
      let i = 0;
      while (i < docs.length) {
        const start = i;
        let bytes = 0;
        const parts: string[] = [];
        while (i < docs.length && parts.length < limits.docs && bytes < limits.bytes) {
          const s = JSON.stringify(docs[i]);
          parts.push(s);
          bytes += s.length + 1;
          i++;
        }
        yield {
          kind: 'json',
          body: `[${parts.join(',')}]`,
          documents: parts.length,
          units: parts.length,
          locate: (index: number) => locate(start + index),
        };
      }
    },
  };
}
