/**
 * The term registry's shape. Each family module in `terms/` (laid out like RethinkDB's
 * `src/rdb_protocol/terms/`) exports a TermFamily: for each term type it evaluates, the argument
 * spec the compiler checks (arity, optional arguments) and the evaluation itself. `terms/index.ts`
 * joins the families into one table, which the compiler and the evaluator both read, so a term is
 * declared in one place only.
 */
import type { TermNode } from './compiler.js';
import type { Evaluator } from './evaluator.js';
import type { Env, Value } from './values.js';

export const INF = Number.POSITIVE_INFINITY;

export interface TermSpec {
  /** Fewest and most positional arguments (INF: no upper bound). */
  min: number;
  max: number;
  /** The optional arguments the term accepts; any other is a COMPILE_ERROR. */
  optargs?: readonly string[];
}

export type TermEval = (ev: Evaluator, node: TermNode, env: Env | null) => Promise<Value>;

export interface TermDef extends TermSpec {
  eval: TermEval;
  /**
   * On GROUPED_DATA as first argument, the term applies to each group (RethinkDB's
   * grouped_seq_op_term_t) and the result is grouped the same way.
   */
  grouped?: boolean;
}

/** One family of terms, keyed by term type (`T.*`). */
export type TermFamily = Readonly<Record<number, TermDef>>;

/** `Expected 2 arguments but found 1.` and its variants, as RethinkDB words arity errors. */
export function arityText(spec: TermSpec): string {
  const plural = (n: number): string => `${n} argument${n === 1 ? '' : 's'}`;
  if (spec.min === spec.max) return plural(spec.min);
  if (spec.max === INF) return `${spec.min} or more arguments`;
  return `between ${spec.min} and ${spec.max} arguments`;
}
