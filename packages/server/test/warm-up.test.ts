/**
 * The driver port's warm-up (`rethinkdb/warm-up.ts`): it runs the per-query code on both paths
 * it means to warm (the single-document insert's recognition, a full `runQuery` of an r.expr),
 * writes nothing, and a real server runs it before its driver port opens (and skips it when
 * asked), then serves the official driver as usual.
 */

import type { Database } from '@wharf/engine';
import rethinkdb from 'rethinkdb';
import { afterEach, describe, expect, it } from 'vitest';
import { openTemp } from '../../../test/helpers/temp-database.js';
import { type ServerHandle, startServer } from '../src/index.js';
import { compile } from '../src/rethinkdb/term/compiler.js';
import { singleInsertOf } from '../src/rethinkdb/term/single-insert.js';
import { warmQueryPath } from '../src/rethinkdb/warm-up.js';
import { evaluatorDeps } from './evaluator-deps.js';

const r: any = rethinkdb;

let db: Database | undefined;
let server: ServerHandle | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
  db = undefined; // closed by openTemp's hook
});

describe('warmQueryPath', () => {
  it('takes the single-insert path and the evaluator once per round each, and writes nothing', async () => {
    const temp = await openTemp();
    db = temp.db;
    let writes = 0;
    const deps = evaluatorDeps(db, (p) => {
      writes++;
      return p;
    });
    const before = db.stats();
    expect(await warmQueryPath(deps, 50)).toEqual({ inserts: 50, exprs: 50 });
    expect(writes).toBe(0);
    expect(db.listTables()).toEqual([]);
    const after = db.stats();
    expect(after.fdatasyncs).toBe(before.fdatasyncs);
  });

  it('warms the query the official driver sends for a single insert (the same shape takes the fast path)', () => {
    // The warm-up's insert text stands for this query: if the driver's form stopped taking the
    // single-insert path, the warm-up would warm a path seed 000 no longer uses.
    const doc = { id: 'a', name: 'n', age: 3, score: 1.5, tags: ['a', 'b'], active: true };
    const built = r.table('warm_up').insert(doc, { durability: 'hard' }).build();
    expect(singleInsertOf(compile(built), {})).toBeDefined();
    expect(JSON.stringify(built)).toBe(
      '[56,[[15,["warm_up"]],{"id":"a","name":"n","age":3,"score":1.5,"tags":[2,["a","b"]],"active":true}],{"durability":"hard"}]',
    );
  });
});

describe('a server with the warm-up', () => {
  async function start(driverWarmUp: boolean | undefined): Promise<string[]> {
    const temp = await openTemp();
    db = temp.db;
    const lines: string[] = [];
    server = await startServer({
      database: db,
      httpPort: 0,
      driverPort: 0,
      password: '',
      ...(driverWarmUp === undefined ? {} : { driverWarmUp }),
      logger: { level: 'info', stream: { write: (line: string) => lines.push(line) } } as never,
    });
    return lines;
  }

  it('warms up before its listeners open, by default, then answers the driver and writes only what it is sent', async () => {
    const lines = await start(undefined);
    const warm = lines.findIndex((l) => l.includes('driver port query path warmed up'));
    const listening = lines.findIndex((l) => l.includes('Server listening at'));
    expect(warm).toBeGreaterThanOrEqual(0);
    expect(warm).toBeLessThan(listening);
    expect(JSON.parse(lines[warm] as string)).toMatchObject({ inserts: 2000, exprs: 2000 });
    expect(db!.listTables()).toEqual([]);
    const conn = await r.connect({ host: '127.0.0.1', port: server!.driver!.port });
    try {
      await r.tableCreate('t').run(conn);
      expect(await r.table('t').insert({ id: 1, v: 'x' }, { durability: 'hard' }).run(conn)).toMatchObject({
        inserted: 1,
        errors: 0,
      });
      expect(await r.expr(7).run(conn)).toBe(7);
      expect(await r.table('t').count().run(conn)).toBe(1);
    } finally {
      await conn.close();
    }
    expect(db!.listTables().map((t) => t.name)).toEqual(['t']);
  });

  it('skips the warm-up with driverWarmUp: false', async () => {
    const lines = await start(false);
    expect(lines.some((l) => l.includes('wharf listening'))).toBe(true);
    expect(lines.some((l) => l.includes('warmed up'))).toBe(false);
  });
});
