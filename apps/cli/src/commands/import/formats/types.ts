/**
 * A format parser turns input bytes into documents, push-style: `feed` each chunk, then `end`.
 * For every document (or bad record) it calls `emit` once, in input order, with the record's
 * first line (1-based) and the byte offset just past it: resuming at that offset continues with
 * the next record. When `emit` returns false the parser stops after that record and `feed`
 * returns the bytes it consumed: the caller waits (backpressure), then feeds the rest.
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

export interface FormatParser {
  /** Parses records from `chunk` until it ends or `emit` returns false; returns bytes consumed. */
  feed(chunk: Buffer, emit: Emit): number;
  /** True while parsed records wait to be emitted (feed an empty chunk to continue). */
  readonly pending: boolean;
  /** The input ended: emits what is left (ignoring pauses), or throws if the input is cut short. */
  end(emit: Emit): void;
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
