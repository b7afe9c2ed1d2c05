/**
 * The single-document insert, `r.table(NAME).insert(DOC)` with at most a literal `durability`,
 * taken straight to the engine: the query a newcomer's first loop sends a thousand times (seed
 * 000). It skips the evaluator (two Evaluators, an async call per term, the catalog's table
 * lookup) but not the compiler, so the document is checked and folded exactly as on the
 * general path. Anything else, including every case that would fail before the write (a bad
 * table name, a document that is not an object, a missing table), is left to the general path,
 * which then gives the exact error with its backtrace.
 */
import type { Database, Durability } from '@wharf/engine';
import { isHiddenTable } from '../../names.js';
import { DB_SEPARATOR, DEFAULT_DB } from './catalog.js';
import type { Node } from './compiler.js';
import { type DatumObject, isPlainObject } from './datum.js';
import { T } from './names.js';
import { duplicateKeyTexts, ResultBuilder } from './writes.js';

const TABLE_NAME = /^[A-Za-z0-9_-]+$/;

export interface SingleInsert {
  /** The engine table name (database `test`: the plain name). */
  table: string;
  doc: DatumObject;
  /** The query's own durability, if it gave one. */
  durability: Durability | undefined;
}

/**
 * The single insert `root` is, or undefined. Only for a query without the global optargs `db`
 * and `durability` (which the general path resolves).
 */
export function singleInsertOf(root: Node, globalOptargs: Record<string, unknown>): SingleInsert | undefined {
  if (root.kind !== 'term' || root.type !== T.INSERT || root.args.length !== 2) return undefined;
  if (Object.hasOwn(globalOptargs, 'db') || Object.hasOwn(globalOptargs, 'durability')) return undefined;
  const [tableNode, docNode] = root.args as [Node, Node];
  if (tableNode.kind !== 'term' || tableNode.type !== T.TABLE || tableNode.args.length !== 1) return undefined;
  for (const _ in tableNode.optargs) return undefined;
  const nameNode = tableNode.args[0] as Node;
  if (nameNode.kind !== 'datum' || typeof nameNode.value !== 'string' || !TABLE_NAME.test(nameNode.value))
    return undefined;
  if (isHiddenTable(nameNode.value)) return undefined; // not a ReQL table: the general path says so
  if (docNode.kind !== 'datum' || !isPlainObject(docNode.value)) return undefined;
  let durability: Durability | undefined;
  for (const key in root.optargs) {
    const v = root.optargs[key] as Node;
    if (key !== 'durability' || v.kind !== 'datum' || (v.value !== 'hard' && v.value !== 'soft')) return undefined;
    durability = v.value;
  }
  return { table: nameNode.value, doc: docNode.value as DatumObject, durability };
}

/**
 * The insert's result, or undefined when the engine refused it: then the general path runs the
 * query and words the error (a missing table with the TABLE term's backtrace; a poisoned or
 * closing engine refuses it there again), so an error reads the same on both paths.
 */
export async function runSingleInsert(
  db: Database,
  insert: SingleInsert,
  defaultDurability: Durability,
  trackWrite: <R>(p: Promise<R>) => Promise<R>,
): Promise<DatumObject | undefined> {
  let written: Awaited<ReturnType<ReturnType<Database['table']>['insert']>>;
  try {
    written = await trackWrite(
      db.table(insert.table).insert(insert.doc, {
        conflict: 'error',
        durability: insert.durability ?? defaultDurability,
      }),
    );
  } catch {
    return undefined;
  }
  if (written.errors > 0) {
    // Worded as the general path words it (a duplicate key with both documents).
    const pk = db.listTables().find((t) => t.name === insert.table)?.primaryKey;
    if (pk !== undefined) await duplicateKeyTexts(db.table(insert.table), pk, [insert.doc], written);
  }
  const result = new ResultBuilder(false);
  result.add(written);
  return result.build();
}

// ── the bulk insert frame ─────────────────────────────────────────────────────────────────────

/**
 * What a loader sends for each batch (the official driver and `@wharf/client`'s rethinkdb://
 * target alike): `r.db(D).table(T).insert(r.json(r.binary(BYTES).coerceTo('string')), {durability,
 * conflict})`, the documents as one base64 string of several MB in the frame. The general path
 * decodes the whole frame to a JS string and JSON.parses it before the engine parses the bytes
 * again: on a load that is most of this process's CPU. Here the frame's bytes are looked at
 * directly: the base64 text is cut out and decoded from the frame, and only the query around it
 * (a few hundred bytes) is parsed and checked. Anything else (global optargs, other insert
 * options, a `\` in the text, a shape that differs in any way) is left to the general path, which
 * then answers exactly as before; so is a batch the engine refuses (nothing is written then).
 */
export interface BulkInsertFrame {
  /** The engine table name (catalog.ts's rule: `T` in database `test`, else `D.T`). */
  table: string;
  /** The JSON array text, decoded from the frame's base64. */
  bytes: Buffer;
  durability: Durability | undefined;
  conflict: 'error' | 'replace' | 'update';
}

/** Smaller frames gain nothing worth a second look; they take the general path. */
export const BULK_FRAME_MIN_BYTES = 64 * 1024;
const BINARY_OPEN = Buffer.from('{"$reql_type$":"BINARY","data":"');
/** Where the BINARY object must start: after the insert's table term, names ≤ 127 bytes each. */
const BINARY_OPEN_WITHIN = 512;
const DB_NAME = TABLE_NAME;

