/**
 * The term registry: every term Wharf evaluates, by family (the layout of RethinkDB's
 * `src/rdb_protocol/terms/`). The compiler checks arity and optional arguments against these
 * specs; the evaluator dispatches to their `eval`.
 */
import type { TermDef, TermFamily } from '../registry.js';
import { adminTerms } from './admin.js';
import { aggregationTerms } from './aggregation.js';
import { controlTerms } from './control.js';
import { datumTerms } from './datum.js';
import { mathTerms } from './math.js';
import { sequenceTerms } from './sequences.js';
import { timeTerms } from './times.js';
import { writeTerms } from './writes.js';

const FAMILIES: readonly TermFamily[] = [
  datumTerms,
  controlTerms,
  mathTerms,
  sequenceTerms,
  aggregationTerms,
  writeTerms,
  adminTerms,
  timeTerms,
];

function join(families: readonly TermFamily[]): ReadonlyMap<number, TermDef> {
  const all = new Map<number, TermDef>();
  for (const family of families) {
    for (const [type, def] of Object.entries(family)) {
      if (all.has(Number(type))) throw new Error(`term ${type} is declared by two families`);
      all.set(Number(type), def);
    }
  }
  return all;
}

export const TERMS = join(FAMILIES);
