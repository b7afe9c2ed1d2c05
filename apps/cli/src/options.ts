/**
 * Every command-line option, defined once. parse.ts builds the parser from these tables and
 * docs.ts renders them as docs/reference/cli.md, so the two cannot drift apart.
 */
import type { BenchSuiteOptions } from '@wharf/bench';
import { SCENARIOS } from '@wharf/bench/names';
import type { CsvTypes, Format } from './commands/import/formats/index.js';

/** One `--index name=field[:multi]`. */
export interface IndexOption {
  name: string;
  field: string;
  multi: boolean;
}

export interface ImportOptions {
  /** Input file, or '-' for standard input. */
  file: string;
  /** Every input given (files or glob patterns): several only with --job. */
  files?: string[];
  /** Share this import with other processes as job NAME (apps/cli/src/commands/import/job.ts). */
  job?: string;
  /** With --job: print who owns what and how far each task is, then exit. */
  status: boolean;
  /** With --status: JSON instead of a table. */
  json: boolean;
  /** With --job: NDJSON inputs are cut into tasks of this many bytes. */
  taskBytes: number;
  heartbeatMs: number;
  deadAfterMs: number;
  /** The coordination table on the target. */
  jobTable: string;
  table: string;
  target: string;
  primaryKey: string;
  batchSize: number;
  /** Undefined: the loader's default (4 MiB; 900 KiB for a rethinkdb:// cluster). */
  batchBytes?: number;
  flushMs: number;
  concurrency: number;
  durability: 'soft' | 'hard';
  finalSync: boolean;
  naive: boolean;
  conflict: 'error' | 'replace' | 'update';
  /** Stop once more documents than this were rejected; -1: never. */
  maxErrors: number;
  rejects?: string;
  resume: boolean;
  checkpoint?: string;
  checkpointMs: number;
  report?: string;
  chart?: string;
  failIf: string[];
  dryRun: boolean;
  format?: Format;
  delimiter?: string;
  csvTypes: CsvTypes;
  progress: 'auto' | 'bar' | 'lines' | 'none';
  /** Secondary indexes built after the load. */
  indexes: IndexOption[];
  /** The embedded engine's memory budget (MiB); undefined: the engine's default. */
  memoryBudgetMb?: number;
  /** rethinkdb:// to a real RethinkDB: shards and replicas of a table the import creates. */
  shards?: number;
  replicas?: number;
  /** rethinkdb:// to a real RethinkDB: the table's write_acks. */
  writeAcks?: 'single' | 'majority';
}

export interface GenOptions {
  count: number;
  size: number;
  out?: string;
  format: 'ndjson' | 'json' | 'csv';
  seed: number;
  /** Put a bad record every N records (for demos of the rejects file); 0: none. */
  badEvery: number;
}

export interface ServeOptions {
  data: string;
  host?: string;
  port?: number;
  driverPort?: number;
  memoryBudgetMb?: number;
  password?: string;
  allowedHosts?: string[];
}

/** `wharf bench`'s options: the suite's (@wharf/bench), the scratch directory as `--dir`. */
export type BenchOptions = Omit<BenchSuiteOptions, 'dataDir' | 'cliBin'> & { dir?: string };

export interface OptionDef<T> {
  /** Long flag without the dashes, e.g. 'batch-size' (a boolean default-true flag: 'no-final-sync'). */
  flag: string;
  key: keyof T & string;
  /** Placeholder of the value, e.g. '<n>'; absent for a boolean flag. */
  arg?: string;
  short?: string;
  description: string;
  /** Converts the text given; throws an Error whose message says what is accepted. */
  parse?: (value: string) => unknown;
  default?: unknown;
  /** How the default is shown in help and docs (when it is not just String(default)). */
  defaultText?: string;
  choices?: readonly string[];
  /** May be given several times; the values are collected in an array. */
  repeatable?: boolean;
  required?: boolean;
}

export interface CommandDef<T> {
  name: string;
  summary: string;
  /** e.g. '<file>' — the first positional argument, stored in `key`; '[files...]' collects every one in `restKey`. */
  argument?: { name: string; key: keyof T & string; restKey?: keyof T & string; description: string };
  options: OptionDef<T>[];
  examples: string[];
}

// ── value parsers ─────────────────────────────────────────────────────────────────────────────

