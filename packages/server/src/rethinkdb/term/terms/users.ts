/**
 * GRANT (RethinkDB's clustering/administration/auth/grant.cc): `r.grant(user, perms)`,
 * `r.db(d).grant(…)`, `r.db(d).table(t).grant(…)` set a user's permissions at the global,
 * database or table scope. Each of `read`, `write`, `config` (and, globally, `connect`) is set
 * to true or false, or unset with null; keys not given keep their value. The caller needs `read`
 * and `write` on `rethinkdb.permissions` (admin has them); `admin`'s own permissions are fixed.
 */
import { opFailed } from '../../errors.js';
import { ADMIN, type Permissions, permissionsDatum } from '../../users.js';
import { SYSTEM_DB } from '../catalog.js';
import type { Node } from '../compiler.js';
import type { Datum } from '../datum.js';
import { T } from '../names.js';
import type { TermFamily } from '../registry.js';
import { mergePermissions, PermissionsError } from '../system-tables.js';
import { DbRef, expectType, TableRef } from '../values.js';

export const userTerms: TermFamily = {
  [T.GRANT]: {
    min: 2,
    max: 3,
    eval: async (ev, node, env) => {
      const a = node.args;
      let scope: { db?: string; table?: string } = {};
      if (a.length === 3) {
        const target = await ev.eval(a[0] as Node, env);
        if (target instanceof DbRef) {
          ev.deps.catalog.requireDb(target.name);
          scope = { db: target.name };
        } else if (target instanceof TableRef) scope = { db: target.db, table: target.name };
        else expectType(target, 'TABLE');
      }
      const user = await ev.string(a[a.length - 2] as Node, env);
      const patch = await ev.evalDatum(a[a.length - 1] as Node, env);
      if (user === ADMIN) throw opFailed(`The permissions of the user \`${ADMIN}\` can't be modified.`);
      const access = ev.deps.access;
      access?.require('read', SYSTEM_DB, 'permissions');
      access?.require('write', SYSTEM_DB, 'permissions');
      const users = ev.deps.system?.users;
      if (users === undefined || !users.exists(user)) throw opFailed(`User \`${user}\` not found.`);
      const old = users.permissions(user, scope);
      let next: Permissions;
      try {
        next = mergePermissions(old, patch, scope.db === undefined);
      } catch (err) {
        if (err instanceof PermissionsError) throw opFailed(err.message);
        throw err;
      }
      await ev.deps.trackWrite(users.setPermissions(user, scope, next));
      return {
        granted: 1,
        permissions_changes: [
          {
            new_val: permissionsDatum(next) as Datum,
            old_val: permissionsDatum(old) as Datum,
          },
        ],
      };
    },
  },
};
