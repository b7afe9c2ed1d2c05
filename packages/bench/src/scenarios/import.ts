// `import`: the main job — `wharf import FILE` — against what a user would run instead, on one set
// of documents (~150 B each, lib/docs.ts; 1M, quick 200k) written as three files: NDJSON, a JSON
// array, and CSV (a header, tags joined by '|'). Every system runs in a fresh process on a fresh
// directory, all of them once per round, back to back:
//
//   engine bulk path   the engine's own NDJSON bulk path on the NDJSON file's bytes (10k-line
//                      batches, 4 in flight, soft, one db.sync(); lib/engine-worker.ts bulk --file)
//   wharf import       the CLI into embedded:DIR, per format (CSV with --csv-types auto)
//   DuckDB             CREATE TABLE AS SELECT * FROM read_json / read_csv (FILE), CHECKPOINT
//                      (lib/duckdb-worker.ts; an optional peer, @duckdb/node-api)
//   over the network   the CLI into a fresh server process: wharf:// (ws ingest) and rethinkdb://
//                      to its driver port
//
// Each load is timed from its first document to durable (the import's report: first hand-over →
// final sync; DuckDB: CREATE → CHECKPOINT done; the engine: first insert → sync), so opening a
// database and starting a runtime are outside every figure. Then, when a RethinkDB server and its
// import tool are found (lib/rethinkdb-proc.ts), `wharf import --target rethinkdb://` into a
// fresh RethinkDB against `rethinkdb-import` of the same file into another fresh one, each timed
// spawn → exit.

import { mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type CliImportRun, cliImport } from '../lib/cli-import.js';
import { docLines } from '../lib/docs.js';
import { interleave, type Step } from '../lib/interleave.js';
import {
  findRethinkdb,
  findRethinkdbImport,
  RETHINKDB_IMPORT_MISSING,
  RETHINKDB_MISSING,
  rethinkdbImport,
  startRethinkdb,
} from '../lib/rethinkdb-proc.js';
import { startServerProc } from '../lib/server-proc.js';
import { median, pairRatios } from '../lib/stats.js';
import { fmtMs, fmtRate } from '../lib/table.js';
import { type BenchContext, duckdbWorker, engineWorker, isInstalled, type Row, type ScenarioResult } from './common.js';

/** One load: documents per second of its job time, and what the report adds. */
interface Sample {
  docs_per_s: number;
  job_ms: number;
  process_ms?: number;
  peak_rss_mb?: number;
  /** journal + runs + merges ÷ document bytes loaded (the engine's counters, embedded imports) */
  written_per_loaded?: number;
}

const DUCKDB_MISSING = 'DuckDB: @duckdb/node-api is not installed, skipped (npm install @duckdb/node-api)';
const SERVER_MISSING = 'network rows: @wharf/server is not installed, skipped (npm install @wharf/server)';

/** Writes the documents as NDJSON, a JSON array and CSV; returns the three paths. */
function writeInputs(dir: string, docs: number): { ndjson: string; array: string; csv: string } {
  mkdirSync(dir, { recursive: true });
  const lines: string[] = [];
  const rows: string[] = ['id,name,email,age,city,score,tags,active'];
  for (const { line } of docLines(docs)) {
    lines.push(line);
    const d = JSON.parse(line) as Record<string, string | number | boolean | string[]>;
    rows.push([d.id, d.name, d.email, d.age, d.city, d.score, (d.tags as string[]).join('|'), d.active].join(','));
  }
  const paths = { ndjson: join(dir, 'docs.ndjson'), array: join(dir, 'docs.json'), csv: join(dir, 'docs.csv') };
  writeFileSync(paths.ndjson, `${lines.join('\n')}\n`);
  writeFileSync(paths.array, `[\n${lines.join(',\n')}\n]\n`);
  writeFileSync(paths.csv, `${rows.join('\n')}\n`);
  return paths;
}

