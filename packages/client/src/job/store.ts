/**
 * Where a job's coordination documents live: a table on the import's own target (a Wharf
 * server or RethinkDB), so a worker that can write documents can coordinate, and one that cannot
 * reach the target stops heartbeating. Three operations, all single-document and atomic on both
 * targets: create-if-absent (an insert with conflict "error": the one primitive the claims rely
 * on), replace, and a range read by primary key.
 */

import { type CoordinationDoc, DEFAULT_JOB_TABLE } from '@wharf/wire';
import { LoaderError } from '../errors.js';
import { parseTarget } from '../targets/target.js';

export interface CoordinationStore {
  /** The target and table, for messages. */
  readonly where: string;
  /** Creates the table if it does not exist. */
  open(): Promise<void>;
  /** Inserts `doc` unless a document with its id exists: true if this call created it. */
  create(doc: CoordinationDoc): Promise<boolean>;
  /** Inserts or replaces `doc`; `durable`: answered once it is on disk. */
  put(doc: CoordinationDoc, durable: boolean): Promise<void>;
  /** Every document whose id starts with `prefix`, in id order. */
  list(prefix: string): Promise<CoordinationDoc[]>;
  close(): Promise<void>;
}

/** The store on the target of `targetUrl` (wharf:// or rethinkdb://). */
export async function openStore(targetUrl: string, table = DEFAULT_JOB_TABLE): Promise<CoordinationStore> {
  const spec = parseTarget(targetUrl);
  let store: CoordinationStore;
  if (spec.kind === 'wharf') {
    const { WharfStore } = await import('./store-wharf.js');
    store = new WharfStore(spec, table);
  } else if (spec.kind === 'rethinkdb') {
    const { RethinkdbStore } = await import('./store-rethinkdb.js');
    store = new RethinkdbStore(spec, table);
  } else {
    throw new LoaderError(
      'WHARF_ERR_USAGE',
      'a job needs a target every worker can reach: wharf://HOST:PORT or rethinkdb://HOST:PORT/DB (an embedded directory belongs to one process)',
    );
  }
  await store.open();
  return store;
}

/** The upper bound of a prefix range: every id that starts with `prefix` sorts below it. */
export function prefixEnd(prefix: string): string {
  return `${prefix}\uffff`;
}
