/**
 * Creating a RethinkDB table that several processes may create at once. RethinkDB does not make
 * `tableCreate` atomic by name: two concurrent calls (even on one node) make two tables of the
 * same name, after which every query on it fails as "ambiguous". So: create it if `tableList`
 * lacks it, then look at `rethinkdb.table_config` and delete the extra empty tables of that name:
 * the one holding documents stays, else the lowest id, the choice every process makes. A table
 * that holds documents is never deleted: two of them are an error for a person to resolve. A
 * server without `rethinkdb.table_config` (Wharf's driver port) creates one table per name, so
 * there is nothing to reconcile.
 */

// biome-ignore lint/suspicious/noExplicitAny: the official driver has no usable types
type R = any;

/** Wait before looking again after the table's wait found it ambiguous. */
const SETTLE_MS = 100;

export async function ensureRethinkdbTable(
  r: R,
  run: <T>(query: R) => Promise<T>,
  db: string,
  name: string,
  primaryKey: string,
  /** More `tableCreate` optargs (shards, replicas…). */
  options: Record<string, unknown> = {},
): Promise<void> {
  const exists = (err: unknown) => {
    if (!/already exists/i.test((err as Error).message)) throw err;
  };
  const dbs = await run<string[]>(r.dbList());
  if (!dbs.includes(db)) await run(r.dbCreate(db)).catch(exists);
  const tables = await run<string[]>(r.db(db).tableList());
  if (!tables.includes(name)) await run(r.db(db).tableCreate(name, { ...options, primaryKey })).catch(exists);
  // One look after our own creation is enough: of creators that raced, the last to finish sees
  // the others' tables and deletes the extra ones (queries on the name fail as ambiguous, and are
  // retried, until it has). A duplicate that appears after our look makes the wait fail so: look
  // again.
  for (let first = true; ; first = false) {
    if (!first) await sleep(SETTLE_MS);
    if (!(await reconcile(r, run, db, name))) return;
    try {
      await run(r.db(db).table(name).wait({ waitFor: 'all_replicas_ready' }));
      return;
    } catch (err) {
      if (!isAmbiguous(err)) throw err;
    }
  }
}

/** Whether a RethinkDB error is "table … is ambiguous" (two tables of one name, for a moment). */
export function isAmbiguous(err: unknown): boolean {
  return /is ambiguous; there are multiple tables with that name/.test((err as Error)?.message ?? '');
}

/**
 * Deletes the extra tables named `db.name` (see above) until one is left. False when the server
 * has no `rethinkdb.table_config` (Wharf's driver port).
 */
async function reconcile(r: R, run: <T>(query: R) => Promise<T>, db: string, name: string): Promise<boolean> {
  const config = r.db('rethinkdb').table('table_config');
  for (;;) {
    let ids: string[];
    try {
      ids = (await run<string[]>(config.filter({ db, name })('id').coerceTo('array'))).sort();
    } catch (err) {
      // Not a RethinkDB (Wharf's driver port has no system tables, and one table per name).
      if (/rethinkdb\.table_config` does not exist/.test((err as Error).message)) return false;
      throw err;
    }
    if (ids.length <= 1) return true;
    // A table can only be named by its uuid in the system tables: its write counter says
    // whether anything went into it. The one with documents stays (else the lowest id: the
    // choice every process makes); two with documents are for a person to resolve.
    const written = await Promise.all(
      ids.map((id) =>
        run<number>(
          r
            .db('rethinkdb')
            .table('stats')
            .filter((s: R) => s('id')(0).eq('table_server').and(s('id')(1).eq(id)))('query_engine')(
              'written_docs_total',
            )
            .sum(),
        ),
      ),
    );
    const used = ids.filter((_, i) => (written[i] as number) > 0);
    if (used.length > 1)
      throw new Error(
        `RethinkDB has ${ids.length} tables named ${db}.${name} (created at once by several processes) and ${used.length} of them hold documents (${used.join(', ')}): remove the extra ones by hand`,
      );
    const keep = used[0] ?? ids[0];
    for (const id of ids) if (id !== keep) await run(config.get(id).delete());
  }
}

const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));