function fromReport(run: CliImportRun): Sample {
  const r = run.report;
  return {
    docs_per_s: r.docsPerSec,
    job_ms: r.wallSeconds * 1000,
    process_ms: run.processMs,
    peak_rss_mb: r.memory.peakRssMB,
    written_per_loaded: (r.engine?.bytesWrittenPerByteLoaded as number | undefined) ?? undefined,
  };
}

export async function importScenario(ctx: BenchContext, opts: { docs?: number }): Promise<ScenarioResult> {
  const docs = opts.docs ?? (ctx.quick ? 200_000 : 1_000_000);
  const inputs = writeInputs(join(ctx.dir, 'import-input'), docs);
  const cli = ctx.cliBin!;
  const scratch = join(ctx.dir, 'import');
  mkdirSync(scratch, { recursive: true });
  const embedded =
    (name: string, file: string, args: string[] = []) =>
    async (): Promise<Sample> => {
      const dir = join(scratch, name);
      rmSync(dir, { recursive: true, force: true });
      try {
        return fromReport(await cliImport(cli, scratch, { file, table: name, target: `embedded:${dir}`, docs, args }));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    };
  const duckdb = (name: string, file: string, format: 'json' | 'csv') => async (): Promise<Sample> => {
    const r = await duckdbWorker<{ rows: number; job_ms: number; docs_per_s: number }>(ctx, [
      '--file',
      file,
      '--format',
      format,
      '--dir',
      join(scratch, name),
    ]);
    if (r.rows !== docs) throw new Error(`DuckDB loaded ${r.rows} of ${docs} rows from ${file}`);
    return { docs_per_s: r.docs_per_s, job_ms: r.job_ms };
  };
  const network = (scheme: 'wharf' | 'rethinkdb') => async (): Promise<Sample> => {
    const data = join(scratch, `server-${scheme}`);
    rmSync(data, { recursive: true, force: true });
    const server = await startServerProc(data);
    try {
      const target =
        scheme === 'wharf'
          ? `wharf://127.0.0.1:${server.httpPort}`
          : `rethinkdb://admin@127.0.0.1:${server.driverPort}/test`;
      return fromReport(await cliImport(cli, scratch, { file: inputs.ndjson, table: `net_${scheme}`, target, docs }));
    } finally {
      await server.stop();
      rmSync(data, { recursive: true, force: true });
    }
  };

  const hasDuckdb = isInstalled('@duckdb/node-api');
  const hasServer = isInstalled('@wharf/server');
  for (const [ok, note] of [
    [hasDuckdb, DUCKDB_MISSING],
    [hasServer, SERVER_MISSING],
  ] as const) {
    if (ok) continue;
    ctx.log(note);
    ctx.notes.push(note);
  }

  const steps: Step<Sample>[] = [
    {
      name: 'engine-bulk',
      run: async () => {
        const r = await engineWorker<{ total_ms: number; docs_per_s: number; docs: number }>(ctx, [
          'bulk',
          '--dir',
          join(scratch, 'engine-bulk'),
          '--file',
          inputs.ndjson,
        ]);
        if (r.docs !== docs) throw new Error(`the engine's bulk path loaded ${r.docs} of ${docs}`);
        return { docs_per_s: r.docs_per_s, job_ms: r.total_ms };
      },
    },
    { name: 'import-ndjson', run: embedded('import_ndjson', inputs.ndjson) },
    ...(hasDuckdb ? [{ name: 'duckdb-ndjson', run: duckdb('duckdb_ndjson', inputs.ndjson, 'json') }] : []),
    { name: 'import-csv', run: embedded('import_csv', inputs.csv, ['--csv-types', 'auto']) },
    ...(hasDuckdb ? [{ name: 'duckdb-csv', run: duckdb('duckdb_csv', inputs.csv, 'csv') }] : []),
    { name: 'import-array', run: embedded('import_array', inputs.array) },
    ...(hasDuckdb ? [{ name: 'duckdb-array', run: duckdb('duckdb_array', inputs.array, 'json') }] : []),
    ...(hasServer
      ? [
          { name: 'import-wharf', run: network('wharf') },
          { name: 'import-rethinkdb', run: network('rethinkdb') },
        ]
      : []),
  ];
  for (const s of steps)
    s.describe = (x) =>
      `${fmtRate(x.docs_per_s)} (${fmtMs(x.job_ms)}${x.peak_rss_mb !== undefined ? `, peak RSS ${x.peak_rss_mb} MB` : ''})`;
  ctx.log(
    `import: ${ctx.rounds} rounds of [${steps.map((s) => s.name).join(', ')}], ${docs.toLocaleString('en-US')} docs of ~150 B`,
  );
  const r = await interleave<Sample>(ctx.rounds, steps, ctx.log);

  const labels: Record<string, string> = {
    'engine-bulk': "the engine's bulk path (insertNdjson, 10k lines × 4 in flight, soft + sync)",
    'import-ndjson': 'wharf import NDJSON → embedded',
    'duckdb-ndjson': 'DuckDB read_json (NDJSON) + CHECKPOINT',
    'import-csv': 'wharf import CSV (--csv-types auto) → embedded',
    'duckdb-csv': 'DuckDB read_csv + CHECKPOINT',
    'import-array': 'wharf import JSON array → embedded',
    'duckdb-array': 'DuckDB read_json (array) + CHECKPOINT',
    'import-wharf': 'wharf import NDJSON → wharf:// (server process)',
    'import-rethinkdb': "wharf import NDJSON → rethinkdb:// (the server's driver port)",
  };
  /** [measured, reference, goal] */
  const goals: [string, string, number][] = [
    ['import-ndjson', 'duckdb-ndjson', 1.5],
    ['import-ndjson', 'engine-bulk', 0.8],
    ['import-csv', 'duckdb-csv', 1.0],
    ['import-array', 'duckdb-array', 1.5],
    ['import-wharf', 'import-ndjson', 0.7],
    ['import-rethinkdb', 'import-ndjson', 0.5],
  ];
  const rows: Row[] = [];
  const rate = (name: string) => r[name]!.map((s) => s.docs_per_s);
  for (const [name, xs] of Object.entries(r)) {
    const rss = xs.map((s) => s.peak_rss_mb).filter((x): x is number => x !== undefined);
    rows.push({
      scenario: 'import',
      measure: `${docs.toLocaleString('en-US')} docs: ${labels[name]}`,
      value: `${fmtRate(median(rate(name)))} (${fmtMs(median(xs.map((s) => s.job_ms)))}${rss.length ? `, peak RSS ${median(rss)} MB` : ''})`,
    });
  }
  for (const [name, ref, goal] of goals) {
    if (!r[name] || !r[ref]) continue;
    const ratios = pairRatios(rate(name), rate(ref));
    const m = median(ratios);
    rows.push({
      scenario: 'import',
      measure: `${labels[name]} ÷ ${labels[ref]}`,
      value: '',
      reference: ref,
      ratio: m,
      ratios,
      goal: `≥ ${goal.toFixed(1)}×`,
      met: m >= goal,
    });
  }

  // Bytes written per byte loaded by each embedded import: a bulk load into an empty table.
  for (const name of ['import-ndjson', 'import-csv', 'import-array']) {
    const per = (r[name] ?? []).map((s) => s.written_per_loaded).filter((x): x is number => x !== undefined);
    if (!per.length) continue;
    const m = median(per);
    rows.push({
      scenario: 'import',
      measure: `${labels[name]}: bytes written per byte loaded (journal + runs + merges)`,
      value: m.toFixed(2),
      ratios: per,
      goal: '≤ 2 (bulk load into an empty table)',
      met: m <= 2,
    });
  }

  const samples: Record<string, unknown> = { docs, import: r };
  rows.push(...(await againstRethinkdb(ctx, inputs.ndjson, Math.min(docs, ctx.quick ? 50_000 : 200_000), samples)));
  rmSync(join(ctx.dir, 'import-input'), { recursive: true, force: true });
  rmSync(scratch, { recursive: true, force: true });
  return { name: 'import', rows, charts: [], samples };
}

/** `wharf import` into a real RethinkDB against `rethinkdb-import`, the first `docs` documents of the file. */
async function againstRethinkdb(
  ctx: BenchContext,
  ndjson: string,
  docs: number,
  samples: Record<string, unknown>,
): Promise<Row[]> {
  const bin = findRethinkdb();
  const tool = findRethinkdbImport();
  const missing = !bin ? RETHINKDB_MISSING : !tool ? RETHINKDB_IMPORT_MISSING : undefined;
  if (missing) {
    ctx.log(missing);
    return [{ scenario: 'import', measure: 'into a real RethinkDB', value: missing }];
  }
  const dir = join(ctx.dir, 'import-rethinkdb');
  mkdirSync(dir, { recursive: true });
  // The same documents; the tool wants a .json name (it reads NDJSON under it).
  const file = join(dir, 'docs.json');
  const all = readFileSync(ndjson);
  let end = 0;
  for (let i = 0; i < docs; i++) end = all.indexOf(0x0a, end) + 1;
  writeFileSync(file, all.subarray(0, end));
  const ndjsonLink = join(dir, 'docs.ndjson');
  symlinkSync(file, ndjsonLink);
  const steps: Step<Sample>[] = [
    {
      name: 'rethinkdb-import',
      run: async () => {
        const server = await startRethinkdb(bin!, join(dir, 'server-tool'));
        try {
          const ms = rethinkdbImport(tool!, server.driverPort, file, 'test.t');
          return { docs_per_s: docs / (ms / 1000), job_ms: ms, process_ms: ms };
        } finally {
          await server.stop();
        }
      },
    },
    {
      name: 'wharf-import-rethinkdb',
      run: async () => {
        const server = await startRethinkdb(bin!, join(dir, 'server-wharf'));
        try {
          const run = await cliImport(ctx.cliBin!, dir, {
            file: ndjsonLink,
            table: 't',
            target: `rethinkdb://admin@127.0.0.1:${server.driverPort}/test`,
            docs,
          });
          return { docs_per_s: docs / (run.processMs / 1000), job_ms: run.processMs, process_ms: run.processMs };
        } finally {
          await server.stop();
        }
      },
    },
  ];
  for (const s of steps) s.describe = (x) => `${fmtRate(x.docs_per_s)} (${fmtMs(x.job_ms)} spawn → exit)`;
  ctx.log(`import into RethinkDB: ${ctx.rounds} rounds of [${steps.map((s) => s.name).join(', ')}], ${docs} docs`);
  const r = await interleave<Sample>(ctx.rounds, steps, ctx.log);
  rmSync(dir, { recursive: true, force: true });
  samples.rethinkdb = { docs, runs: r };
  const ours = r['wharf-import-rethinkdb']!.map((s) => s.docs_per_s);
  const theirs = r['rethinkdb-import']!.map((s) => s.docs_per_s);
  const ratios = pairRatios(ours, theirs);
  const m = median(ratios);
  return [
    {
      scenario: 'import',
      measure: `${docs.toLocaleString('en-US')} docs into RethinkDB: rethinkdb-import (spawn → exit)`,
      value: fmtRate(median(theirs)),
    },
    {
      scenario: 'import',
      measure: `${docs.toLocaleString('en-US')} docs into RethinkDB: wharf import --target rethinkdb:// (spawn → exit)`,
      value: fmtRate(median(ours)),
      reference: 'rethinkdb-import',
      ratio: m,
      ratios,
      goal: '≥ 2.0×',
      met: m >= 2,
    },
  ];
}
