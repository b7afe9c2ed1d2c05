/**
 * `wharf import`: the programmatic API the CLI calls. Reads the input in chunks, parses records
 * (formats/), hands them to the loader with their line and end offset, waits when the loader says
 * so (bounded memory), writes rejects in input order, keeps the resume checkpoint, and ends with
 * a summary, a JSON report, an optional chart and an exit status that never claims success when
 * documents written ≠ documents read − rejected.
 */
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import {
  createLoader,
  type DocumentError,
  type DocumentInput,
  exitCodeOf,
  type Loader,
  LoaderError,
  type LoadSummary,
  loadEngine,
  parseTarget,
  redact,
  resolveLoaderOptions,
} from '@wharf/client';
import type { ImportOptions } from '../../options.js';
import { writeChart } from './chart.js';
import {
  CsvError,
  CsvParser,
  detectFormat,
  type Emit,
  type EmitBlock,
  type Format,
  type FormatParser,
  JsonArrayError,
  JsonArrayParser,
  loadNativeCsv,
  NdjsonParser,
  type StartAt,
} from './formats/index.js';
import { openImportRun } from './history.js';
import { Progress } from './progress.js';
import { RejectsFile } from './rejects.js';
import { EXIT, figuresOf, type ImportReport, type ImportStatus, summaryText, writeReport } from './report.js';
import { type Checkpoint, CheckpointWriter, canResumeFrom, defaultCheckpointPath, readCheckpoint } from './resume.js';
import { openInput } from './source.js';
import { evaluateThresholds, parseThreshold, type Threshold } from './thresholds.js';

export interface ImportIo {
  stdin: Readable;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  /** Whether stderr is a terminal (live progress line). */
  isTTY: boolean;
  /** Aborted on Ctrl-C: reading stops, what was read is finished, the checkpoint is kept. */
  signal?: AbortSignal;
}

export interface ImportOutcome {
  exitCode: number;
  report: ImportReport;
}

/**
 * One task of a job (job.ts): a byte range of the input, resumed from the coordination table's
 * checkpoint instead of a file, its progress written back there, its rejects appended to the
 * worker's file. Lines are counted from the range's first byte.
 */
export interface ImportTask {
  /** Record-aligned byte range [start, end) of the input. */
  range: { start: number; end: number };
  resume: { low: Checkpoint['low']; high: { offset: number } } | null;
  /** Progress to record: durable means every record before `low.offset` is on disk. */
  progress(low: Checkpoint['low'], docsPerSec: number, durable: boolean): void;
  /** Resolves once the furthest offset the task may send is recorded as ≥ `offset`. */
  reserve(offset: number): Promise<void>;
  rejects: RejectsFile | null;
  signal: AbortSignal;
}

/** A bad command line (exit 2): the catalogue's WHARF_ERR_USAGE. */
class UsageError extends Error {
  readonly code = 'WHARF_ERR_USAGE';
}

const FIRST_REJECTS_KEPT = 10;

/**
 * A primary-key value as the engine (and RethinkDB) takes it: a string, a finite number, a
 * boolean, an array of keys, or a time or binary value.
 */
function isKeyValue(v: unknown): boolean {
  if (typeof v === 'string' || typeof v === 'boolean') return true;
  if (typeof v === 'number') return Number.isFinite(v);
  if (Array.isArray(v)) return v.every(isKeyValue);
  if (v === null || typeof v !== 'object') return false;
  const type = (v as Record<string, unknown>).$reql_type$;
  return type === 'TIME' || type === 'BINARY';
}

