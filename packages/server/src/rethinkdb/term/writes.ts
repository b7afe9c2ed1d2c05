/**
 * INSERT, UPDATE, REPLACE and DELETE on top of the engine's insert/delete. Results have the
 * reference server's shape: the six counters, plus first_error, generated_keys and changes as
 * they apply (the engine's document_errors are not part of the ReQL result).
 *
 * UPDATE/REPLACE read the selected rows, compute the new documents here and write them back
 * with conflict "replace" in chunks: one write per chunk, not one per row. They are not atomic
 * with respect to concurrent writers of the same rows (documented in the README).
 */
import { randomUUID } from 'node:crypto';
import type { Durability, Key, Table, WriteResult } from '@wharf/engine';
import { queryLogic, ReqlRuntimeError, resourceLimit } from '../errors.js';
import { ErrorType } from '../protocol.js';
import type { Node, TermNode } from './compiler.js';
import {
  copyObject,
  type Datum,
  type DatumObject,
  datumsEqual,
  datumTypeName,
  field,
  isBinary,
  isPlainObject,
  MAX_DOCUMENT_DEPTH,
  nestingDepth,
  pretty,
  tooDeepMessage,
  typeError,
} from './datum.js';
import { isDeterministic } from './determinism.js';
import type { Evaluator } from './evaluator.js';
import { T } from './names.js';
import { deepMerge } from './objects.js';
import { primaryKeyError } from './primary-keys.js';
import {
  type Env,
  expectType,
  Func,
  isDatumValue,
  Seq,
  SingleSelection,
  TableRef,
  typeName,
  type Value,
} from './values.js';
import { applyWriteHook, writeHookOf } from './write-hooks.js';

/** The evaluator, as seen by the write terms. */
export type WriteContext = Evaluator;

const CHUNK = 1000;

type Conflict = 'error' | 'replace' | 'update';
type ReturnChanges = false | true | 'always';

interface Change {
  new_val: Datum;
  old_val: Datum;
  error?: string;
}

export class ResultBuilder {
  deleted = 0;
  errors = 0;
  inserted = 0;
  replaced = 0;
  skipped = 0;
  unchanged = 0;
  firstError: string | undefined;
  generatedKeys: string[] = [];
  changes: Change[] | undefined;

  constructor(returnChanges: ReturnChanges) {
    if (returnChanges !== false) this.changes = [];
  }

  error(message: string): void {
    this.errors++;
    this.firstError ??= message;
  }

  add(r: WriteResult): void {
    this.deleted += r.deleted;
    this.errors += r.errors;
    this.inserted += r.inserted;
    this.replaced += r.replaced;
    this.skipped += r.skipped;
    this.unchanged += r.unchanged;
    if (r.first_error !== undefined) this.firstError ??= r.first_error;
    if (r.generated_keys) this.generatedKeys.push(...r.generated_keys);
  }

  build(): DatumObject {
    const out: DatumObject = {
      deleted: this.deleted,
      errors: this.errors,
      inserted: this.inserted,
      replaced: this.replaced,
      skipped: this.skipped,
      unchanged: this.unchanged,
    };
    if (this.errors > 0 && this.firstError !== undefined) out.first_error = this.firstError;
    if (this.generatedKeys.length > 0) out.generated_keys = this.generatedKeys;
    if (this.changes) out.changes = this.changes as unknown as Datum;
    return out;
  }
}

async function durabilityOf(ev: WriteContext, node: TermNode, env: Env | null): Promise<Durability | undefined> {
  const d = await ev.optDatum(node, 'durability', env);
  if (d === undefined) return ev.durability;
  if (d !== 'hard' && d !== 'soft')
    throw queryLogic(
      `Durability option \`${typeof d === 'string' ? d : JSON.stringify(d)}\` unrecognized (options are "hard" and "soft").`,
    );
  return d;
}

