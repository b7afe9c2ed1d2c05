/**
 * The servers a reference test asks the same queries of: Wharf (a server for the file, see
 * server-suite.ts) always, and a real RethinkDB when env RETHINKDB_BIN names its binary (its
 * cases are skipped, with one warning, otherwise). Call at a test file's top level.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type RethinkdbProc, startRethinkdb } from '@wharf/bench/rethinkdb';
import { afterAll, beforeAll } from 'vitest';
import { serverForSuite } from './server-suite.js';

/** [name, driver port, enabled], for `describe.each`. */
export type ReferenceTarget = [name: string, port: () => number, enabled: boolean];

export function referenceTargets(file: string): ReferenceTarget[] {
  const bin = process.env.RETHINKDB_BIN;
  if (!bin) console.warn(`${file}: RETHINKDB_BIN is not set, the real RethinkDB cases are skipped`);
  const wharf = serverForSuite();
  let reference: RethinkdbProc | undefined;
  beforeAll(async () => {
    if (bin) reference = await startRethinkdb(bin, mkdtempSync(join(tmpdir(), 'wharf-reference-')));
  }, 120_000);
  afterAll(async () => {
    await reference?.stop();
  });
  return [
    ['Wharf', () => wharf().driver.port, true],
    ['RethinkDB (RETHINKDB_BIN)', () => (reference as RethinkdbProc).driverPort, !!bin],
  ];
}