export function parseIntStrict(min: number) {
  return (v: string): number => {
    if (!/^-?\d+$/.test(v.trim())) throw new Error(`expected an integer, got ${JSON.stringify(v)}`);
    const n = Number(v);
    if (n < min) throw new Error(`must be ≥ ${min}, got ${n}`);
    return n;
  };
}

const BYTE_UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  k: 1e3,
  kb: 1e3,
  kib: 1024,
  m: 1e6,
  mb: 1e6,
  mib: 1 << 20,
  g: 1e9,
  gb: 1e9,
  gib: 1 << 30,
};

/** '4MiB', '512k', '1000000' → bytes. */
export function parseBytes(v: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(v);
  const unit = m ? BYTE_UNITS[m[2]!.toLowerCase()] : undefined;
  if (!m || unit === undefined)
    throw new Error(`expected a size such as 4MiB, 512k or 1000000, got ${JSON.stringify(v)}`);
  const n = Math.round(Number(m[1]) * unit);
  if (n < 64) throw new Error(`must be at least 64 bytes, got ${n}`);
  return n;
}

/** '50ms', '1s', '50' (ms) → milliseconds. */
export function parseMs(v: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$/i.exec(v);
  if (!m) throw new Error(`expected a duration such as 50ms or 1s, got ${JSON.stringify(v)}`);
  const f = { ms: 1, s: 1000, m: 60_000 }[(m[2] ?? 'ms').toLowerCase() as 'ms' | 's' | 'm'];
  return Number(m[1]) * f;
}

const INDEX_NAME = /^[A-Za-z0-9_.-]{1,127}$/;

/** 'by_city=address.city', 'by_tag=tags:multi' → an index definition. */
export function parseIndex(v: string): IndexOption {
  const eq = v.indexOf('=');
  if (eq <= 0) throw new Error(`expected name=field or name=field:multi, got ${JSON.stringify(v)}`);
  const name = v.slice(0, eq);
  let field = v.slice(eq + 1);
  let multi = false;
  if (field.endsWith(':multi')) {
    multi = true;
    field = field.slice(0, -':multi'.length);
  }
  if (!INDEX_NAME.test(name))
    throw new Error(`index name must be 1 to 127 letters, digits, '_', '-' or '.', got ${JSON.stringify(name)}`);
  if (!field || field.split('.').some((p) => p.length === 0) || field.includes(':')) {
    throw new Error(
      `expected a field path such as city or address.city after '${name}=', got ${JSON.stringify(v.slice(eq + 1))}`,
    );
  }
  return { name, field, multi };
}

/** An option that takes one of a fixed list of words: its placeholder, its choices (shown in help) and its parser, from the one list. */
function choiceOf<T extends string>(choices: readonly T[]) {
  return {
    arg: `<${choices.join('|')}>`,
    choices,
    parse: (v: string): T => {
      if (!choices.includes(v as T)) throw new Error(`expected one of ${choices.join(', ')}, got ${JSON.stringify(v)}`);
      return v as T;
    },
  };
}

// ── wharf import ──────────────────────────────────────────────────────────────────────────────

export const DEFAULT_TARGET_TEXT = 'embedded:./wharf-data (or $WHARF_TARGET)';

