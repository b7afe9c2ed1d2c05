/**
 * Lists a `wharf import` run in a Wharf server's import history (`/api/imports`, shown by the
 * admin UI's Imports view) when the target is `wharf://host:port`: opened when the import starts,
 * closed with its figures when it ends. Best effort: a server without the route, or any HTTP
 * failure, never changes the import's outcome.
 */
import { parseTarget } from '@wharf/client';
import type { ImportReport } from './report.js';

export interface ImportRunStart {
  table: string;
  file: string | null;
  format: string;
  bytes: number | null;
  durability: 'soft' | 'hard';
  conflict: 'error' | 'replace' | 'update';
}

export interface ImportRunHandle {
  finish(report: ImportReport): Promise<void>;
}

const TIMEOUT_MS = 2000;

/** Opens the run; `null` when the target is not a Wharf server or it did not answer. */
export async function openImportRun(target: string, start: ImportRunStart): Promise<ImportRunHandle | null> {
  let base: string;
  try {
    const spec = parseTarget(target);
    if (spec.kind !== 'wharf') return null;
    base = `${spec.secure ? 'https' : 'http'}://${spec.host.includes(':') ? `[${spec.host}]` : spec.host}:${spec.port}/api/imports`;
  } catch {
    return null;
  }
  const send = async (method: 'POST' | 'PATCH', url: string, body: object): Promise<{ id?: number } | null> => {
    try {
      const res = await fetch(url, {
        method,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
      return res.ok ? ((await res.json()) as { id?: number }) : null;
    } catch {
      return null;
    }
  };
  const run = await send('POST', base, {
    table: start.table,
    source: 'wharf import',
    ...(start.file ? { file: start.file.slice(-1024) } : {}),
    format: start.format === 'tsv' ? 'csv' : start.format,
    ...(start.bytes !== null ? { bytes: start.bytes } : {}),
    durability: start.durability,
    conflict: start.conflict,
  });
  if (typeof run?.id !== 'number') return null;
  const url = `${base}/${run.id}`;
  return {
    async finish(r) {
      await send('PATCH', url, {
        status: r.status === 'failed' || r.status === 'interrupted' ? 'failed' : 'done',
        bytesDone: r.input.bytesRead,
        documents: r.documents.read,
        inserted: r.documents.written,
        errors: r.documents.rejected,
        durationMs: Math.round(r.wallSeconds * 1000),
        docsPerSec: r.docsPerSec,
        latencyP50Ms: r.latencyMs.p50,
        latencyP99Ms: r.latencyMs.p99,
        latencyMaxMs: r.latencyMs.max,
        ...(r.error ? { firstError: r.error.message.slice(0, 4096) } : {}),
      });
    },
  };
}