/** The `ignore_write_hook` optarg: true writes without applying the table's hook. */
async function ignoreWriteHookOf(ev: WriteContext, node: TermNode, env: Env | null, t: TableRef): Promise<boolean> {
  const v = await ev.optDatum(node, 'ignore_write_hook', env);
  if (v === undefined) return false;
  if (typeof v !== 'boolean') throw typeError('BOOL', v);
  // Skipping a hook is a change to how the table behaves: RethinkDB asks for `config` on it.
  if (v) ev.deps.access?.require('config', t.db, t.name);
  return v;
}

async function returnChangesOf(ev: WriteContext, node: TermNode, env: Env | null): Promise<ReturnChanges> {
  // Accepted by the compiler only to name its replacement, as RethinkDB does.
  if (node.optargs.return_vals !== undefined)
    throw queryLogic('Error: encountered obsolete optarg `return_vals`.  Use `return_changes` instead.');
  const v = await ev.optDatum(node, 'return_changes', env);
  if (v === undefined || v === false) return false;
  if (v === true || v === 'always') return v;
  throw queryLogic(`Invalid return_changes value \`${JSON.stringify(v)}\` (options are true, false and "always").`);
}

/**
 * Run an insert with the effective durability, tracked for shutdown. Concurrent hard writes from
 * many connections share fdatasyncs in the engine's group commit.
 */
function durableWrite(
  ev: WriteContext,
  durability: Durability | undefined,
  op: (d: Durability) => Promise<WriteResult>,
): Promise<WriteResult> {
  const d = durability ?? ev.deps.defaultDurability;
  return ev.deps.trackWrite(op(d));
}

function firstNonSpace(text: string): string {
  const m = /\S/.exec(text);
  return m ? m[0] : '';
}

/** JSON whitespace: space, tab, line feed, carriage return. */
function isJsonSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

/**
 * The JSON text of `r.json(ARG)` for the bulk path, as one array (an object is wrapped), or null
 * when ARG is not a literal the engine can take as it is: a string, or
 * `r.binary(BYTES).coerceTo('string')` with BYTES as the query's base64 (decoded, never made a
 * string). Anything else goes through the evaluator.
 */
function bulkText(arg: Node | undefined): string | Buffer | null {
  if (arg?.kind === 'datum' && typeof arg.value === 'string') {
    const first = firstNonSpace(arg.value);
    if (first === '[') return arg.value;
    return first === '{' ? `[${arg.value}]` : null;
  }
  if (arg?.kind !== 'term' || arg.type !== T.COERCE_TO) return null;
  const [binary, type] = arg.args;
  if (type?.kind !== 'datum' || typeof type.value !== 'string' || type.value.toLowerCase() !== 'string') return null;
  if (binary?.kind !== 'datum' || !isBinary(binary.value)) return null;
  const bytes = Buffer.from(binary.value.data, 'base64');
  let i = 0;
  while (i < bytes.length && isJsonSpace(bytes[i] as number)) i++;
  if (bytes[i] === 0x5b) return bytes;
  return bytes[i] === 0x7b ? Buffer.concat([Buffer.from('['), bytes, Buffer.from(']')]) : null;
}

/** Does a document hold r.minval or r.maxval anywhere? */
function holdsBound(v: Datum): boolean {
  if (Array.isArray(v)) return v.some(holdsBound);
  if (v === null || typeof v !== 'object') return false;
  const rt = field(v, '$reql_type$');
  if (rt === 'MINVAL' || rt === 'MAXVAL') return true;
  return Object.values(v).some(holdsBound);
}

/** The document's primary key (any key value: strings, numbers, arrays, times…), if it has one. */
function keyOf(doc: DatumObject, pk: string): Key | undefined {
  const k = field(doc, pk);
  return k === undefined ? undefined : (k as Key);
}

/**
 * RethinkDB words a duplicate key with both documents (`Duplicate primary key \`id\`:` then the
 * stored one and the new one); the engine says only the key, so the stored ones are read here,
 * for failed documents only.
 */
