/**
 * Creating a RethinkDB table that several processes may create at once. RethinkDB does not make
 * `tableCreate` atomic by name: two concurrent calls (even on one node) make two tables of the
 * same name, after which every query on it fails as "ambiguous". So: create it if `tableList`
 * lacks it, then look at `rethinkdb.table_config` until exactly one table of that name is seen
 * twice a settle interval apart, deleting the extra empty ones (the lowest id stays, the choice
 * every process makes). A duplicate that already holds documents is never deleted: that is an
 * error for a person to resolve. A server without `rethinkdb.table_config` (Wharf's driver port)
 * creates one table per name, so there is nothing to reconcile.
 */

// biome-ignore lint/suspicious/noExplicitAny: the official driver has no usable types
type R = any;

/** Wait between two looks at the table's config. */
const SETTLE_MS = 300;

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
  const config = r.db('rethinkdb').table('table_config');
  let single = 0;
  while (single < 2) {
    let ids: string[];
    try {
      ids = (await run<string[]>(config.filter({ db, name })('id').coerceTo('array'))).sort();
    } catch (err) {
      // Not a RethinkDB (Wharf's driver port has no system tables, and one table per name).
      if (/rethinkdb\.table_config` does not exist/.test((err as Error).message)) return;
      throw err;
    }
    if (ids.length <= 1) single++;
    else {
      single = 0;
      for (const id of ids.slice(1)) {
        // A table can only be named by its uuid in the system tables: its write counter says whether
        // anything went into it.
        const written = await run<number>(
          r
            .db('rethinkdb')
            .table('stats')
            .filter((s: R) => s('id')(0).eq('table_server').and(s('id')(1).eq(id)))('query_engine')(
              'written_docs_total',
            )
            .sum(),
        );
        if (written > 0)
          throw new Error(
            `RethinkDB has ${ids.length} tables named ${db}.${name} (created at once by several processes) and table ${id} already holds documents: remove the extra tables by hand`,
          );
        await run(config.get(id).delete());
      }
    }
    if (single < 2) await new Promise((res) => setTimeout(res, SETTLE_MS));
  }
  await run(r.db(db).table(name).wait({ waitFor: 'all_replicas_ready' }));
}
