// DuckDB, the reference of the `import` scenario, in a process of its own: what a data engineer
// would run instead of `wharf import` — `CREATE TABLE t AS SELECT * FROM read_json(FILE)` (or
// read_csv), then `CHECKPOINT` so the table is in the database file, durable. The job is timed
// from before the CREATE to after the CHECKPOINT, as `wharf import`'s report times its load from
// the first document to the final sync (opening the database and the runtime's start are outside
// both). DuckDB uses every core; so does Wharf (the engine's threads beside the event loop).
//
//   node lib/duckdb-worker.{ts,js} --file F --format json|csv --dir D
//
// Prints one JSON line: { rows, job_ms, docs_per_s }.

import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { parseArgs, strOpt } from './args.js';

const READERS = { json: 'read_json', csv: 'read_csv' } as const;

async function main(): Promise<void> {
  const { opts } = parseArgs(process.argv.slice(2));
  const file = strOpt(opts, 'file', '');
  const format = strOpt(opts, 'format', '');
  const dir = strOpt(opts, 'dir', '');
  if (!file || !dir) throw new Error('--file and --dir are required');
  if (format !== 'json' && format !== 'csv') throw new Error(`--format must be json or csv, not ${format}`);
  const reader = READERS[format];
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const instance = await DuckDBInstance.create(join(dir, 'bench.duckdb'));
  const conn = await instance.connect();
  const t0 = performance.now();
  await conn.run(`CREATE TABLE t AS SELECT * FROM ${reader}('${file.replaceAll("'", "''")}')`);
  await conn.run('CHECKPOINT');
  const jobMs = performance.now() - t0;
  const rows = Number((await conn.runAndReadAll('SELECT count(*) FROM t')).getRows()[0]![0]);
  conn.closeSync();
  instance.closeSync();
  rmSync(dir, { recursive: true, force: true });
  process.stdout.write(`${JSON.stringify({ rows, job_ms: jobMs, docs_per_s: rows / (jobMs / 1000) })}\n`);
}

main().catch((err: Error) => {
  process.stderr.write(`${err.stack ?? err.message}\n`);
  process.exit(1);
});
