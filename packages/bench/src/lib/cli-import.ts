// `wharf import` as a user runs it: the CLI in a process of its own (the `wharf` command the bench
// was started with), with `--report`, whose figures the scenarios read. Its load is timed by the
// report (first document handed over → final sync returned); the process's wall time from spawn
// to exit is kept beside it.

import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/** The part of `wharf import --report`'s JSON the bench reads. */
export interface ImportReport {
  status: string;
  documents: { read: number; written: number; rejected: number };
  wallSeconds: number;
  docsPerSec: number;
  finalSyncMs: number | null;
  memory: { peakRssMB: number };
  engine: Record<string, unknown> | null;
}

export interface CliImportRun {
  report: ImportReport;
  /** spawn → exit of the `wharf import` process */
  processMs: number;
}

/** Runs `wharf import FILE --table T --target TARGET …` and returns its report; throws unless it wrote every document. */
export async function cliImport(
  cliBin: string,
  scratch: string,
  o: { file: string; table: string; target: string; docs: number; args?: string[] },
): Promise<CliImportRun> {
  const report = join(scratch, `${o.table}.report.json`);
  const checkpoint = join(scratch, `${o.table}.checkpoint`);
  rmSync(report, { force: true });
  rmSync(checkpoint, { force: true });
  const args = ['import', o.file, '--table', o.table, '--target', o.target, '--report', report];
  args.push('--checkpoint', checkpoint, '--progress', 'none', ...(o.args ?? []));
  const t0 = performance.now();
  await new Promise<void>((res, rej) => {
    const p = spawn(process.execPath, [cliBin, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    p.on('error', rej);
    p.on('close', (code) =>
      code === 0 ? res() : rej(new Error(`wharf ${args.join(' ')} exited ${code}:\n${err.slice(-2000)}`)),
    );
  });
  const processMs = performance.now() - t0;
  const r = JSON.parse(readFileSync(report, 'utf8')) as ImportReport;
  rmSync(checkpoint, { force: true });
  if (r.documents.written !== o.docs)
    throw new Error(`wharf import ${o.file} → ${o.target} wrote ${r.documents.written} of ${o.docs}`);
  return { report: r, processMs };
}
