/**
 * Kill -9 a writer at random moments; every write it saw acknowledged must survive.
 *
 * Each round starts fixtures/crash-writer.ts on the same directory, lets it write with hard
 * durability for a random while (or kills it while it is still opening, i.e. during recovery),
 * SIGKILLs it, then reopens the database here and checks that every acknowledged document is
 * present with its exact content and that no stored document is damaged. A failing round prints
 * its seed; set WHARF_CRASH_SEED to replay a run.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { Database } from '../src/index.ts';
import { CRASH_OPTIONS, type CrashDoc, mulberry32, sha256 } from './fixtures/crash-docs.ts';
import { tempDir } from './helpers.ts';

const ROUNDS = 24;
const WRITER = fileURLToPath(new URL('./fixtures/crash-writer.ts', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url));

/** Runs one writer and SIGKILLs it; resolves with the documents it reported as acknowledged. */
function runWriter(dir: string, seed: number, random: () => number): Promise<Map<string, string>> {
  const child = spawn(process.execPath, ['--import', 'tsx', WRITER, dir, String(seed)], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const acknowledged = new Map<string, string>();
  const killEarly = random() < 0.2;
  const delayMs = Math.floor(random() * (killEarly ? 800 : 300));
  let killed = false;
  let pending = '';
  let stderr = '';
  const kill = () => {
    killed = true;
    child.kill('SIGKILL');
  };
  if (killEarly) setTimeout(kill, delayMs);

  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    const lines = (pending + chunk).split('\n');
    pending = lines.pop()!; // a line cut short by the kill has no newline and is ignored
    for (const line of lines) {
      if (line === 'ready') {
        if (!killEarly) setTimeout(kill, delayMs);
        continue;
      }
      const [key, hash] = line.split(' ');
      acknowledged.set(key!, hash!);
    }
  });
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => (stderr += chunk));

  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (!killed || signal !== 'SIGKILL') {
        reject(new Error(`writer (seed ${seed}) exited on its own: code ${code}, signal ${signal}\n${stderr}`));
      } else {
        resolve(acknowledged);
      }
    });
  });
}

it(`every acknowledged hard write survives SIGKILL (${ROUNDS} rounds)`, { timeout: 180_000 }, async () => {
  const dir = await tempDir();
  const baseSeed = Number(process.env.WHARF_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));
  const random = mulberry32(baseSeed);
  const acknowledged = new Map<string, string>();
  let roundsWithWrites = 0;

  for (let round = 0; round < ROUNDS; round++) {
    const seed = baseSeed + round;
    const context = `crash round ${round} (WHARF_CRASH_SEED=${baseSeed}, writer seed ${seed})`;
    const written = await runWriter(dir, seed, random);
    for (const [key, hash] of written) acknowledged.set(key, hash);
    if (written.size > 0) roundsWithWrites++;

    // Reopening is the recovery under test: it must succeed, then every acknowledged document
    // must be there, byte for byte, and every stored document must be whole.
    let db: Database | undefined;
    try {
      db = await Database.open(dir, CRASH_OPTIONS);
      // The first writer may have died before it created the table.
      const hasTable = db.listTables().some((t) => t.name === 'docs');
      const docs = hasTable ? await db.table<CrashDoc>('docs').scan() : [];
      const stored = new Map(docs.map((d) => [d.id, d]));
      for (const doc of docs) {
        expect(sha256(doc.payload), `damaged document ${doc.id}`).toBe(doc.sum);
      }
      for (const [key, hash] of acknowledged) {
        const doc = stored.get(key);
        expect(doc, `acknowledged document ${key} is missing`).toBeDefined();
        expect(sha256(JSON.stringify(doc)), `document ${key} differs`).toBe(hash);
      }
    } catch (error) {
      throw new Error(`${context}: ${(error as Error).message}`, { cause: error });
    } finally {
      await db?.close();
    }
  }

  // The test must have tested something: most rounds acknowledged writes before the kill.
  expect(roundsWithWrites).toBeGreaterThanOrEqual(ROUNDS / 2);
  expect(acknowledged.size).toBeGreaterThan(100);
});
