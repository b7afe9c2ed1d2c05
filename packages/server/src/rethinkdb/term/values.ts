/**
 * Runtime values of the evaluator besides datums: database and table references, sequences
 * (lazy streams or materialized arrays, optionally a selection of one table's rows), single-row
 * selections, functions and the MINVAL/MAXVAL bounds. Datums are plain JSON values and never
 * class instances, so `instanceof` tells the two apart.
 */
import type { Key, Table } from '@wharf/engine';
import { queryLogic } from '../errors.js';
import type { Node } from './compiler.js';
import type { Datum, DatumObject } from './datum.js';
import { datumTypeName, typeError } from './datum.js';
import type { EngineRead } from './evaluator.js';

export class DbRef {
  constructor(readonly name: string) {}
}

export class TableRef {
  constructor(
    readonly db: string,
    readonly name: string,
    readonly engineName: string,
    readonly primaryKey: string,
    readonly engine: Table,
  ) {}

  get fullName(): string {
    return `${this.db}.${this.name}`;
  }
}

/**
 * A sequence. `array` set: materialized (answered as one ATOM at top level). Otherwise a stream
 * opened by `open()` (answered in batches). `table` set: the rows are whole documents of that
 * table (a selection), so writes (UPDATE/REPLACE/DELETE) may follow.
 */
export class Seq {
  constructor(
    readonly open: () => AsyncIterator<Datum>,
    readonly table: TableRef | null,
    readonly array: Datum[] | null,
  ) {}

  /** Never ends (r.range() with no bounds, and what is mapped from it): no array of it. */
  infinite = false;
  /** A changefeed (infinite too): RethinkDB's errors name it. */
  feed = false;
  /** A TABLE_SLICE: rows of `table` selected by key or index range (between), in that order. */
  slice = false;
  /** Ordered by an index already (a second indexed order_by is an error). */
  indexOrdered = false;
  /** Read by the engine page by page: limit, filter and count can go into the read. */
  engineRead: EngineRead | null = null;

  static fromArray(items: Datum[], table: TableRef | null = null): Seq {
    return new Seq(() => arrayIterator(items), table, items);
  }

  static fromStream(open: () => AsyncIterator<Datum>, table: TableRef | null = null, infinite = false): Seq {
    const s = new Seq(open, table, null);
    s.infinite = infinite;
    return s;
  }
}

export class SingleSelection {
  constructor(
    readonly table: TableRef,
    readonly key: Key,
    readonly row: DatumObject | null,
  ) {}
}

export class Env {
  constructor(
    readonly parent: Env | null,
    readonly ids: number[],
    readonly values: Datum[],
  ) {}

  lookup(id: number): Datum | undefined {
    for (let e: Env | null = this; e !== null; e = e.parent) {
      const i = e.ids.indexOf(id);
      if (i !== -1) return e.values[i] as Datum;
    }
    return undefined;
  }
}

export class Func {
  constructor(
    readonly params: number[],
    readonly body: Node,
    readonly env: Env | null,
  ) {}
}

export class Bound {
  private constructor(readonly which: 'min' | 'max') {}
  static readonly MIN = new Bound('min');
  static readonly MAX = new Bound('max');
}

/**
 * GROUPED_DATA: what GROUP makes. Each group's key with its value (the group's rows, or what a
 * later term made of them); terms marked `grouped` in the registry apply to each group.
 */
export class Grouped {
  constructor(
    readonly groups: Map<string, { key: Datum; value: Value }>,
    /** Grouped rows of a stream not yet reduced (TYPE_OF says GROUPED_STREAM). */
    readonly stream = false,
  ) {}
}

export type Value = Datum | DbRef | TableRef | Seq | SingleSelection | Func | Bound | Grouped;

export function isDatumValue(v: Value): v is Datum {
  return !(
    v instanceof DbRef ||
    v instanceof TableRef ||
    v instanceof Seq ||
    v instanceof SingleSelection ||
    v instanceof Func ||
    v instanceof Bound ||
    v instanceof Grouped
  );
}

/** RethinkDB's name of a value's type, as in error messages and TYPE_OF. */
export function typeName(v: Value): string {
  if (v instanceof DbRef) return 'DB';
  if (v instanceof TableRef) return 'TABLE';
  if (v instanceof SingleSelection) return 'SELECTION<OBJECT>';
  if (v instanceof Seq)
    return v.slice
      ? 'TABLE_SLICE'
      : v.table
        ? v.array
          ? 'SELECTION<ARRAY>'
          : 'SELECTION<STREAM>'
        : v.array
          ? 'ARRAY'
          : 'STREAM';
  if (v instanceof Func) return 'FUNCTION';
  if (v instanceof Grouped) return 'GROUPED_DATA';
  if (v instanceof Bound) return v.which === 'min' ? 'MINVAL' : 'MAXVAL';
  return datumTypeName(v);
}

export async function* arrayIterator(items: Datum[]): AsyncGenerator<Datum> {
  for (const x of items) yield x;
}

/** RethinkDB's name of a non-datum value's type in type errors (val_t's type names). */
function valueKind(v: Value): string {
  if (v instanceof DbRef) return 'DATABASE';
  if (v instanceof TableRef) return 'TABLE';
  if (v instanceof SingleSelection) return 'SINGLE_SELECTION';
  if (v instanceof Seq) return v.table ? 'SELECTION' : 'SEQUENCE';
  if (v instanceof Func) return 'FUNCTION';
  if (v instanceof Grouped) return 'GROUPED_DATA';
  return 'DATUM';
}

function describeValue(v: Value): string {
  if (v instanceof DbRef) return `db("${v.name}")`;
  if (v instanceof TableRef) return `table("${v.name}")`;
  if (isDatumValue(v)) return JSON.stringify(v);
  return typeName(v);
}

/**
 * The type error for a value that is not what a term wants: for a datum where a datum type is
 * wanted, `Expected type NUMBER but found STRING.`; otherwise RethinkDB's
 * `Expected type DATUM but found TABLE:` followed by the value.
 */
export function expectType(v: Value, want: string): never {
  const datumWanted = ![
    'DATUM',
    'TABLE',
    'TABLE_SLICE',
    'SELECTION',
    'SEQUENCE',
    'FUNCTION',
    'DATABASE',
    'SINGLE_SELECTION',
    'STREAM',
    'GROUPED_DATA',
  ].includes(want);
  if (isDatumValue(v) && datumWanted) throw typeError(want, v);
  throw queryLogic(`Expected type ${want} but found ${valueKind(v)}:\n${describeValue(v)}`);
}
