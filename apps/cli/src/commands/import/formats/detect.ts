/** Picks the input format: by extension, else (stdin, unknown extension) by the first byte. */
import type { Format } from './types.js';

const BY_EXTENSION: Record<string, Format> = {
  ndjson: 'ndjson',
  jsonl: 'ndjson',
  ldjson: 'ndjson',
  json: 'json',
  csv: 'csv',
  tsv: 'tsv',
  tab: 'tsv',
};

export const FORMATS: readonly Format[] = ['ndjson', 'json', 'csv', 'tsv'];

/** The format an extension names, if any. */
export function formatFromPath(path: string): Format | undefined {
  const m = /\.([a-z0-9]+)$/i.exec(path);
  return m ? BY_EXTENSION[m[1]!.toLowerCase()] : undefined;
}

/**
 * Decides from the first bytes: '[' → JSON array, '{' → NDJSON. A `.json` file holding one
 * object per line (what many exporters write) is NDJSON: the first byte decides that too.
 */
export function formatFromContent(head: Buffer): Format | undefined {
  let i = head.length >= 3 && head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf ? 3 : 0;
  for (; i < head.length; i++) {
    const c = head[i]!;
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue;
    if (c === 0x5b) return 'json';
    if (c === 0x7b) return 'ndjson';
    return undefined;
  }
  return undefined;
}

/** The format to use: `--format` if given, else from the extension refined by content. */
export function detectFormat(path: string | null, head: Buffer, explicit?: Format): Format {
  if (explicit) return explicit;
  const byExt = path ? formatFromPath(path) : undefined;
  if (byExt === 'csv' || byExt === 'tsv') return byExt;
  const byContent = formatFromContent(head);
  if (byContent) return byContent;
  if (byExt) return byExt;
  throw new Error(`cannot tell the format of ${path ?? 'standard input'}: use --format ndjson|json|csv|tsv`);
}
