/**
 * Primary keys in URLs. Keys are strings or numbers, and a URL can't say which, so:
 * - a path key (`/documents/:key`) is read per `keyType`: `string`, `number`, or `auto`
 *   (the default: a numeric-looking key is tried as a number first, then as a string);
 * - a bound in a query string (`gt`, `after`, …) is JSON when it parses as a JSON string or
 *   number (`42` → 42, `"42"` → "42"), else the raw text (`abc` → "abc").
 */

import type { Key } from '@wharf/engine';
import { WharfServerError } from '../errors.js';

export type KeyType = 'auto' | 'string' | 'number';

/** Candidate keys for a path key, in the order to try them. */
export function pathKeyCandidates(raw: string, keyType: KeyType = 'auto'): Key[] {
  const asNumber = raw.trim() === '' ? NaN : Number(raw);
  if (keyType === 'string') return [raw];
  if (keyType === 'number') {
    if (!Number.isFinite(asNumber))
      throw new WharfServerError('WHARF_ERR_BAD_REQUEST', [`key \`${raw}\` is not a number`]);
    return [asNumber];
  }
  return Number.isFinite(asNumber) ? [asNumber, raw] : [raw];
}

/** A key bound from a query string. */
export function parseBoundKey(raw: string): Key {
  try {
    const v: unknown = JSON.parse(raw);
    if (typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v))) return v;
  } catch {
    // not JSON: the raw text is a string key
  }
  return raw;
}

/** A key as it appears in a paging token (JSON, so its type survives). */
export function encodeBoundKey(key: Key): string {
  return JSON.stringify(key);
}
