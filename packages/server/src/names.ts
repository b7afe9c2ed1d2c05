/**
 * Table names as the HTTP API and the ws channel accept them. The engine takes 1–127 letters,
 * digits, `_`, `-` and `.`; the server also refuses a `.` at the start or the end and two in a
 * row (`.`, `..`, `.x`, `x.`, `a..b`): the driver port reads `db.table` as a table of database
 * `db`, so such names would be unreachable there, and names that look like paths stay out of the
 * data directory's way. The driver port's own rule (`A-Z a-z 0-9 _ -`) has no dots at all.
 */
import { WharfServerError } from './errors.js';

const ENGINE_NAME = /^[A-Za-z0-9_.-]{1,127}$/;

/**
 * Engine tables whose names start with this are Wharf's own (the driver port's users and
 * function-index definitions): no table list shows them (HTTP, driver port, admin UI), the HTTP
 * API and the driver port neither read nor write them, and no client may create one.
 */
export const HIDDEN_TABLE_PREFIX = '_wharf_';

/** Is this engine table one of Wharf's own (see HIDDEN_TABLE_PREFIX)? */
export function isHiddenTable(name: string): boolean {
  return name.startsWith(HIDDEN_TABLE_PREFIX);
}

/** Why `name` is not a valid table name, or null when it is. */
export function tableNameProblem(name: string): string | null {
  if (!ENGINE_NAME.test(name)) return 'use 1 to 127 letters, digits, `_`, `-` or `.`';
  if (isHiddenTable(name)) return `names starting with \`${HIDDEN_TABLE_PREFIX}\` are Wharf's own`;
  if (name.startsWith('.') || name.endsWith('.') || name.includes('..')) {
    return 'a `.` may not start or end it, nor follow another `.`';
  }
  return null;
}

/** Throws WHARF_ERR_INVALID_ARGUMENT naming the table when its name is not valid. */
export function checkTableName(name: string): void {
  const problem = tableNameProblem(name);
  if (problem !== null) {
    throw new WharfServerError('WHARF_ERR_INVALID_ARGUMENT', [
      `table name ${JSON.stringify(name)} is not valid: ${problem}`,
    ]);
  }
}
