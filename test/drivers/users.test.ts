/**
 * Users, permissions and the `rethinkdb` system tables, through the official `rethinkdb` driver
 * against a real server process (spawn-server.ts).
 */

import rethinkdb from 'rethinkdb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverForSuite } from '../helpers/server-suite.js';
import { removeDir, spawnServer } from '../helpers/spawn-server.js';

// @types/rethinkdb lags the driver (no grant, config…): use it untyped.
type Any = any;
const r: Any = rethinkdb;
type Conn = Any;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('users and permissions', () => {
  const server = serverForSuite({ env: { WHARF_PASSWORD: 'adm1n' } });
  let admin: Conn;
  const connect = (user: string, password: string): Promise<Conn> =>
    r.connect({ host: server().driver.host, port: server().driver.port, user, password });

  beforeAll(async () => {
    admin = await connect('admin', 'adm1n');
  });
  afterAll(() => admin?.close({ noreplyWait: false }).catch(() => {}));

  it('a user inserted into rethinkdb.users logs in with its password; a wrong one fails', async () => {
    const res = await r.db('rethinkdb').table('users').insert({ id: 'alice', password: 'wonder' }).run(admin);
    expect(res).toMatchObject({ inserted: 1, errors: 0 });
    // The table shows whether there is a password, never the password or its hash.
    expect(await r.db('rethinkdb').table('users').orderBy('id').coerceTo('array').run(admin)).toEqual([
      { id: 'admin', password: true },
      { id: 'alice', password: true },
    ]);
    const c = await connect('alice', 'wonder');
    expect(await r.expr(1).add(1).run(c)).toBe(2);
    await c.close();
    await expect(connect('alice', 'wrong')).rejects.toMatchObject({ name: 'ReqlAuthError', msg: 'Wrong password' });
    await expect(connect('nobody', 'x')).rejects.toMatchObject({ name: 'ReqlAuthError', msg: 'Unknown user' });
  });

  it('an update changes the password; a delete removes the user; admin cannot be deleted', async () => {
    await r.db('rethinkdb').table('users').insert({ id: 'bob', password: 'one' }).run(admin);
    const upd = await r.db('rethinkdb').table('users').get('bob').update({ password: 'two' }).run(admin);
    expect(upd).toMatchObject({ replaced: 1, errors: 0 });
    await expect(connect('bob', 'one')).rejects.toMatchObject({ msg: 'Wrong password' });
    const c = await connect('bob', 'two');
    await c.close();
    const del = await r.db('rethinkdb').table('users').get('bob').delete().run(admin);
    expect(del).toMatchObject({ deleted: 1 });
    await expect(connect('bob', 'two')).rejects.toMatchObject({ msg: 'Unknown user' });
    const adminDel = await r.db('rethinkdb').table('users').get('admin').delete().run(admin);
    expect(adminDel).toMatchObject({ deleted: 0, errors: 1, first_error: "The user `admin` can't be deleted." });
    const bad = await r.db('rethinkdb').table('users').insert({ id: 'carol', password: 3 }).run(admin);
    expect(bad.first_error).toBe('Expected an object, string or boolean for `password`, got 3.');
    const extra = await r.db('rethinkdb').table('users').insert({ id: 'carol', password: 'x', role: 1 }).run(admin);
    expect(extra.first_error).toBe('Unexpected key(s) `role`.');
    // `{password, iterations}` chooses the PBKDF2 iteration count the client then uses.
    const iterated = { id: 'carol', password: { password: 'slow', iterations: 1000 } };
    expect(await r.db('rethinkdb').table('users').insert(iterated).run(admin)).toMatchObject({ inserted: 1 });
    const carol = await connect('carol', 'slow');
    await carol.close();
    const zero = await r
      .db('rethinkdb')
      .table('users')
      .get('carol')
      .update({ password: { password: 'x', iterations: 0 } })
      .run(admin);
    expect(zero.first_error).toBe('Expected `iterations` to be an integer greater than zero, got 0.');
  });

  it('r.http needs global connect; ignoreWriteHook needs config on the table', async () => {
    await r.db('rethinkdb').table('users').insert({ id: 'hana', password: 'pw' }).run(admin);
    await r.tableCreate('hooked').run(admin);
    await r
      .table('hooked')
      .setWriteHook((_ctx: Any, _old: Any, doc: Any) => doc.merge({ hooked: true }))
      .run(admin);
    await r.table('hooked').grant('hana', { read: true, write: true }).run(admin);
    const c = await connect('hana', 'pw');
    try {
      // Port 9 (discard) on loopback: the permission is checked before any request is made.
      await expect(r.http('http://127.0.0.1:9/').run(c)).rejects.toMatchObject({
        name: 'ReqlPermissionError',
        msg: 'User `hana` does not have the required `connect` permission.',
      });
      await expect(r.table('hooked').insert({ id: 1 }, { ignoreWriteHook: true }).run(c)).rejects.toMatchObject({
        name: 'ReqlPermissionError',
        msg: 'User `hana` does not have the required `config` permission.',
      });
      expect(await r.table('hooked').insert({ id: 2 }).run(c)).toMatchObject({ inserted: 1 });
      await r.table('hooked').grant('hana', { config: true }).run(admin);
      expect(await r.table('hooked').insert({ id: 3 }, { ignoreWriteHook: true }).run(c)).toMatchObject({
        inserted: 1,
      });
      await r.grant('hana', { connect: true }).run(admin);
      await expect(r.http('http://127.0.0.1:9/').run(c)).rejects.not.toMatchObject({ name: 'ReqlPermissionError' });
    } finally {
      await c.close();
    }
  });

  it('a new user has no permission: reads fail with ReqlPermissionError until granted', async () => {
    await r.db('rethinkdb').table('users').insert({ id: 'dave', password: 'pw' }).run(admin);
    await r.tableCreate('books').run(admin);
    await r
      .table('books')
      .insert([
        { id: 1, t: 'a' },
        { id: 2, t: 'b' },
      ])
      .run(admin);
    const dave = await connect('dave', 'pw');
    try {
      await expect(r.table('books').count().run(dave)).rejects.toMatchObject({
        name: 'ReqlPermissionError',
        msg: 'User `dave` does not have the required `read` permission.',
      });
      await expect(r.table('books').get(1).run(dave)).rejects.toMatchObject({ name: 'ReqlPermissionError' });
      // Reads the engine pages through (table.readPage), with what is pushed into them.
      for (const q of [
        r.table('books').limit(1),
        r.table('books').filter({ t: 'a' }).count(),
        r.table('books').filter(r.row('t').eq('a')).limit(1),
        r.table('books').between(1, 2).count(),
        r.table('books').orderBy({ index: 'id' }).limit(1),
      ])
        await expect(q.run(dave)).rejects.toMatchObject({ name: 'ReqlPermissionError' });
      // Table scope: read only.
      const g = await r.table('books').grant('dave', { read: true }).run(admin);
      expect(g).toEqual({
        granted: 1,
        permissions_changes: [{ old_val: null, new_val: { read: true } }],
      });
      expect(await r.table('books').count().run(dave)).toBe(2);
      await expect(r.table('books').insert({ id: 3 }).run(dave)).rejects.toMatchObject({
        name: 'ReqlPermissionError',
        msg: 'User `dave` does not have the required `write` permission.',
      });
      await expect(r.table('books').delete().run(dave)).rejects.toMatchObject({ name: 'ReqlPermissionError' });
      await expect(r.table('books').sync().run(dave)).rejects.toMatchObject({
        msg: 'User `dave` does not have the required `write` permission.',
      });
      await expect(r.table('books').indexCreate('t').run(dave)).rejects.toMatchObject({
        msg: 'User `dave` does not have the required `config` permission.',
      });
      expect(await r.table('books').count().run(admin)).toBe(2);
      // Database scope: write on every table of `test`.
      await r.db('test').grant('dave', { write: true }).run(admin);
      expect(await r.table('books').insert({ id: 3 }).run(dave)).toMatchObject({ inserted: 1 });
      // The narrowest scope decides: false on the table beats true on the database.
      await r.table('books').grant('dave', { write: false }).run(admin);
      await expect(r.table('books').insert({ id: 4 }).run(dave)).rejects.toMatchObject({
        name: 'ReqlPermissionError',
      });
      // Global scope: config lets dave create databases.
      await expect(r.dbCreate('daves').run(dave)).rejects.toMatchObject({
        msg: 'User `dave` does not have the required `config` permission.',
      });
      await r.grant('dave', { config: true }).run(admin);
      expect(await r.dbCreate('daves').run(dave)).toMatchObject({ dbs_created: 1 });
      // Global permissions do not reach the system database.
      await r.grant('dave', { read: true }).run(admin);
      await expect(r.db('rethinkdb').table('users').run(dave)).rejects.toMatchObject({
        msg: 'User `dave` does not have the required `read` permission.',
      });
      // Granted on `rethinkdb`, the system tables can be read, but `_debug_scratch` stays admin's.
      await r.db('rethinkdb').grant('dave', { read: true }).run(admin);
      expect(await r.db('rethinkdb').table('users').get('dave').run(dave)).toEqual({ id: 'dave', password: true });
      await expect(r.db('rethinkdb').table('_debug_scratch').count().run(dave)).rejects.toMatchObject({
        name: 'ReqlPermissionError',
        msg: 'Internal permission error, required `admin` permission.',
      });
      await r.db('rethinkdb').grant('dave', { read: null }).run(admin);
      // The system tables show what was granted.
      const rows = await r.db('rethinkdb').table('permissions').filter({ user: 'dave' }).orderBy('id').run(admin);
      expect(rows).toEqual([
        { id: ['dave'], user: 'dave', permissions: { read: true, config: true } },
        expect.objectContaining({ user: 'dave', database: 'test', permissions: { write: true } }),
        expect.objectContaining({
          user: 'dave',
          database: 'test',
          table: 'books',
          permissions: { read: true, write: false },
        }),
      ]);
    } finally {
      await dave.close();
    }
  });

  it('grant checks its arguments with RethinkDB’s texts', async () => {
    await r.db('rethinkdb').table('users').insert({ id: 'erin', password: false }).run(admin);
    await expect(r.grant('erin', { read: 1 }).run(admin)).rejects.toMatchObject({
      name: 'ReqlOpFailedError',
      msg: 'Expected a boolean or null for `read`, got 1.',
    });
    await expect(r.grant('erin', { bad: true }).run(admin)).rejects.toMatchObject({
      msg: 'Unexpected key(s) `bad`.',
    });
    await expect(r.db('test').grant('erin', { connect: true }).run(admin)).rejects.toMatchObject({
      msg: 'The `connect` permission is only valid at the global scope.',
    });
    await expect(r.grant('admin', { read: false }).run(admin)).rejects.toMatchObject({
      msg: "The permissions of the user `admin` can't be modified.",
    });
    await expect(r.grant('nobody', { read: true }).run(admin)).rejects.toMatchObject({
      msg: 'User `nobody` not found.',
    });
    await r.grant('erin', { read: true, write: true }).run(admin);
    expect(await r.grant('erin', { read: null }).run(admin)).toEqual({
      granted: 1,
      permissions_changes: [{ old_val: { read: true, write: true }, new_val: { write: true } }],
    });
    // A user without a password logs in with the empty one (this test runs on loopback).
    const c = await connect('erin', '');
    await c.close();
  });

  it('hidden tables are in no table list, neither over the driver nor over HTTP', async () => {
    await r
      .table('books')
      .indexCreate('pair', (d: Any) => [d('t'), d('id')])
      .run(admin);
    const res = await fetch(`${server().url}/api/tables`, {
      headers: { authorization: `Bearer adm1n` },
    });
    const body = (await res.json()) as { tables: { name: string }[] };
    const names = body.tables.map((t) => t.name);
    expect(names).toContain('books');
    expect(names.filter((n) => n.startsWith('_wharf_'))).toEqual([]);
    const one = await fetch(`${server().url}/api/tables/_wharf_users/documents`, {
      headers: { authorization: `Bearer adm1n` },
    });
    expect(one.status).toBe(404);
    const create = await fetch(`${server().url}/api/tables`, {
      method: 'POST',
      headers: { authorization: 'Bearer adm1n', 'content-type': 'application/json' },
      body: JSON.stringify({ name: '_wharf_mine' }),
    });
    expect(create.status).toBe(400);
    expect(((await create.json()) as { message: string }).message).toContain('`_wharf_` are Wharf');
    await expect(r.tableCreate('_wharf_mine').run(admin)).rejects.toMatchObject({
      msg: "Table name `_wharf_mine` invalid (names starting with `_wharf_` are Wharf's own).",
    });
    expect(await r.db('test').tableList().run(admin)).not.toContain('_wharf_users');
    await expect(r.table('_wharf_users').count().run(admin)).rejects.toMatchObject({
      msg: 'Table `test._wharf_users` does not exist.',
    });
    await expect(r.table('_wharf_users').insert({ id: 'x' }).run(admin)).rejects.toMatchObject({
      msg: 'Table `test._wharf_users` does not exist.',
    });
  });

  it('system tables have RethinkDB’s shapes', async () => {
    expect(await r.db('rethinkdb').tableList().run(admin)).toEqual([
      'cluster_config',
      'current_issues',
      'db_config',
      'jobs',
      'logs',
      'permissions',
      'server_config',
      'server_status',
      'stats',
      'table_config',
      'table_status',
      'users',
    ]);
    const config = await r.db('rethinkdb').table('table_config').filter({ name: 'books' }).nth(0).run(admin);
    expect(config).toEqual(await r.table('books').config().run(admin));
    const status = await r.db('rethinkdb').table('table_status').filter({ name: 'books' }).nth(0).run(admin);
    expect(status).toEqual(await r.table('books').status().run(admin));
    const byUuid = await r
      .db('rethinkdb')
      .table('table_config', { identifierFormat: 'uuid' })
      .filter({ name: 'books' })
      .nth(0)
      .run(admin);
    expect(byUuid.db).toMatch(UUID);
    expect(await r.db('rethinkdb').table('db_config').filter({ name: 'test' }).nth(0).run(admin)).toEqual(
      await r.db('test').config().run(admin),
    );
    const [serverConfig] = await r.db('rethinkdb').table('server_config').coerceTo('array').run(admin);
    expect(serverConfig).toMatchObject({ cache_size_mb: 'auto', tags: ['default'] });
    expect(serverConfig.id).toMatch(UUID);
    const [serverStatus] = await r.db('rethinkdb').table('server_status').coerceTo('array').run(admin);
    expect(serverStatus.network.reql_port).toBe(server().driver.port);
    expect(serverStatus.process.pid).toBeGreaterThan(0);
    expect(await r.db('rethinkdb').table('cluster_config').coerceTo('array').run(admin)).toEqual([
      { id: 'heartbeat', heartbeat_timeout_secs: 10 },
    ]);
    expect(await r.db('rethinkdb').table('current_issues').count().run(admin)).toBe(0);
    // The query reading `jobs` is itself being evaluated.
    const jobs = await r.db('rethinkdb').table('jobs').filter({ type: 'query' }).coerceTo('array').run(admin);
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({ type: 'query', info: { user: 'admin', client_address: expect.any(String) } });
    expect(jobs[0].id[0]).toBe('query');
    // Read as a stream too: the query is a job until its cursor is done.
    const streamed = await (await r.db('rethinkdb').table('jobs').run(admin)).toArray();
    expect(streamed.map((j: Any) => j.type)).toEqual(['query']);
    const stats = await r.db('rethinkdb').table('stats').get(['cluster']).run(admin);
    expect(stats.query_engine.client_connections).toBeGreaterThanOrEqual(1);
    const [serverStats] = await r
      .db('rethinkdb')
      .table('stats')
      .filter({ server: serverConfig.name })
      .coerceTo('array')
      .run(admin);
    expect(serverStats.id).toEqual(['server', serverConfig.id]);
    // Earlier tests of this file ran queries and wrote documents.
    expect(serverStats.query_engine.queries_total).toBeGreaterThan(10);
    expect(serverStats.query_engine.written_docs_total).toBeGreaterThan(0);
    expect(serverStats.query_engine.queries_per_sec).toBeGreaterThanOrEqual(0);
    // Read-only tables refuse writes as RethinkDB does, row by row.
    const w = await r.db('rethinkdb').table('table_status').delete().run(admin);
    expect(w.first_error).toBe("It's illegal to write to the `rethinkdb.table_status` table.");
    await expect(r.db('rethinkdb').table('stats').indexCreate('x').run(admin)).rejects.toMatchObject({
      msg: "Database `rethinkdb` is special; you can't create secondary indexes on the tables in it.",
    });
    // _debug_scratch takes any document.
    expect(await r.db('rethinkdb').table('_debug_scratch').insert({ id: 1, v: 'x' }).run(admin)).toMatchObject({
      inserted: 1,
    });
    expect(await r.db('rethinkdb').table('_debug_scratch').get(1).run(admin)).toEqual({ id: 1, v: 'x' });
  });

  it('dropping a table forgets its grants: a new table of that name starts with none', async () => {
    await r.db('rethinkdb').table('users').insert({ id: 'gina', password: 'pw' }).run(admin);
    const grantsOf = () => r.db('rethinkdb').table('permissions').filter({ user: 'gina' }).coerceTo('array').run(admin);
    for (const drop of ['reql', 'http']) {
      await r.tableCreate('scratch').run(admin);
      await r.table('scratch').grant('gina', { read: true }).run(admin);
      expect(await grantsOf()).toHaveLength(1);
      if (drop === 'reql') await r.tableDrop('scratch').run(admin);
      else {
        const res = await fetch(`${server().url}/api/tables/scratch`, {
          method: 'DELETE',
          headers: { authorization: 'Bearer adm1n' },
        });
        expect(res.status).toBe(200);
      }
      await r.tableCreate('scratch').run(admin);
      expect(await grantsOf()).toEqual([]);
      const gina = await connect('gina', 'pw');
      await expect(r.table('scratch').count().run(gina)).rejects.toMatchObject({ name: 'ReqlPermissionError' });
      await gina.close();
      await r.tableDrop('scratch').run(admin);
    }
  });

  it('a changefeed on a system table sees the writes made through it', async () => {
    const feed = await r.db('rethinkdb').table('_debug_scratch').changes().run(admin);
    try {
      await r.db('rethinkdb').table('_debug_scratch').insert({ id: 'f', n: 1 }).run(admin);
      await r.db('rethinkdb').table('_debug_scratch').get('f').update({ n: 2 }).run(admin);
      expect(await feed.next()).toEqual({ old_val: null, new_val: { id: 'f', n: 1 } });
      expect(await feed.next()).toEqual({ old_val: { id: 'f', n: 1 }, new_val: { id: 'f', n: 2 } });
    } finally {
      await feed.close();
    }
  });

  it('table_config and db_config create and drop tables and databases', async () => {
    const created = await r.db('rethinkdb').table('table_config').insert({ db: 'test', name: 'made' }).run(admin);
    expect(created).toMatchObject({ inserted: 1, errors: 0 });
    expect(await r.tableList().run(admin)).toContain('made');
    const renamed = await r
      .db('rethinkdb')
      .table('table_config')
      .filter({ name: 'made' })
      .update({ name: 'x' })
      .run(admin);
    expect(renamed.errors).toBe(1);
    const rekeyed = await r
      .db('rethinkdb')
      .table('table_config')
      .filter({ name: 'made' })
      .update({ primary_key: 'k' })
      .run(admin);
    expect(rekeyed.first_error).toBe("It's illegal to change a table's primary key");
    const dropped = await r.db('rethinkdb').table('table_config').filter({ name: 'made' }).delete().run(admin);
    expect(dropped).toMatchObject({ deleted: 1 });
    expect(await r.tableList().run(admin)).not.toContain('made');
    await r.db('rethinkdb').table('db_config').insert({ name: 'viaconfig' }).run(admin);
    expect(await r.dbList().run(admin)).toContain('viaconfig');
  });
});

describe('the users table survives a restart', () => {
  it('a user and its grants are there after a restart, and still log in', async () => {
    const first = await spawnServer();
    const dataDir = first.dataDir;
    try {
      const c = await r.connect({ host: first.driver.host, port: first.driver.port });
      await r.db('rethinkdb').table('users').insert({ id: 'frank', password: 'durable' }).run(c);
      await r.tableCreate('kept').run(c);
      await r.table('kept').grant('frank', { read: true }).run(c);
      await c.close();
    } finally {
      await first.stop('SIGTERM');
    }
    const second = await spawnServer({ dataDir });
    try {
      const frank = await r.connect({
        host: second.driver.host,
        port: second.driver.port,
        user: 'frank',
        password: 'durable',
      });
      expect(await r.table('kept').count().run(frank)).toBe(0);
      await expect(r.table('kept').insert({}).run(frank)).rejects.toMatchObject({ name: 'ReqlPermissionError' });
      await frank.close();
    } finally {
      await second.stop('SIGKILL');
      removeDir(dataDir);
    }
  });
});