export async function duplicateKeyTexts(
  engine: Table,
  pk: string,
  objects: DatumObject[],
  r: WriteResult,
): Promise<void> {
  const errors = r.document_errors ?? [];
  if (!errors.some((e) => e.message.startsWith('Duplicate primary key'))) return;
  for (const e of errors.slice(0, 1000)) {
    if (!e.message.startsWith('Duplicate primary key')) continue;
    const doc = objects[e.index];
    const key = doc === undefined ? undefined : keyOf(doc, pk);
    if (key === undefined) continue;
    const existing = (await engine.get(key)) as DatumObject | null;
    if (existing === null) continue;
    const text = `Duplicate primary key \`${pk}\`:\n${pretty(existing)}\n${pretty(doc)}`;
    if (r.first_error === e.message) r.first_error = text;
    e.message = text;
  }
}

function pkChanged(pk: string, oldRow: DatumObject, newRow: DatumObject): string {
  return `Primary key \`${pk}\` cannot be changed (\`${pretty(oldRow)}\` -> \`${pretty(newRow)}\`).`;
}

/** RethinkDB's limit on any array in a stored document, whatever the query's `array_limit`. */
export const MAX_STORED_ARRAY = 100_000;

/** RethinkDB's error for a document holding an array over MAX_STORED_ARRAY elements, or null. */
export function diskWriteError(v: Datum): string | null {
  if (v === null || typeof v !== 'object') return null;
  if (Array.isArray(v) && v.length > MAX_STORED_ARRAY)
    return 'Array too large for disk writes (limit 100,000 elements).';
  for (const x of Array.isArray(v) ? v : Object.values(v)) {
    const e = diskWriteError(x);
    if (e !== null) return e;
  }
  return null;
}

/** The document with its generated primary key (a copy: the caller's object is not changed). */
function withKey(doc: DatumObject, pk: string, key: Datum): DatumObject {
  const out = copyObject(doc);
  out[pk] = key;
  return out;
}

// ---- INSERT ----

