/**
 * The term registry: every term Wharf evaluates, by family (the layout of RethinkDB's
 * `src/rdb_protocol/terms/`). The compiler checks arity and optional arguments against these
 * specs; the evaluator dispatches to their `eval`.
 */

import { T } from '../names.js';
import type { TermDef, TermFamily } from '../registry.js';
import { adminTerms } from './admin.js';
import { aggregationTerms } from './aggregation.js';
import { arrayTerms } from './arrays.js';
import { changefeedTerms } from './changefeeds.js';
import { controlTerms } from './control.js';
import { datumTerms } from './datum.js';
import { geoTerms } from './geo.js';
import { httpTerms } from './http.js';
import { javascriptTerms } from './javascript.js';
import { joinTerms } from './joins.js';
import { mathTerms, numberTerms } from './math.js';
import { sequenceTerms } from './sequences.js';
import { stringTerms } from './strings.js';
import { timeTerms } from './times.js';
import { transformTerms } from './transforms.js';
import { userTerms } from './users.js';
import { writeHookTerms } from './write-hooks.js';
import { writeTerms } from './writes.js';

const FAMILIES: readonly TermFamily[] = [
  datumTerms,
  controlTerms,
  mathTerms,
  numberTerms,
  stringTerms,
  sequenceTerms,
  transformTerms,
  arrayTerms,
  joinTerms,
  geoTerms,
  aggregationTerms,
  writeTerms,
  adminTerms,
  timeTerms,
  changefeedTerms,
  javascriptTerms,
  httpTerms,
  writeHookTerms,
  userTerms,
];

/**
 * The terms that apply to each group of GROUPED_DATA (RethinkDB's grouped_seq_op_term_t and
 * obj_or_seq_op_term_t): on grouped input they run once per group and stay grouped.
 */
const GROUPED: ReadonlySet<number> = new Set([
  T.MAP,
  T.FILTER,
  T.ORDER_BY,
  T.NTH,
  T.SKIP,
  T.LIMIT,
  T.SLICE,
  T.PLUCK,
  T.WITHOUT,
  T.MERGE,
  T.HAS_FIELDS,
  T.WITH_FIELDS,
  T.GET_FIELD,
  T.BRACKET,
  T.COUNT,
  T.SUM,
  T.AVG,
  T.MIN,
  T.MAX,
  T.REDUCE,
  T.FOLD,
  T.CONCAT_MAP,
  T.DISTINCT,
  T.COERCE_TO,
]);

function join(families: readonly TermFamily[]): ReadonlyMap<number, TermDef> {
  const all = new Map<number, TermDef>();
  for (const family of families) {
    for (const [type, def] of Object.entries(family)) {
      const t = Number(type);
      if (all.has(t)) throw new Error(`term ${type} is declared by two families`);
      all.set(t, GROUPED.has(t) ? { ...def, grouped: true } : def);
    }
  }
  return all;
}

export const TERMS = join(FAMILIES);