export const importCommand: CommandDef<ImportOptions> = {
  name: 'import',
  summary:
    'Import NDJSON, a JSON array or CSV into a table: batched soft writes, one final sync, per-document latency, a report.',
  argument: {
    name: '[files...]',
    key: 'file',
    restKey: 'files',
    description:
      "Input file, or '-' for standard input. With --job: any number of files and quoted glob patterns, the same on every worker.",
  },
  options: [
    {
      flag: 'table',
      short: 't',
      key: 'table',
      arg: '<name>',
      required: true,
      description: 'Table to load (created if absent). Not needed with --status.',
    },
    {
      flag: 'target',
      key: 'target',
      arg: '<target>',
      description:
        "Where to load: embedded:DIR (the engine in this process), wharf://[:password@]host:port (a Wharf server; the password also from env WHARF_PASSWORD), rethinkdb://[user:pass@]host[:port][,host2…]/db (Wharf's driver port or a RethinkDB cluster).",
      defaultText: DEFAULT_TARGET_TEXT,
    },
    {
      flag: 'primary-key',
      key: 'primaryKey',
      arg: '<field>',
      default: 'id',
      description: 'Primary key of the table when it is created.',
    },
    {
      flag: 'format',
      key: 'format',
      ...choiceOf(['ndjson', 'json', 'csv', 'tsv'] as const),
      arg: '<format>',
      description:
        "Input format. Default: from the extension (.ndjson/.jsonl, .json, .csv, .tsv), refined by the first byte ('[' is a JSON array, '{' NDJSON); required for standard input that starts otherwise.",
    },
    {
      flag: 'shards',
      key: 'shards',
      arg: '<n>',
      parse: parseIntStrict(1),
      description:
        'rethinkdb:// to a real RethinkDB only: shards of the table when the import creates it (1–64). Refused for other targets.',
    },
    {
      flag: 'replicas',
      key: 'replicas',
      arg: '<n>',
      parse: parseIntStrict(1),
      description:
        'rethinkdb:// to a real RethinkDB only: replicas of each shard when the import creates the table (at most the number of servers). Refused for other targets.',
    },
    {
      flag: 'write-acks',
      key: 'writeAcks',
      ...choiceOf(['single', 'majority'] as const),
      description:
        "rethinkdb:// to a real RethinkDB only: the table's write_acks, set before loading (majority: a write is acknowledged once most of its shard's replicas have it, so it survives a node's loss). Refused for other targets.",
    },
    {
      flag: 'memory-budget-mb',
      key: 'memoryBudgetMb',
      arg: '<mib>',
      parse: parseIntStrict(4),
      description:
        "embedded: target only: the engine's memory for memtables and the block cache, in MiB (the engine's default: 256). The import's own memory stays bounded by its batches in flight, whatever the input's size.",
    },
    {
      flag: 'batch-size',
      key: 'batchSize',
      arg: '<n>',
      parse: parseIntStrict(1),
      default: 5000,
      description: 'A batch closes at this many documents…',
    },
    {
      flag: 'batch-bytes',
      key: 'batchBytes',
      arg: '<size>',
      parse: parseBytes,
      defaultText: '4MiB; 900KiB for a rethinkdb:// target with several hosts',
      description:
        '…or at this many bytes… (a RethinkDB cluster takes ~900 KB soft inserts best: each write unit is one insert in flight).',
    },
    {
      flag: 'flush-ms',
      key: 'flushMs',
      arg: '<ms>',
      parse: parseMs,
      default: 50,
      description: '…or this long after its first document, whichever comes first.',
    },
    {
      flag: 'concurrency',
      short: 'c',
      key: 'concurrency',
      arg: '<n>',
      parse: parseIntStrict(1),
      default: 4,
      description:
        'Batches in flight at once, at most (fewer while the target only queues them). Reading waits for a free slot, so memory stays bounded.',
    },
    {
      flag: 'durability',
      key: 'durability',
      ...choiceOf(['soft', 'hard'] as const),
      default: 'soft',
      description:
        'soft: a batch is acknowledged when visible, and one sync at the end makes everything durable. hard: each batch is acknowledged when durable.',
    },
    {
      flag: 'no-final-sync',
      key: 'finalSync',
      default: true,
      description:
        "Skip the final sync (soft writes then reach disk within the engine's flush interval). For comparison only.",
    },
    {
      flag: 'naive',
      key: 'naive',
      default: false,
      description: 'One document per insert, hard durability, one at a time: the newbie load, for comparison.',
    },
    {
      flag: 'conflict',
      key: 'conflict',
      ...choiceOf(['error', 'replace', 'update'] as const),
      default: 'error',
      description:
        'A document whose primary key exists: reject it (error), replace the stored one, or merge into it (update).',
    },
    {
      flag: 'max-errors',
      key: 'maxErrors',
      arg: '<n>',
      parse: parseIntStrict(-1),
      default: 20,
      description: 'Stop once more than this many documents were rejected (-1: never stop).',
    },
    {
      flag: 'rejects',
      key: 'rejects',
      arg: '<file>',
      description:
        'Write every rejected document to this file: one JSON line each with its line number, byte offset, reason and the raw record.',
    },
    {
      flag: 'resume',
      key: 'resume',
      default: false,
      description: 'Continue an interrupted import from its checkpoint: no document twice, none skipped.',
    },
    {
      flag: 'checkpoint',
      key: 'checkpoint',
      arg: '<file>',
      description:
        'The checkpoint file. Default: beside the report (REPORT.checkpoint), else beside an embedded data directory (DIR.TABLE.checkpoint), else ./wharf-import-TABLE.checkpoint.',
    },
    {
      flag: 'checkpoint-ms',
      key: 'checkpointMs',
      arg: '<ms>',
      parse: parseMs,
      default: 1000,
      description:
        'How often the checkpoint moves: a sync of what was written, then its position saved. A resume re-reads at most about this much of the import.',
    },
    {
      flag: 'report',
      key: 'report',
      arg: '<file.json>',
      description: 'Write the JSON report here (schema in apps/cli/README.md).',
    },
    {
      flag: 'chart',
      key: 'chart',
      arg: '<file.html>',
      description: 'Write a self-contained HTML page with throughput and latency percentiles over time.',
    },
    {
      flag: 'fail-if',
      key: 'failIf',
      arg: '<threshold>',
      repeatable: true,
      default: [],
      defaultText: 'none',
      description:
        "A k6-style threshold that must hold at the end, else exit 4: --fail-if 'p99<5ms' fails the run when p99 is not below 5 ms. Metrics: p50 p90 p99 p99.9 max mean final_sync wall rate rejected written read missing stalls retries. Repeatable.",
    },
    {
      flag: 'index',
      key: 'indexes',
      arg: '<name=field[:multi]>',
      parse: parseIndex,
      repeatable: true,
      default: [],
      defaultText: 'none',
      description:
        "A secondary index to build once every document is loaded and synced (one bulk build, not an index update per batch): --index by_city=address.city, or --index by_tag=tags:multi to index each element of an array. The report gives each index's build time. Repeatable.",
    },
    { flag: 'dry-run', key: 'dryRun', default: false, description: 'Parse and validate only; write nothing.' },
    {
      flag: 'delimiter',
      key: 'delimiter',
      arg: '<char>',
      description: "CSV field delimiter. Default: ',' (tab for .tsv).",
    },
    {
      flag: 'csv-types',
      key: 'csvTypes',
      ...choiceOf(['none', 'auto', 'header'] as const),
      default: 'none',
      description:
        'CSV values: none keeps strings; auto infers numbers, booleans and null and drops empty fields; header reads name:type from each header cell (string, number, int, boolean, json, auto).',
    },
    {
      flag: 'job',
      key: 'job',
      arg: '<name>',
      parse: (v: string) => {
        if (!/^[A-Za-z0-9_.-]{1,100}$/.test(v))
          throw new Error(`a job name is 1 to 100 letters, digits, '_', '-' or '.', got ${JSON.stringify(v)}`);
        return v;
      },
      description:
        "Share this import with every process started with the same job name and inputs, on any machine: each task (a file, or --task-bytes of an NDJSON file) goes to one live worker by jump hash; a dead worker's tasks move to the others and continue from their checkpoints. Needs a wharf:// or rethinkdb:// target (the coordination table lives there). Each worker exits when the whole job is done.",
    },
    {
      flag: 'status',
      key: 'status',
      default: false,
      description: "With --job: print the job's tasks (owner, progress, docs), its workers and its docs/s, then exit.",
    },
    { flag: 'json', key: 'json', default: false, description: 'With --status: print JSON.' },
    {
      flag: 'task-bytes',
      key: 'taskBytes',
      arg: '<size>',
      parse: parseBytes,
      default: 64 << 20,
      defaultText: '64MiB',
      description: 'With --job: NDJSON files are cut into tasks of this many bytes (other formats: one task per file).',
    },
    {
      flag: 'heartbeat-ms',
      key: 'heartbeatMs',
      arg: '<ms>',
      parse: parseMs,
      default: 1000,
      description: 'With --job: how often a worker heartbeats and reads the job.',
    },
    {
      flag: 'dead-after-ms',
      key: 'deadAfterMs',
      arg: '<ms>',
      parse: parseMs,
      default: 10_000,
      description:
        'With --job: a worker whose heartbeat has not changed for this long is dead and its tasks move (keep it well above --heartbeat-ms: a live worker taken for dead re-sends what it was loading).',
    },
    {
      flag: 'job-table',
      key: 'jobTable',
      arg: '<name>',
      default: 'wharf_jobs',
      description: 'With --job: the coordination table on the target.',
    },
    {
      flag: 'progress',
      key: 'progress',
      ...choiceOf(['auto', 'bar', 'lines', 'none'] as const),
      default: 'auto',
      description:
        'Progress on stderr: a live line on a terminal (bar), a YCSB-style line every 10 s otherwise (lines).',
    },
  ],
  examples: [
    'wharf import people.ndjson --table people',
    'wharf gen --count 1000000 | wharf import - --table bench --report report.json --chart report.html',
    'wharf import orders.csv -t orders --csv-types auto --rejects rejects.ndjson --max-errors 100',
    "wharf import big.json -t t --target wharf://127.0.0.1:8080 --fail-if 'p99<50ms' --fail-if 'rejected==0'",
    'wharf import big.ndjson -t t --resume',
    'wharf import people.ndjson -t people --index by_city=address.city --index by_tag=tags:multi',
    "wharf import 'logs/*.ndjson' -t logs --target wharf://10.0.0.5:8080 --job nightly   # on every loader machine",
    'wharf import --job nightly --status --target wharf://10.0.0.5:8080',
  ],
};