export async function insert(ev: WriteContext, node: TermNode, env: Env | null): Promise<Datum> {
  const t = await ev.eval(node.args[0] as Node, env);
  if (!(t instanceof TableRef)) throw queryLogic(`Expected type TABLE but found ${typeName(t)}.`);
  const durability = await durabilityOf(ev, node, env);
  const returnChanges = await returnChangesOf(ev, node, env);
  let conflict: Conflict | Func = 'error';
  if (node.optargs.conflict !== undefined) {
    const c = await ev.eval(node.optargs.conflict, env);
    if (c instanceof Func) {
      if (!isDeterministic(node.optargs.conflict, true))
        throw queryLogic('The conflict function passed to `insert` must be deterministic.');
      if (c.params.length !== 3)
        throw queryLogic('The conflict function passed to `insert` should expect 3 arguments.');
      conflict = c;
    } else if (c === 'error' || c === 'replace' || c === 'update') conflict = c;
    else
      throw queryLogic(
        `Conflict option \`${typeof c === 'string' ? c : JSON.stringify(c)}\` unrecognized (options are "error", "replace" and "update").`,
      );
  }
  const conflictOpt = typeof conflict === 'string' ? { conflict } : {};
  const hook = await writeHookOf(ev, t, await ignoreWriteHookOf(ev, node, env, t));

  // Bulk path: insert(r.json(TEXT)) hands the text to the engine's parser unchanged. TEXT is a
  // string, or r.binary(BYTES).coerceTo('string'): base64 in the query, so that neither end
  // escapes and unescapes every quote of the documents (what a client loading a file sends).
  const docsNode = node.args[1] as Node;
  if (
    hook === null &&
    typeof conflict === 'string' &&
    returnChanges === false &&
    docsNode.kind === 'term' &&
    docsNode.type === T.JSON
  ) {
    const text = bulkText(docsNode.args[0]);
    if (text !== null) {
      const result = new ResultBuilder(false);
      try {
        result.add(
          await durableWrite(ev, durability, (d) => t.engine.insertJsonArray(text, { ...conflictOpt, durability: d })),
        );
      } catch (err) {
        throw ev.engineError(err, t);
      }
      return result.build();
    }
  }

  const value = await ev.eval(docsNode, env);
  let docs: Datum[];
  if (value instanceof Seq || value instanceof TableRef) docs = await ev.materialize(ev.seq(value));
  else {
    const d = await ev.datum(value);
    docs = Array.isArray(d) ? d : [d];
  }
  // A literal datum was depth-checked by the compiler; documents built at run time are checked
  // here (the engine refuses them too, but this names the limit before anything is written).
  const depthChecked = docsNode.kind === 'datum';
  for (const d of docs) {
    if (!isPlainObject(d)) throw typeError('OBJECT', d);
    if (!depthChecked && nestingDepth(d, MAX_DOCUMENT_DEPTH) > MAX_DOCUMENT_DEPTH)
      throw resourceLimit(tooDeepMessage('A document to insert'));
  }
  const result = new ResultBuilder(returnChanges);
  // Documents built at run time may hold r.minval/r.maxval (a literal datum cannot).
  const objects = depthChecked
    ? (docs as DatumObject[])
    : (docs as DatumObject[]).filter((d) => {
        if (!holdsBound(d)) return true;
        result.error('`r.minval` and `r.maxval` cannot be written to disk.');
        result.changes?.push({
          old_val: null,
          new_val: null,
          error: '`r.minval` and `r.maxval` cannot be written to disk.',
        });
        return false;
      });
  if (objects.length === 0) return result.build();
  const pk = t.primaryKey;
  // Keys RethinkDB refuses (null, objects, NUL bytes, too long) and arrays too large to store fail
  // here, in its words and before anything is written (their errors come first, as in RethinkDB).
  const keyErrors = objects.map((d) => {
    const k = field(d, pk);
    return (k === undefined ? null : primaryKeyError(k)) ?? diskWriteError(d);
  });
  for (const e of keyErrors) if (e !== null) result.error(e);
  const valid = objects.filter((_, i) => keyErrors[i] === null);
  if (conflict instanceof Func || hook !== null) {
    await insertRowByRow(ev, t, valid, conflict, hook, durability, result);
    return result.build();
  }
  let olds: (object | null)[] = [];
  const keyed = returnChanges !== false ? valid.map((d) => keyOf(d, pk)) : [];
  try {
    if (returnChanges !== false) {
      const present = keyed.filter((k): k is Key => k !== undefined);
      const found = present.length > 0 ? await t.engine.getMany(present) : [];
      let j = 0;
      olds = keyed.map((k) => (k === undefined ? null : (found[j++] ?? null)));
    }
    const r =
      valid.length === 0
        ? undefined
        : await durableWrite(ev, durability, (d) => t.engine.insert(valid, { ...conflictOpt, durability: d }));
    if (r !== undefined) {
      await duplicateKeyTexts(t.engine, t.primaryKey, valid, r);
      result.add(r);
    }
    if (result.changes) {
      const failed = new Map((r?.document_errors ?? []).map((e) => [e.index, e.message]));
      const generated = [...(r?.generated_keys ?? [])];
      // Documents written so far in this batch, by key: a later duplicate's stored document.
      const written = new Map<string, DatumObject>();
      let i = -1; // index in `valid`
      objects.forEach((doc, at) => {
        const keyError = keyErrors[at];
        if (keyError !== null && keyError !== undefined) {
          if (returnChanges === 'always') result.changes?.push({ new_val: null, old_val: null, error: keyError });
          return;
        }
        i++;
        const old = olds[i] as DatumObject | null;
        let newVal: DatumObject = doc;
        if (keyed[i] === undefined) newVal = withKey(doc, pk, generated.shift() ?? null);
        const error = failed.get(i);
        if (error !== undefined) {
          const stored = old ?? (keyed[i] === undefined ? null : (written.get(JSON.stringify(keyed[i])) ?? null));
          if (returnChanges === 'always') result.changes?.push({ new_val: stored, old_val: stored, error });
          return;
        }
        if (old && conflict === 'update') newVal = deepMerge(old, doc) as DatumObject;
        if (keyed[i] !== undefined) written.set(JSON.stringify(keyed[i]), newVal);
        if (old && datumsEqual(old, newVal) && returnChanges !== 'always') return;
        result.changes?.push({ new_val: newVal, old_val: old });
      });
    }
  } catch (err) {
    throw ev.engineError(err, t);
  }
  return result.build();
}

