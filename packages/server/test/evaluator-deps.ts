// What the evaluator needs, over a real engine, for the tests that run queries without a server.
import type { Database } from '@wharf/engine';
import { Catalog } from '../src/rethinkdb/term/catalog.js';
import type { EvaluatorDeps } from '../src/rethinkdb/term/evaluator.js';

/** `trackWrite` sees every write the evaluator starts (default: passes it through). */
export function evaluatorDeps(db: Database, trackWrite: EvaluatorDeps['trackWrite'] = (p) => p): EvaluatorDeps {
  return {
    db,
    catalog: new Catalog(db),
    serverName: 'wharf',
    serverId: 'id',
    arrayLimit: 1000,
    trackWrite,
    defaultDurability: 'hard',
  };
}