/** The primary-key check of --dry-run (the engine's rule, isKeyValue). */
function validate(doc: DocumentInput, primaryKey: string): string | null {
  let value: unknown = doc;
  if (typeof doc === 'string' || doc instanceof Uint8Array) {
    try {
      value = JSON.parse(typeof doc === 'string' ? doc : Buffer.from(doc).toString('utf8'));
    } catch (err) {
      return `invalid JSON: ${(err as Error).message}`;
    }
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'a document must be a JSON object';
  const key = (value as Record<string, unknown>)[primaryKey];
  if (key !== undefined && !isKeyValue(key)) {
    return `primary key ${JSON.stringify(primaryKey)} must be a string, a number, a boolean, an array of keys, a time or binary`;
  }
  return null;
}

function makeParser(format: Format, o: ImportOptions, start: StartAt, header?: string[]): FormatParser {
  switch (format) {
    case 'ndjson':
      return new NdjsonParser(start);
    case 'json':
      return new JsonArrayParser(start);
    case 'csv':
    case 'tsv':
      return new CsvParser(
        { delimiter: o.delimiter ?? (format === 'tsv' ? '\t' : ','), types: o.csvTypes, header },
        start,
      );
  }
}

export async function runImport(o: ImportOptions, io: ImportIo, task?: ImportTask): Promise<ImportOutcome> {
  const startedAt = new Date().toISOString();
  let thresholds: Threshold[];
  try {
    if (o.file === undefined) throw new Error("missing the input: a file, or '-' for standard input");
    if ((o.files?.length ?? 1) > 1) throw new Error('several inputs are one job: give it a name with --job NAME');
    if (o.status) throw new Error('--status shows a job: give its name with --job NAME');
    thresholds = o.failIf.map(parseThreshold);
    const kind = parseTarget(o.target).kind;
    const cluster = [
      ['--shards', o.shards],
      ['--replicas', o.replicas],
      ['--write-acks', o.writeAcks],
    ].filter(([, v]) => v !== undefined);
    if (cluster.length > 0 && kind !== 'rethinkdb')
      throw new Error(
        `${cluster.map(([f]) => f).join(', ')}: only for a rethinkdb:// target (a real RethinkDB), not ${redact(o.target)}`,
      );
    if (o.resume && o.file === '-' && !o.format) throw new Error('--resume from standard input needs --format');
  } catch (err) {
    throw new UsageError((err as Error).message);
  }

  // ── input and format ──────────────────────────────────────────────────────────────────────
  // Without @wharf/engine an embedded import can do nothing: say what to install, write nothing.
  if (!o.dryRun && parseTarget(o.target).kind === 'embedded') await loadEngine();
  const source = openInput(o.file, io.stdin);
  const head = await source.head();
  const format = detectFormat(source.path, head, o.format);
  // CSV through @wharf/engine's transcoder when it is installed (csv-parse otherwise).
  if (format === 'csv' || format === 'tsv') await loadNativeCsv();

  // ── checkpoint ────────────────────────────────────────────────────────────────────────────
  const checkpointPath =
    o.dryRun || task
      ? null
      : resolve(o.checkpoint ?? defaultCheckpointPath({ report: o.report, target: o.target, table: o.table }));
  // The files this import writes may lie in directories that do not exist yet: the engine
  // creates its data directory, but the checkpoint beside it is opened before the engine is.
  for (const file of [checkpointPath, o.rejects, o.report, o.chart]) {
    if (file) mkdirSync(dirname(resolve(file)), { recursive: true });
  }
  const inputPath = source.path === null ? null : resolve(source.path);
  let previous: Pick<Checkpoint, 'low' | 'high' | 'complete'> | null = task?.resume
    ? {
        low: task.resume.low,
        high: { offset: task.resume.high.offset, docs: task.resume.low.docs },
        complete: false,
      }
    : null;
  if (o.resume && checkpointPath) {
    const fromFile = readCheckpoint(checkpointPath);
    previous = fromFile;
    if (!fromFile) {
      io.stderr.write(`wharf import: no checkpoint at ${checkpointPath}; starting from the beginning\n`);
    } else {
      const mismatch =
        fromFile.table !== o.table
          ? `table ${fromFile.table}`
          : fromFile.target !== redact(o.target)
            ? `target ${fromFile.target}`
            : fromFile.input.path !== inputPath
              ? `input ${fromFile.input.path ?? '-'}`
              : fromFile.format !== format
                ? `format ${fromFile.format}`
                : null;
      if (mismatch)
        throw new UsageError(
          `checkpoint ${checkpointPath} belongs to another import (${mismatch}); use --checkpoint FILE or start without --resume`,
        );
      if (source.size !== null && source.size < fromFile.low.offset) {
        throw new UsageError(
          `the input is ${source.size} bytes, shorter than the checkpoint's resume point (byte ${fromFile.low.offset}): it is not the same input`,
        );
      }
    }
  }
  const base = previous
    ? {
        offset: previous.low.offset,
        docs: previous.low.docs,
        written: previous.low.written,
        rejected: previous.low.rejected,
        present: previous.low.present,
      }
    : { offset: task?.range.start ?? 0, docs: 0, written: 0, rejected: 0, present: 0 };
  if (task) base.offset = Math.max(base.offset, task.range.start);
  const replayUntil = previous ? previous.high.offset : -1;

  // Bytes before the resume point: count lines, and read the CSV header there.
  let startLine = task ? (previous?.low.lastLine ?? 0) + 1 : 1;
  let header: string[] | undefined;
  if (base.offset > 0 && !task) {
    const headerParser =
      format === 'csv' || format === 'tsv' ? makeParser(format, o, { offset: 0, line: 1, resumed: false }) : null;
    let headerDone = false;
    await source.prefix(base.offset, (chunk) => {
      for (let i = chunk.indexOf(0x0a); i !== -1; i = chunk.indexOf(0x0a, i + 1)) startLine++;
      if (headerParser && !headerDone) {
        try {
          headerParser.feed(chunk, () => {
            headerDone = true;
          });
        } catch {
          // the header is read; what follows it in this prefix may be cut mid-record
        }
        if ((headerParser as CsvParser).header) headerDone = true;
      }
    });
    if (headerParser) header = (headerParser as CsvParser).header ?? undefined;
    if (headerParser && !header) throw new Error('cannot read the CSV header before the resume point');
  }
  const start: StartAt = { offset: base.offset, line: startLine, resumed: base.offset > 0 };

  if (previous?.complete) {
    const report = emptyReport();
    report.status = 'ok';
    report.documents = {
      read: base.docs,
      written: base.written,
      rejected: base.rejected,
      present: base.present,
      missing: 0,
    };
    report.exitCode = base.rejected > 0 ? EXIT.rejects : EXIT.ok;
    report.status = base.rejected > 0 ? 'rejects' : 'ok';
    io.stdout.write(
      `wharf import: ${inputPath ?? '-'} was already imported completely (checkpoint ${checkpointPath}); nothing to do\n`,
    );
    return { exitCode: report.exitCode, report };
  }

  // ── rejects and checkpoint writers ────────────────────────────────────────────────────────
  const rejects = task
    ? task.rejects
    : o.rejects
      ? new RejectsFile(o.rejects, previous ? base.rejected : undefined)
      : null;
  const firstRejects: DocumentError[] = [];
  const clear = io.isTTY ? '\r\x1b[2K' : ''; // erase the progress line first
  let printedRejects = 0;
  const onDocumentError = (e: DocumentError) => {
    rejects?.write(e);
    if (firstRejects.length < FIRST_REJECTS_KEPT) firstRejects.push(e);
    if (!rejects && printedRejects < FIRST_REJECTS_KEPT) {
      printedRejects++;
      io.stderr.write(`${clear}wharf import: rejected line ${e.line ?? '?'}: ${e.reason.slice(0, 300)}\n`);
    }
  };

  const checkpoint = checkpointPath ? new CheckpointWriter(checkpointPath) : null;
  let loader: Loader | null = null;
  const docsPerSec = () => {
    const p = loader?.progress();
    return p && p.elapsedSeconds > 0 ? Math.round(p.written / p.elapsedSeconds) : 0;
  };
  const state: Checkpoint = {
    version: 1,
    input: { path: inputPath, size: source.size },
    target: redact(o.target),
    table: o.table,
    format,
    low: {
      offset: base.offset,
      lastLine: previous?.low.lastLine ?? null,
      docs: base.docs,
      written: base.written,
      rejected: base.rejected,
      present: base.present,
    },
    high: previous ? { ...previous.high } : { offset: base.offset, docs: 0 },
    rejects: o.rejects ? resolve(o.rejects) : null,
    complete: false,
    updatedAt: new Date().toISOString(),
  };
  const saveCheckpoint = (sync: boolean) => {
    if (task) task.progress(state.low, docsPerSec(), sync);
    if (!checkpoint) return;
    state.updatedAt = new Date().toISOString();
    checkpoint.write(state, sync);
  };
  saveCheckpoint(true);

  // ── the loader (or the dry-run validator) ─────────────────────────────────────────────────
  const dry = { read: 0, rejected: 0 };
  const dryStart = performance.now();
  if (!o.dryRun) {
    loader = createLoader({
      target: o.target,
      table: o.table,
      ...(o.memoryBudgetMb !== undefined ? { engineOptions: { memoryBudget: o.memoryBudgetMb * 1024 * 1024 } } : {}),
      primaryKey: o.primaryKey,
      batchSize: o.batchSize,
      ...(o.batchBytes !== undefined ? { batchBytes: o.batchBytes } : {}),
      flushMs: o.flushMs,
      checkpointMs: o.checkpointMs,
      concurrency: o.concurrency,
      durability: o.durability,
      finalSync: o.finalSync,
      naive: o.naive,
      conflict: o.conflict,
      maxErrors: o.maxErrors < 0 ? undefined : o.maxErrors,
      indexes: o.indexes ?? [],
      tableOptions: {
        ...(o.shards !== undefined ? { shards: o.shards } : {}),
        ...(o.replicas !== undefined ? { replicas: o.replicas } : {}),
        ...(o.writeAcks !== undefined ? { writeAcks: o.writeAcks } : {}),
      },
      onDocumentError,
      onDispatch: (high) => {
        if (high.offset !== undefined && high.offset > state.high.offset) {
          state.high = { offset: high.offset, docs: base.docs + high.seq };
          saveCheckpoint(false);
        }
      },
      onCheckpoint: (mark, durable) => {
        if (mark.offset !== undefined && mark.seq > 0) {
          state.low = {
            offset: mark.offset,
            lastLine: mark.line ?? null,
            docs: base.docs + mark.seq,
            written: base.written + mark.written,
            rejected: base.rejected + mark.rejected,
            present: base.present + mark.present,
          };
        }
        saveCheckpoint(durable);
      },
      onRetry: (err, attempt, delay) => {
        io.stderr.write(
          `${clear}wharf import: retry ${attempt} in ${Math.round(delay)} ms after: ${(err as Error).message}\n`,
        );
      },
    });
  }

  // Open the target (and create the table) before reading, so latency is not charged for it.
  let openError: { code: string; message: string } | null = null;
  if (loader) {
    try {
      await loader.ready();
    } catch (err) {
      openError = { code: (err as { code?: string }).code ?? 'WHARF_ERR_INTERNAL', message: (err as Error).message };
    }
  }

  const historyRun =
    loader && !openError && !task
      ? await openImportRun(o.target, {
          table: o.table,
          file: inputPath,
          format,
          bytes: source.size,
          durability: o.naive ? 'hard' : o.durability,
          conflict: o.conflict,
        })
      : null;

  let bytesDone = base.offset;
  let mustWait = false;
  const emit: Emit = (doc, line, endOffset, error, raw) => {
    if (loader) {
      const meta = { line, offset: endOffset, replay: endOffset <= replayUntil };
      const ok = doc === null ? loader.reject(error!, { ...meta, raw }) : loader.push(doc, meta);
      if (!ok) mustWait = true;
      return ok; // false: the parser pauses after this record until the loader has room
    }
    dry.read++;
    const why = doc === null ? error! : validate(doc, o.primaryKey);
    if (why) {
      dry.rejected++;
      const e: DocumentError = { seq: dry.read - 1, line, offset: endOffset, kind: 'invalid', reason: why };
      if (doc === null) e.raw = raw;
      else
        e.raw =
          typeof doc === 'string'
            ? doc
            : doc instanceof Uint8Array
              ? Buffer.from(doc).toString('utf8')
              : JSON.stringify(doc);
      onDocumentError(e);
    }
  };

  // NDJSON and JSON arrays go to the loader as blocks of records (no object or call per record).
  const pushBlock = (
    bytes: Buffer,
    docs: number,
    line: number,
    offset: number,
    lineStep: 0 | 1,
    endOfDoc: 'newline' | 'value',
    replay: boolean,
  ): boolean => loader!.pushBlock(bytes, docs, { line, offset, lineStep, endOfDoc, replay });
  const emitBlock: EmitBlock | undefined =
    loader && (format === 'ndjson' || format === 'json')
      ? (bytes, docs, line, endOffset, lineStep, endOfDoc) => {
          let ok: boolean;
          const start = endOffset - bytes.length; // a block holds the input's bytes one for one
          if (endOffset <= replayUntil || docs === 1 || start >= replayUntil) {
            ok = pushBlock(bytes, docs, line, endOffset, lineStep, endOfDoc, endOffset <= replayUntil);
          } else {
            // The resume re-sends what the last run may have written: the block's part up to the
            // old high-water mark (a record's end) is a replay, the rest is not.
            const nl = bytes.indexOf(0x0a, Math.max(0, replayUntil - start - 1));
            if (nl === -1) ok = pushBlock(bytes, docs, line, endOffset, lineStep, endOfDoc, true);
            else {
              const head = bytes.subarray(0, nl + 1);
              let headDocs = 0;
              for (let i = head.indexOf(0x0a); i !== -1; i = head.indexOf(0x0a, i + 1)) headDocs++;
              pushBlock(head, headDocs, line, replayUntil, lineStep, endOfDoc, true);
              ok =
                headDocs >= docs ||
                pushBlock(
                  bytes.subarray(nl + 1),
                  docs - headDocs,
                  line + headDocs * lineStep,
                  endOffset,
                  lineStep,
                  endOfDoc,
                  false,
                );
            }
          }
          if (!ok) mustWait = true;
          return ok;
        }
      : undefined;

  const progressMode = o.progress === 'auto' ? (io.isTTY ? 'bar' : 'lines') : o.progress;
  const progress =
    loader && progressMode !== 'none' && !task
      ? new Progress({
          loader,
          out: io.stderr,
          tty: progressMode === 'bar',
          totalBytes: source.size,
          bytesDone: () => bytesDone,
          base: { read: base.docs, rejected: base.rejected },
        })
      : null;
  progress?.start();

  // ── read ──────────────────────────────────────────────────────────────────────────────────
  const parser = makeParser(format, o, start, header);
  let inputError: { message: string; line?: number } | null = null;
  let interrupted = false;
  let inputDone = false;
  try {
    if (openError) throw new LoaderError(openError.code, openError.message);
    let reserved = -1;
    reading: for await (const chunk of source.chunks(base.offset, task?.range.end)) {
      if (task && bytesDone + chunk.length > reserved) {
        await task.reserve(bytesDone + chunk.length);
        reserved = bytesDone + chunk.length;
      }
      // Backpressure per record: the parser stops after a record the loader had no room for.
      let off = 0;
      for (;;) {
        const used = parser.feed(off === 0 ? chunk : chunk.subarray(off), emit, emitBlock);
        off += used;
        bytesDone += used;
        if (mustWait) {
          mustWait = false;
          await loader!.whenWritable();
        }
        if (io.signal?.aborted || task?.signal.aborted) {
          interrupted = true;
          break reading;
        }
        if (off >= chunk.length && !parser.pending) break;
      }
    }
    if (!interrupted) {
      parser.end(emit, emitBlock);
      inputDone = true;
    }
  } catch (err) {
    if (err instanceof JsonArrayError || err instanceof CsvError) inputError = { message: err.message, line: err.line };
    else if (err instanceof LoaderError) {
      // the loader failed (max errors, a fatal target error): end() reports it
    } else inputError = { message: (err as Error).message };
  }

  // ── finish ────────────────────────────────────────────────────────────────────────────────
  let summary: LoadSummary | null = null;
  let loadError: { code: string; message: string } | null = null;
  if (loader) {
    try {
      summary = await loader.end();
    } catch (err) {
      if (err instanceof LoaderError && err.summary) {
        summary = err.summary;
        loadError = summary.error ?? { code: String(err.code), message: err.message };
      } else {
        loadError = { code: (err as { code?: string }).code ?? 'WHARF_ERR_INTERNAL', message: (err as Error).message };
      }
    }
  }
  progress?.stop();
  if (!task) rejects?.close();

  const report = emptyReport();
  report.startedAt = startedAt;
  report.format = format;
  report.dryRun = o.dryRun;
  report.input = { path: inputPath, bytes: source.size, bytesRead: bytesDone - base.offset };
  report.resumed = previous
    ? {
        fromOffset: base.offset,
        fromLine: startLine,
        documentsBefore: base.docs,
        resent: Math.max(0, previous.high.docs - base.docs),
      }
    : null;
  if (summary) {
    Object.assign(report, figuresOf(summary));
    report.indexes = summary.indexes ?? [];
    report.indexBuildMs = summary.indexBuildMs ?? null;
    report.run = {
      read: summary.documents.read,
      written: summary.documents.written,
      rejected: summary.documents.rejected,
    };
    report.documents = {
      read: base.docs + summary.documents.read,
      written: base.written + summary.documents.written,
      rejected: base.rejected + summary.documents.rejected,
      present: base.present + summary.documents.present,
      missing: summary.documents.missing,
    };
  } else if (o.dryRun) {
    const wall = (performance.now() - dryStart) / 1000;
    report.wallSeconds = Math.round(wall * 1000) / 1000;
    report.docsPerSec = wall > 0 ? Math.round(dry.read / wall) : 0;
    report.run = { read: dry.read, written: 0, rejected: dry.rejected };
    report.documents = { read: dry.read, written: 0, rejected: dry.rejected, present: 0, missing: 0 };
  } else {
    report.documents.missing = 0;
  }
  report.rejects = {
    file: o.rejects ? resolve(o.rejects) : null,
    count: report.documents.rejected,
    first: firstRejects,
  };
  report.thresholds = o.dryRun ? [] : evaluateThresholds(thresholds, report);

  const consistent = report.documents.written === report.documents.read - report.documents.rejected;
  let status: ImportStatus;
  if (inputError || loadError || (!o.dryRun && !consistent)) status = 'failed';
  else if (interrupted) status = 'interrupted';
  else if (o.dryRun) status = 'dry-run';
  else if (report.thresholds.some((t) => !t.ok)) status = 'thresholds';
  else if (report.documents.rejected > 0) status = 'rejects';
  else status = 'ok';
  report.status = status;
  report.ok = status === 'ok' || status === 'rejects' || (status === 'dry-run' && report.documents.rejected === 0);
  report.error = inputError
    ? {
        code: 'WHARF_ERR_BAD_INPUT',
        message: inputError.message,
        ...(inputError.line ? { line: inputError.line } : {}),
      }
    : loadError
      ? loadError
      : !o.dryRun && !consistent
        ? {
            code: 'WHARF_ERR_INCOMPLETE',
            message: `written ${report.documents.written} ≠ read ${report.documents.read} − rejected ${report.documents.rejected}`,
          }
        : null;
  report.exitCode =
    status === 'failed'
      ? exitCodeOf(report.error?.code)
      : status === 'interrupted'
        ? EXIT.interrupted
        : status === 'thresholds'
          ? EXIT.thresholds
          : status === 'rejects' || (status === 'dry-run' && report.documents.rejected > 0)
            ? EXIT.rejects
            : EXIT.ok;

  // The checkpoint is complete only when the whole input was read and every document has an outcome.
  if (checkpoint || task) {
    state.complete = inputDone && status !== 'failed' && status !== 'interrupted';
    saveCheckpoint(true);
  }
  checkpoint?.close();
  report.checkpoint = {
    path: checkpointPath,
    complete: state.complete,
    resumable: checkpointPath !== null && canResumeFrom(checkpointPath),
  };
  for (const note of (report.engine as { openNotes?: string[] } | null)?.openNotes ?? [])
    io.stderr.write(`wharf import: note: ${note}\n`);
  report.memory = { peakRssMB: Math.round(process.resourceUsage().maxRSS / 1024) };
  report.finishedAt = new Date().toISOString();
  report.target = redact(o.target);
  report.table = o.table;
  report.options = {
    primaryKey: o.primaryKey,
    batchSize: o.naive ? 1 : o.batchSize,
    batchBytes: resolveLoaderOptions({ table: o.table, target: o.target, batchBytes: o.batchBytes }).batchBytes,
    flushMs: o.naive ? 0 : o.flushMs,
    concurrency: o.naive ? 1 : o.concurrency,
    durability: o.naive ? 'hard' : o.durability,
    finalSync: o.finalSync,
    naive: o.naive,
    conflict: o.conflict,
    maxErrors: o.maxErrors < 0 ? null : o.maxErrors,
    ...(o.shards !== undefined ? { shards: o.shards } : {}),
    ...(o.replicas !== undefined ? { replicas: o.replicas } : {}),
    ...(o.writeAcks !== undefined ? { writeAcks: o.writeAcks } : {}),
  };

  if (task) return { exitCode: report.exitCode, report };
  if (o.report) writeReport(o.report, report);
  if (o.chart) writeChart(o.chart, report);
  await historyRun?.finish(report);
  io.stdout.write(summaryText(report));
  return { exitCode: report.exitCode, report };
}

function emptyReport(): ImportReport {
  const zeroLatency = { count: 0, p50: 0, p90: 0, p99: 0, 'p99.9': 0, max: 0, mean: 0 };
  return {
    version: 1,
    status: 'failed',
    ok: false,
    exitCode: EXIT.failed,
    startedAt: new Date().toISOString(),
    finishedAt: new Date().toISOString(),
    target: '',
    table: '',
    format: '',
    dryRun: false,
    input: { path: null, bytes: null, bytesRead: 0 },
    resumed: null,
    options: {
      primaryKey: 'id',
      batchSize: 0,
      batchBytes: 0,
      flushMs: 0,
      concurrency: 0,
      durability: 'soft',
      finalSync: true,
      naive: false,
      conflict: 'error',
      maxErrors: null,
    },
    failover: null,
    documents: { read: 0, written: 0, rejected: 0, present: 0, missing: 0 },
    run: { read: 0, written: 0, rejected: 0 },
    wallSeconds: 0,
    docsPerSec: 0,
    latencyMs: zeroLatency,
    batchLatencyMs: zeroLatency,
    finalSyncMs: null,
    batches: 0,
    retries: 0,
    intervalMs: 1000,
    intervals: [],
    intervals10s: [],
    zeroIntervals: 0,
    engine: null,
    indexes: [],
    indexBuildMs: null,
    thresholds: [],
    rejects: { file: null, count: 0, first: [] },
    checkpoint: { path: null, complete: false, resumable: false },
    memory: { peakRssMB: 0 },
    error: null,
  };
}

export { UsageError };