/**
 * An insert decided row by row here rather than by the engine: with a conflict function, or with
 * a write hook (which sees each row's old and new document, so keys are generated here first).
 */
async function insertRowByRow(
  ev: WriteContext,
  t: TableRef,
  given: DatumObject[],
  conflict: Conflict | Func,
  hook: Func | null,
  durability: Durability | undefined,
  result: ResultBuilder,
): Promise<void> {
  const pk = t.primaryKey;
  const docs =
    hook === null
      ? given
      : given.map((d) => {
          if (field(d, pk) !== undefined) return d;
          const key = randomUUID();
          result.generatedKeys.push(key);
          return withKey(d, pk, key);
        });
  const keys = docs.map((d) => keyOf(d, pk));
  const present = keys.filter((k): k is Key => k !== undefined);
  let found: (object | null)[];
  try {
    found = present.length > 0 ? await t.engine.getMany(present) : [];
  } catch (err) {
    throw ev.engineError(err, t);
  }
  let j = 0;
  const fresh: DatumObject[] = [];
  const replacements: DatumObject[] = [];
  const deletions: Key[] = [];
  for (let i = 0; i < docs.length; i++) {
    const doc = docs[i] as DatumObject;
    const key = keys[i];
    const old = key === undefined ? null : ((found[j++] ?? null) as DatumObject | null);
    let resolved: Datum;
    try {
      if (old === null) resolved = doc;
      else if (conflict instanceof Func) resolved = await ev.callDatum(conflict, [key as Datum, old, doc]);
      else if (conflict === 'error') {
        result.error(`Duplicate primary key \`${pk}\`:\n${pretty(old)}\n${pretty(doc)}`);
        continue;
      } else resolved = conflict === 'update' ? deepMerge(old, doc) : doc;
      if (hook !== null) resolved = await applyWriteHook(ev, hook, pk, old, resolved);
    } catch (err) {
      if (err instanceof ReqlRuntimeError) {
        result.error(err.message);
        continue;
      }
      throw err;
    }
    if (old === null) {
      if (!isPlainObject(resolved))
        result.error(`Inserted value must be an OBJECT (got ${datumTypeName(resolved)}):\n${pretty(resolved)}`);
      else if (!datumsEqual(field(resolved, pk) ?? null, field(doc, pk) ?? null))
        // RethinkDB's text for a key changed on an insert (table_common.cc), no old row.
        result.error(`Primary key \`${pk}\` cannot be changed (null -> ${pretty(resolved)})`);
      else fresh.push(resolved);
    } else if (resolved === null) {
      deletions.push(key as Key);
      result.changes?.push({ new_val: null, old_val: old });
    } else if (!isPlainObject(resolved)) {
      result.error(`Inserted value must be an OBJECT (got ${datumTypeName(resolved)}):\n${pretty(resolved)}`);
    } else if (!datumsEqual(field(resolved, pk) ?? null, field(old, pk) ?? null)) {
      result.error(pkChanged(pk, old, resolved));
    } else if (datumsEqual(resolved, old)) {
      result.unchanged++;
    } else {
      replacements.push(resolved);
      result.changes?.push({ new_val: resolved, old_val: old });
    }
  }
  const opts = durability ? { durability } : {};
  try {
    if (fresh.length > 0) {
      const r = await ev.deps.trackWrite(t.engine.insert(fresh, { ...opts, conflict: 'error' }));
      result.add(r);
      if (result.changes) {
        const generated = [...(r.generated_keys ?? [])];
        const failed = new Set((r.document_errors ?? []).map((e) => e.index));
        fresh.forEach((doc, i) => {
          const newVal = keyOf(doc, pk) === undefined ? withKey(doc, pk, generated.shift() ?? null) : doc;
          if (!failed.has(i)) result.changes?.push({ new_val: newVal, old_val: null });
        });
      }
    }
    if (replacements.length > 0)
      result.add(await ev.deps.trackWrite(t.engine.insert(replacements, { ...opts, conflict: 'replace' })));
    if (deletions.length > 0) result.add(await ev.deps.trackWrite(t.engine.delete(deletions, opts)));
  } catch (err) {
    throw ev.engineError(err, t);
  }
}

