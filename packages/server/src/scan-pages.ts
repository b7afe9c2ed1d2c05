/** Paging a primary-key scan: the HTTP documents route and the ReQL table scan read in pages. */
import type { Key, ScanOptions } from '@wharf/engine';

/**
 * Moves the near bound of `opts` past `key` (the last key of the page before) in the scan's
 * direction: forward, the lower bound becomes `gt key`; reversed, the upper bound `lt key`.
 */
export function continueAfter(opts: ScanOptions, key: Key): void {
  if (opts.reverse) {
    delete opts.lte;
    opts.lt = key;
  } else {
    delete opts.gte;
    opts.gt = key;
  }
}
