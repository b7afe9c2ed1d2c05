// Every method of the engine's Table has a permission rule: the guard refuses unlisted methods for
// non-admin users, so a method added to the engine without one fails here before it fails users.
import { Table } from '@wharf/engine';
import { describe, expect, it } from 'vitest';
import { TABLE_METHOD_PERMISSIONS } from '../src/rethinkdb/users.js';

describe('table permissions', () => {
  it('classifies every public method of the engine table', () => {
    const methods = Object.getOwnPropertyNames(Table.prototype).filter(
      (m) => m !== 'constructor' && typeof Object.getOwnPropertyDescriptor(Table.prototype, m)?.value === 'function',
    );
    expect(methods.length).toBeGreaterThan(10);
    expect(methods.filter((m) => !Object.hasOwn(TABLE_METHOD_PERMISSIONS, m))).toEqual([]);
  });
});