const isArray = Array.isArray;
/** `[type, args]` or `[type, args, optargs]` of term `type` with `n` args; the args, or undefined. */
function termArgs(v: unknown, type: number, n: number): unknown[] | undefined {
  if (!isArray(v) || (v.length !== 2 && v.length !== 3) || v[0] !== type) return undefined;
  const args = v[1];
  return isArray(args) && args.length === n ? args : undefined;
}

/** The bulk insert in a START frame's body, or undefined when the body is anything else. */
export function bulkInsertFrameOf(body: Buffer): BulkInsertFrame | undefined {
  if (body.length < BULK_FRAME_MIN_BYTES) return undefined;
  const open = body.subarray(0, BINARY_OPEN_WITHIN).indexOf(BINARY_OPEN);
  if (open < 0) return undefined;
  const start = open + BINARY_OPEN.length;
  const end = body.indexOf(0x22, start); // base64 holds no quote: the string's end
  if (end < 0 || body.length - end > BINARY_OPEN_WITHIN) return undefined;
  // An escape inside the string (`\/` is valid JSON) would change its text: general path.
  const backslash = body.indexOf(0x5c, start);
  if (backslash !== -1 && backslash < end) return undefined;
  let query: unknown;
  try {
    query = JSON.parse(body.toString('utf8', 0, start) + body.toString('utf8', end));
  } catch {
    return undefined;
  }
  // [1, INSERT]: a START without global optargs (db, durability… are the general path's).
  if (!isArray(query) || query.length !== 2 || query[0] !== 1) return undefined;
  const insertTerm = query[1] as unknown[];
  const insertArgs = termArgs(insertTerm, T.INSERT, 2);
  if (!insertArgs) return undefined;
  const table = tableOf(insertArgs[0]);
  if (table === undefined) return undefined;
  const jsonArgs = termArgs(insertArgs[1], T.JSON, 1);
  if (!jsonArgs) return undefined;
  const coerceArgs = termArgs(jsonArgs[0], T.COERCE_TO, 2);
  if (coerceArgs?.[1] !== 'string') return undefined;
  // Neither r.json nor coerceTo takes optargs.
  if ((insertArgs[1] as unknown[]).length !== 2 || (jsonArgs[0] as unknown[]).length !== 2) return undefined;
  const binary = coerceArgs[0] as Record<string, unknown>;
  if (binary === null || typeof binary !== 'object' || isArray(binary)) return undefined;
  const keys = Object.keys(binary);
  if (keys.length !== 2 || binary.$reql_type$ !== 'BINARY' || binary.data !== '') return undefined;
  let durability: Durability | undefined;
  let conflict: BulkInsertFrame['conflict'] = 'error';
  const optargs = insertTerm.length === 3 ? insertTerm[2] : {};
  if (optargs === null || typeof optargs !== 'object' || isArray(optargs)) return undefined;
  for (const [key, v] of Object.entries(optargs)) {
    if (key === 'durability' && (v === 'hard' || v === 'soft')) durability = v;
    else if (key === 'conflict' && (v === 'error' || v === 'replace' || v === 'update')) conflict = v;
    else return undefined;
  }
  const bytes = Buffer.from(body.toString('latin1', start, end), 'base64');
  let i = 0;
  while (i < bytes.length && (bytes[i] === 0x20 || bytes[i] === 0x0a || bytes[i] === 0x0d || bytes[i] === 0x09)) i++;
  if (bytes[i] !== 0x5b) return undefined; // not an array text: the general path words it
  return { table, bytes, durability, conflict };
}

/** The engine name of a TABLE term `[15, [[14, [D]], T]]` or `[15, [T]]` (database test), without optargs. */
function tableOf(v: unknown): string | undefined {
  if (!isArray(v) || v.length !== 2 || v[0] !== T.TABLE || !isArray(v[1])) return undefined;
  const args = v[1];
  const name = args[args.length - 1];
  if (typeof name !== 'string' || !TABLE_NAME.test(name) || isHiddenTable(name)) return undefined;
  if (args.length === 1) return name;
  const dbArgs = args.length === 2 ? termArgs(args[0], T.DB, 1) : undefined;
  const dbName = dbArgs?.[0];
  if (typeof dbName !== 'string' || !DB_NAME.test(dbName) || (args[0] as unknown[]).length !== 2) return undefined;
  return dbName === DEFAULT_DB ? name : `${dbName}${DB_SEPARATOR}${name}`;
}

/**
 * The bulk insert's result, or undefined when the engine refused the batch (a missing table, a
 * text that is not JSON…: nothing was written) so that the general path runs the query and words
 * the error exactly as it always does.
 */
export async function runBulkInsert(
  db: Database,
  frame: BulkInsertFrame,
  defaultDurability: Durability,
  trackWrite: <R>(p: Promise<R>) => Promise<R>,
): Promise<DatumObject | undefined> {
  let written: Awaited<ReturnType<ReturnType<Database['table']>['insertJsonArray']>>;
  try {
    written = await trackWrite(
      db.table(frame.table).insertJsonArray(frame.bytes, {
        conflict: frame.conflict,
        durability: frame.durability ?? defaultDurability,
      }),
    );
  } catch {
    return undefined;
  }
  const result = new ResultBuilder(false);
  result.add(written);
  return result.build();
}
