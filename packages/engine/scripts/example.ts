/**
 * Quick start: load generated documents through the bulk NDJSON path with soft durability and
 * one final sync(), then print what happened.
 *
 *   npx tsx packages/engine/scripts/example.ts [documents=200000] [dir]
 *
 * Without `dir`, the database lives in a temporary directory that is removed afterwards.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Database } from '../src/index.ts';

const count = Number(process.argv[2] ?? 200_000);
if (!Number.isSafeInteger(count) || count < 1)
  throw new Error(`documents must be a positive integer, got ${process.argv[2]}`);
const keep = process.argv[3] !== undefined;
const dir = process.argv[3] ?? (await mkdtemp(join(tmpdir(), 'wharf-example-')));
const BATCH = 10_000; // documents per NDJSON buffer: one crossing into Rust each

/** One NDJSON buffer of `n` documents of about 150 bytes, keys starting at `first`. */
function batch(first: number, n: number): Buffer {
  const lines: string[] = [];
  for (let i = first; i < first + n; i++) {
    lines.push(
      JSON.stringify({
        id: i,
        name: `user-${i.toString(36)}`,
        email: `user${i}@example.com`,
        score: (i * 7919) % 1000,
        tags: ['alpha', 'beta', 'gamma'].slice(0, 1 + (i % 3)),
        createdAt: new Date(1_700_000_000_000 + i * 1000).toISOString(),
      }),
    );
  }
  return Buffer.from(lines.join('\n'));
}

const db = await Database.open(dir);
try {
  if (!db.listTables().some((t) => t.name === 'users')) await db.createTable('users');
  const users = db.table('users');

  const started = performance.now();
  const writes = [];
  let bytes = 0;
  for (let first = 0; first < count; first += BATCH) {
    const data = batch(first, Math.min(BATCH, count - first));
    bytes += data.length;
    writes.push(users.insertNdjson(data, { durability: 'soft', conflict: 'replace' }));
  }
  const results = await Promise.all(writes);
  await db.sync(); // everything acknowledged above is now durable
  const seconds = (performance.now() - started) / 1000;

  const total = (field: 'inserted' | 'replaced' | 'unchanged' | 'errors') =>
    results.reduce((sum, r) => sum + r[field], 0);
  console.log(`database:   ${dir}${keep ? '' : ' (temporary)'}`);
  console.log(
    `loaded:     ${count} documents (${(bytes / 2 ** 20).toFixed(1)} MiB of NDJSON) in ${seconds.toFixed(2)} s` +
      ` = ${Math.round(count / seconds)} docs/s, soft writes + one sync()`,
  );
  console.log(
    `results:    inserted ${total('inserted')}, replaced ${total('replaced')}, ` +
      `unchanged ${total('unchanged')}, errors ${total('errors')}`,
  );
  console.log(`table:      ${JSON.stringify(db.listTables())}`);
  console.log(`first doc:  ${JSON.stringify(await users.get(0))}`);
  console.log('stats:', db.stats());
} finally {
  await db.close();
  if (!keep) await rm(dir, { recursive: true, force: true });
}
