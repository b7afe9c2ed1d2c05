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
