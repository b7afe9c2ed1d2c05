// Child process for goals/engine.ts and the scenarios: the better-sqlite3 side of the bulk comparison.
//
//   node [--conditions=wharf-source --import tsx] lib/sqlite-worker.{ts,js} bulk --dir D --docs 1000000 [--without-rowid]
//
// The same documents as the Wharf side (lib/docs.ts), stored as TEXT with the key as PRIMARY KEY,
// journal_mode=WAL, synchronous=FULL, all rows in one transaction through one prepared statement.
// Timed: BEGIN … COMMIT, i.e. until the rows are durable (COMMIT fsyncs the WAL). SQLite is given
// its best case: keys and lines are split beforehand (not timed), keys arrive in order, and the
// WAL checkpoint (copying the WAL into the database file) is switched off during the transaction
// and timed apart, as Wharf's own checkpoint is not in its figure either.

import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Sqlite from 'better-sqlite3';
import { numOpt, parseArgs, strOpt } from './args.js';
import { docLines } from './docs.js';

function bulk(dir: string, docs: number, withoutRowid: boolean) {
  const g0 = performance.now();
  const keys: string[] = new Array(docs);
  const lines: string[] = new Array(docs);
  let bytes = 0;
  let i = 0;
  for (const d of docLines(docs)) {
    keys[i] = d.key;
    lines[i++] = d.line;
    bytes += d.line.length + 1;
  }
  const genMs = performance.now() - g0;

  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const db = new Sqlite(join(dir, 'bench.sqlite'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('wal_autocheckpoint = 0');
  db.exec(`CREATE TABLE docs (id TEXT PRIMARY KEY, doc TEXT NOT NULL)${withoutRowid ? ' WITHOUT ROWID' : ''}`);
  const stmt = db.prepare('INSERT INTO docs (id, doc) VALUES (?, ?)');
  const insertAll = db.transaction(() => {
    for (let j = 0; j < docs; j++) stmt.run(keys[j], lines[j]);
  });

  const t0 = performance.now();
  insertAll();
  const totalMs = performance.now() - t0;

  const c0 = performance.now();
  db.pragma('wal_checkpoint(TRUNCATE)');
  const checkpointMs = performance.now() - c0;
  const count = (db.prepare('SELECT count(*) AS n FROM docs').get() as { n: number }).n;
  db.close();
  if (count !== docs) throw new Error(`sqlite: ${count} rows, expected ${docs}`);
  return {
    scenario: 'sqlite-bulk',
    sqlite_version: (new Sqlite(':memory:').prepare('select sqlite_version() as v').get() as { v: string }).v,
    table: withoutRowid ? 'WITHOUT ROWID' : 'rowid',
    docs,
    input_bytes: bytes,
    generate_ms: genMs,
    total_ms: totalMs,
    docs_per_s: docs / (totalMs / 1000),
    mb_per_s: bytes / 1e6 / (totalMs / 1000),
    checkpoint_ms: checkpointMs,
  };
}

function main() {
  const { positional, opts } = parseArgs(process.argv.slice(2));
  const dir = strOpt(opts, 'dir', '');
  if (!dir) throw new Error('--dir is required');
  if (positional[0] !== 'bulk') throw new Error(`unknown scenario ${positional[0]}; expected bulk`);
  const out = bulk(dir, numOpt(opts, 'docs', 1_000_000), opts.has('without-rowid'));
  if (!opts.has('keep')) rmSync(dir, { recursive: true, force: true });
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

try {
  main();
} catch (e) {
  process.stderr.write(`${String((e as Error)?.stack ?? e)}\n`);
  process.exit(1);
}