// ── wharf gen ─────────────────────────────────────────────────────────────────────────────────

export const genCommand: CommandDef<GenOptions> = {
  name: 'gen',
  summary: 'Write YCSB-like documents (an id and 10 string fields) for demos and benchmarks.',
  options: [
    {
      flag: 'count',
      short: 'n',
      key: 'count',
      arg: '<n>',
      parse: parseIntStrict(0),
      required: true,
      description: 'Number of documents.',
    },
    {
      flag: 'size',
      key: 'size',
      arg: '<bytes>',
      parse: parseBytes,
      default: 1000,
      description: 'Approximate size of each document (YCSB: 10 fields of 100 bytes).',
    },
    { flag: 'out', short: 'o', key: 'out', arg: '<file>', description: 'Write here instead of standard output.' },
    {
      flag: 'format',
      key: 'format',
      ...choiceOf(['ndjson', 'json', 'csv'] as const),
      default: 'ndjson',
      description: 'Output format.',
    },
    {
      flag: 'seed',
      key: 'seed',
      arg: '<n>',
      parse: parseIntStrict(0),
      default: 1,
      description: 'Random seed: the same seed gives the same documents.',
    },
    {
      flag: 'bad-every',
      key: 'badEvery',
      arg: '<n>',
      parse: parseIntStrict(0),
      default: 0,
      description: 'Make every n-th record invalid (to try the rejects file). 0: none.',
    },
  ],
  examples: ['wharf gen --count 100000 > ycsb.ndjson', 'wharf gen -n 1000 --format csv -o sample.csv'],
};

