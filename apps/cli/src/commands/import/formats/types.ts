/**
 * A format parser turns input bytes into documents, push-style: `feed` each chunk, then `end`.
 * For every document (or bad record) it calls `emit` once, in input order, with the record's
 * first line (1-based) and the byte offset just past it: resuming at that offset continues with
 * the next record. When `emit` returns false the parser stops after that record and `feed`
 * returns the bytes it consumed: the caller waits (backpressure), then feeds the rest. A chunk's
 * memory is read into again once the next chunk has been fed: a parser copies what it keeps.
 *
 * Given an `EmitBlock` as well, a parser that can (NDJSON, JSON array) hands over runs of whole
 * records at once instead ("blocks", e.g. a chunk cut after its last newline): no per-record call
 * or object. Records it cannot put in a block (a rejected one, a record cut by a chunk boundary)
 * still go through `emit`, in input order.
 */
import type { DocumentInput } from '@wharf/client';

export type Emit = (
  doc: DocumentInput | null,
  line: number,
  endOffset: number,
  /** Set when the record cannot be a document (doc is null). */
  error?: string,
  /** The record's text, for the rejects file (only given with `error`). */
  raw?: string,
) => boolean | void;

/**
 * A block of `docs` documents: one per line of `bytes`, each line ending with '\n' (the last may
 * lack it), no blank lines; the bytes are the input's one for one (a JSON array's commas become
 * blanks or newlines). `line` is the first document's line, `lineStep` the lines from one
 * document to the next (1, or 0 when all are on one input line), `endOffset` the offset just past
 * the last document, `endOfDoc` where a document's end offset lies (see @wharf/client BlockMeta).
 * `bytes` may be a view of the chunk being fed: the callee copies what it keeps.
 */
export type EmitBlock = (
  bytes: Buffer,
  docs: number,
  line: number,
  endOffset: number,
  lineStep: 0 | 1,
  endOfDoc: 'newline' | 'value',
) => boolean | void;

export interface FormatParser {
  /**
   * Parses records from `chunk` until it ends or `emit` (or `emitBlock`) returns false; returns
   * bytes consumed. Parsers without a block path ignore `emitBlock`.
   */
  feed(chunk: Buffer, emit: Emit, emitBlock?: EmitBlock): number;
  /** True while parsed records wait to be emitted (feed an empty chunk to continue). */
  readonly pending: boolean;
  /** The input ended: emits what is left (ignoring pauses), or throws if the input is cut short. */
  end(emit: Emit, emitBlock?: EmitBlock): void;
}

/** Where parsing starts: the beginning of the input, or a resume point. */
export interface StartAt {
  /** Byte offset of the first byte fed. */
  offset: number;
  /** Line number (1-based) at that offset. */
  line: number;
  /** True when resuming inside the data (after a header / inside the array). */
  resumed: boolean;
}

export const START: StartAt = { offset: 0, line: 1, resumed: false };

/** Longest record accepted; longer ones are rejected and skipped, so memory stays bounded. */
export const DEFAULT_MAX_RECORD_BYTES = 64 * 1024 * 1024;

export type Format = 'ndjson' | 'json' | 'csv' | 'tsv';
