/**
 * Whether a query part is deterministic, as RethinkDB's term_t::is_deterministic decides: a term
 * is deterministic when it is not one of the terms below and all its arguments are. Write hooks
 * must be deterministic; update and replace must be unless `non_atomic` (an atomic write computes
 * its new document where the row lives, so the computation must give the same result anywhere).
 */
import type { Node } from './compiler.js';
import { T } from './names.js';

/** Terms whose value is not a function of their arguments (they read state, time or chance). */
const NON_DETERMINISTIC: ReadonlySet<number> = new Set([
  T.JAVASCRIPT,
  T.HTTP,
  T.RANDOM,
  T.SAMPLE,
  T.DB,
  T.TABLE,
  T.DB_CREATE,
  T.DB_DROP,
  T.DB_LIST,
  T.TABLE_CREATE,
  T.TABLE_DROP,
  T.TABLE_LIST,
  T.CONFIG,
  T.STATUS,
  T.WAIT,
  T.RECONFIGURE,
  T.REBALANCE,
  T.SYNC,
  T.GRANT,
  T.SET_WRITE_HOOK,
  T.GET_WRITE_HOOK,
  // Geo terms other than r.point are deterministic on one server only (floating point results
  // may differ between machines): RethinkDB counts them as not deterministic for writes, write
  // hooks and indexes, the three places this check serves.
  T.GEOJSON,
  T.LINE,
  T.POLYGON,
  T.DISTANCE,
  T.INTERSECTS,
  T.INCLUDES,
  T.CIRCLE,
  T.GET_INTERSECTING,
  T.FILL,
  T.GET_NEAREST,
  T.POLYGON_SUB,
]);

/**
 * `constantNow`: whether `r.now()` counts as deterministic (it is one value per query; RethinkDB
 * allows it in update and replace but not in write hooks).
 */
export function isDeterministic(n: Node, constantNow: boolean): boolean {
  switch (n.kind) {
    case 'term':
      if (NON_DETERMINISTIC.has(n.type)) return false;
      if (n.type === T.NOW && !constantNow) return false;
      if (n.type === T.UUID && (n.args.length === 0 || n.args.some((a) => a.kind === 'term' && a.type === T.ARGS)))
        return false;
      return (
        n.args.every((a) => isDeterministic(a, constantNow)) &&
        Object.values(n.optargs).every((a) => isDeterministic(a, constantNow))
      );
    case 'func':
      return isDeterministic(n.body, constantNow);
    case 'obj':
      return Object.values(n.fields).every((a) => isDeterministic(a, constantNow));
    case 'array':
      return n.items.every((a) => isDeterministic(a, constantNow));
    default:
      return true;
  }
}