// ── wharf serve ───────────────────────────────────────────────────────────────────────────────

export const serveCommand: CommandDef<ServeOptions> = {
  name: 'serve',
  summary:
    'Run a Wharf server (HTTP API, ws ingest, RethinkDB driver port) over a data directory (needs @wharf/server).',
  options: [
    { flag: 'data', short: 'd', key: 'data', arg: '<dir>', default: './wharf-data', description: 'Data directory.' },
    {
      flag: 'host',
      key: 'host',
      arg: '<addr>',
      description:
        'Interface to listen on (server default: 127.0.0.1). Beyond loopback (e.g. 0.0.0.0) a password is required.',
    },
    {
      flag: 'password',
      key: 'password',
      arg: '<text>',
      defaultText: 'env WHARF_PASSWORD, else none',
      description:
        "The admin password: the driver port's admin user, and HTTP and ws (Authorization: Bearer). Prefer the env variable (a flag shows in the process list). Without one, only loopback clients are served.",
    },
    {
      flag: 'allowed-host',
      key: 'allowedHosts',
      arg: '<name>',
      repeatable: true,
      defaultText: 'env WHARF_ALLOWED_HOSTS',
      description:
        "A Host name to answer besides localhost, IP literals and this machine's name (DNS-rebinding guard); * for any. Repeatable.",
    },
    {
      flag: 'port',
      short: 'p',
      key: 'port',
      arg: '<port>',
      parse: parseIntStrict(0),
      description: 'HTTP and ws port (server default: 8080).',
    },
    {
      flag: 'driver-port',
      key: 'driverPort',
      arg: '<port>',
      parse: parseIntStrict(0),
      description: 'RethinkDB driver port (server default: 28015).',
    },
    {
      flag: 'memory-budget-mb',
      key: 'memoryBudgetMb',
      arg: '<mib>',
      parse: parseIntStrict(4),
      description:
        'Engine memory for memtables and the block cache, in MiB (server default: 256). Tables may be far larger.',
    },
  ],
  examples: ['wharf serve --data ./wharf-data --port 8080', 'wharf serve --data ./big --memory-budget-mb 1024'],
};