// ---- UPDATE / REPLACE / DELETE ----

interface Selection {
  table: TableRef;
  /** The key a single selection (`get`) names, whether or not its row exists. */
  key?: Key;
  /** Chunks of rows; a missing single row is a chunk holding null. */
  chunks(): AsyncGenerator<(DatumObject | null)[]>;
}

function selectionOf(ev: WriteContext, v: Value, term: string): Selection {
  if (v instanceof SingleSelection) {
    const row = v.row;
    return {
      table: v.table,
      key: v.key,
      async *chunks() {
        yield [row];
      },
    };
  }
  const seq = v instanceof TableRef ? ev.tableSeq(v) : v instanceof Seq ? v : null;
  // A datum (an array, an object) is RethinkDB's plain type error.
  if (isDatumValue(v) || (seq !== null && seq.table === null && seq.array !== null)) expectType(v, 'SELECTION');
  if (!seq?.table)
    throw queryLogic(
      `Expected type SELECTION but found ${typeName(v)}. (${term} works on tables and selections of their rows.)`,
    );
  return {
    table: seq.table,
    async *chunks() {
      const it = seq.open();
      try {
        let chunk: DatumObject[] = [];
        for (;;) {
          const r = await it.next();
          if (r.done) break;
          chunk.push(r.value as DatumObject);
          if (chunk.length >= CHUNK) {
            yield chunk;
            chunk = [];
          }
        }
        if (chunk.length > 0) yield chunk;
      } finally {
        await it.return?.();
      }
    },
  };
}