// ── wharf bench ───────────────────────────────────────────────────────────────────────────────

export const benchCommand: CommandDef<BenchOptions> = {
  name: 'bench',
  summary:
    "Benchmarks on this disk, each figure a ratio to a reference run interleaved with it (A B A B …, median of the rounds' ratios): the fdatasync limit, seed 000's sequential hard inserts (Wharf, SQLite, PostgreSQL), group commit, bulk loads, `wharf import` against DuckDB and over the network, a sustained import, 8-byte key/value puts, ReQL queries on 1M documents against RethinkDB. A scenario whose reference is not installed (@wharf/engine, @wharf/server, better-sqlite3, pg, @duckdb/node-api, RethinkDB) is skipped with one line saying what to install (docs/BENCHMARKS.md).",
  argument: {
    name: '<scenario>',
    key: 'scenario',
    description: `One of ${SCENARIOS.join(', ')}; several separated by commas; or all.`,
  },
  options: [
    {
      flag: 'quick',
      key: 'quick',
      default: false,
      description:
        'Smaller runs (3 rounds, 100k bulk documents, 200k import documents, 100 blocks, 1-minute sustained import, 10M/1M kv puts, 100k reql documents): all of them in under 10 minutes.',
    },
    {
      flag: 'out',
      short: 'o',
      key: 'out',
      arg: '<dir>',
      defaultText: './results/bench-<timestamp>',
      description: 'Results folder: results.json and the self-contained report.html.',
    },
    {
      flag: 'dir',
      key: 'dir',
      arg: '<dir>',
      defaultText: '<out>/data',
      description: 'Scratch directory for the data, on the disk to measure (removed at the end unless given).',
    },
    {
      flag: 'rounds',
      key: 'rounds',
      arg: '<n>',
      parse: parseIntStrict(3),
      defaultText: '5 (quick: 3)',
      description: 'Interleaved rounds per measurement (at least 3).',
    },
    {
      flag: 'minutes',
      key: 'minutes',
      arg: '<n>',
      parse: (v: string) => {
        const n = Number(v);
        if (!(n > 0)) throw new Error(`expected a positive number of minutes, got ${JSON.stringify(v)}`);
        return n;
      },
      defaultText: '10 (quick: 1)',
      description: 'sustained: how long the import runs.',
    },
    {
      flag: 'memory-budget-mb',
      key: 'memoryBudgetMb',
      arg: '<mib>',
      parse: parseIntStrict(4),
      defaultText: '64',
      description: "sustained: the engine's memory budget, in MiB (the import writes many times more).",
    },
    {
      flag: 'docs',
      key: 'docs',
      arg: '<n>',
      parse: parseIntStrict(1),
      defaultText: '1000000 (quick: 100000)',
      description: 'bulk, import, job and reql: documents (reql: the documents queried, loaded into both systems).',
    },
    {
      flag: 'blocks',
      key: 'blocks',
      arg: '<n>',
      parse: parseIntStrict(1),
      defaultText: '10000 (quick: 100)',
      description: 'bulk: blocks of ~900 KB (seed 002).',
    },
    {
      flag: 'kv-puts',
      key: 'kvPuts',
      arg: '<n>',
      parse: parseIntStrict(10_000),
      defaultText: '100000000 (quick: 10000000)',
      description: 'kv: puts through the Rust core (cargo example kv).',
    },
    {
      flag: 'kv-js-puts',
      key: 'kvJsPuts',
      arg: '<n>',
      parse: parseIntStrict(10_000),
      defaultText: '10000000 (quick: 1000000)',
      description: 'kv: puts through the JS API.',
    },
    {
      flag: 'fsync-loop',
      key: 'fsyncLoop',
      ...choiceOf(['rust', 'node'] as const),
      defaultText: 'rust in a clone with cargo, else node',
      description:
        "The raw fdatasync loop every ratio is taken to: the Rust core's examples/fsync_limit.rs (built with cargo), or the same write + fdatasync calls from Node.",
    },
  ],
  examples: [
    'wharf bench all --quick',
    'wharf bench seed000',
    'wharf bench bulk,sustained --minutes 3 --out results/disk-a',
  ],
};