async function rewrite(ev: WriteContext, node: TermNode, env: Env | null, mode: 'update' | 'replace'): Promise<Datum> {
  const target = await ev.eval(node.args[0] as Node, env);
  const sel = selectionOf(ev, target, mode === 'update' ? 'UPDATE' : 'REPLACE');
  const nonAtomic = await ev.optDatum(node, 'non_atomic', env);
  if (nonAtomic !== undefined && typeof nonAtomic !== 'boolean') throw typeError('BOOL', nonAtomic);
  // An atomic write's new document must not depend on where it is computed.
  if (nonAtomic !== true && !isDeterministic(node.args[1] as Node, true))
    throw queryLogic('Could not prove argument deterministic.  Maybe you want to use the non_atomic flag?');
  // An argument that fails to evaluate (`{x: r.error('a')}`) fails each row, as RethinkDB's
  // per-row function would: counted in `errors`, not the query's error.
  let fn: Value = null;
  let argError: ReqlRuntimeError | undefined;
  try {
    fn = await ev.eval(node.args[1] as Node, env);
  } catch (err) {
    if (!(err instanceof ReqlRuntimeError) || err.errorType === ErrorType.INTERNAL) throw err;
    argError = err;
  }
  const durability = await durabilityOf(ev, node, env);
  const returnChanges = await returnChangesOf(ev, node, env);
  const result = new ResultBuilder(returnChanges);
  const t = sel.table;
  const pk = t.primaryKey;
  const hook = await writeHookOf(ev, t, await ignoreWriteHookOf(ev, node, env, t));
  const opts = durability ? { durability } : {};
  for await (const chunk of sel.chunks()) {
    const writes: DatumObject[] = [];
    const deletions: Key[] = [];
    const pending: Change[] = [];
    for (const row of chunk) {
      let computed: Datum;
      try {
        if (argError !== undefined) throw argError;
        computed = await ev.callDatum(fn, [row]);
      } catch (err) {
        if (err instanceof ReqlRuntimeError && err.errorType !== ErrorType.INTERNAL) {
          result.error(err.message);
          continue;
        }
        throw err;
      }
      if (mode === 'update') {
        if (row === null) {
          result.skipped++;
          continue;
        }
        if (computed === null) {
          result.unchanged++;
          continue;
        }
        if (!isPlainObject(computed)) {
          result.error(`Inserted value must be an OBJECT (got ${datumTypeName(computed)}):\n${pretty(computed)}`);
          continue;
        }
        computed = deepMerge(row, computed);
      }
      if (hook !== null && !(row === null && computed === null)) {
        try {
          computed = await applyWriteHook(ev, hook, pk, row, computed);
        } catch (err) {
          if (!(err instanceof ReqlRuntimeError)) throw err;
          result.error(err.message);
          continue;
        }
      }
      if (computed === null) {
        if (row === null) result.skipped++;
        else {
          deletions.push(keyOf(row, pk) as Key);
          pending.push({ new_val: null, old_val: row });
        }
        continue;
      }
      if (!isPlainObject(computed)) {
        result.error(`Inserted value must be an OBJECT (got ${datumTypeName(computed)}):\n${pretty(computed)}`);
        continue;
      }
      const next = computed as DatumObject;
      // A stored row's key may be any datum (system tables'); a changed one is refused below.
      if (keyOf(next, pk) === undefined && (row === null || field(next, pk) === undefined)) {
        result.error(`Inserted object must have primary key \`${pk}\`:\n${pretty(next)}`);
        continue;
      }
      if (row !== null && !datumsEqual(field(row, pk) ?? null, field(next, pk) ?? null)) {
        result.error(pkChanged(pk, row, next));
        continue;
      }
      // A missing row of `get(key)` may only be created under that key.
      if (row === null && sel.key !== undefined && !datumsEqual(sel.key as Datum, field(next, pk) ?? null)) {
        result.error(`Primary key \`${pk}\` cannot be changed (null -> ${pretty(next)})`);
        continue;
      }
      if (row !== null && datumsEqual(row, next)) {
        result.unchanged++;
        if (returnChanges === 'always') pending.push({ new_val: next, old_val: row });
        continue;
      }
      writes.push(next);
      pending.push({ new_val: next, old_val: row });
    }
    try {
      if (writes.length > 0)
        result.add(await ev.deps.trackWrite(t.engine.insert(writes, { ...opts, conflict: 'replace' })));
      if (deletions.length > 0) result.add(await ev.deps.trackWrite(t.engine.delete(deletions, opts)));
    } catch (err) {
      throw ev.engineError(err, t);
    }
    result.changes?.push(...pending);
  }
  return result.build();
}

export function updateRows(ev: WriteContext, node: TermNode, env: Env | null): Promise<Datum> {
  return rewrite(ev, node, env, 'update');
}

export function replaceRows(ev: WriteContext, node: TermNode, env: Env | null): Promise<Datum> {
  return rewrite(ev, node, env, 'replace');
}

export async function deleteRows(ev: WriteContext, node: TermNode, env: Env | null): Promise<Datum> {
  const target = await ev.eval(node.args[0] as Node, env);
  const sel = selectionOf(ev, target, 'DELETE');
  const durability = await durabilityOf(ev, node, env);
  const returnChanges = await returnChangesOf(ev, node, env);
  const result = new ResultBuilder(returnChanges);
  const t = sel.table;
  const hook = await writeHookOf(ev, t, await ignoreWriteHookOf(ev, node, env, t));
  const opts = durability ? { durability } : {};
  for await (const chunk of sel.chunks()) {
    const keys: Key[] = [];
    for (const row of chunk) {
      if (row === null) {
        result.skipped++;
        continue;
      }
      if (hook !== null) {
        try {
          await applyWriteHook(ev, hook, t.primaryKey, row, null);
        } catch (err) {
          if (!(err instanceof ReqlRuntimeError)) throw err;
          result.error(err.message);
          continue;
        }
      }
      keys.push(keyOf(row, t.primaryKey) as Key);
      result.changes?.push({ new_val: null, old_val: row });
    }
    if (keys.length === 0) continue;
    try {
      result.add(await ev.deps.trackWrite(t.engine.delete(keys, opts)));
    } catch (err) {
      throw ev.engineError(err, t);
    }
  }
  return result.build();
}
