/**
 * `wharf bench <scenario|all> [--quick]`: the benchmark suite. The scenarios live in the repository
 * (scripts/bench/scenarios/, with the shared helpers of scripts/bench/lib/ and the Rust examples of
 * packages/engine/core/examples/), so this command runs from a clone: it finds the repository root
 * above this file and loads the suite from there, its TypeScript through the clone's tsx.
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { BenchOptions } from '../../options.js';

/** What this command calls of scripts/bench/scenarios/index.ts. */
interface Suite {
  parseScenarios(spec: string): unknown;
  runBenchSuite(root: string, o: Record<string, unknown>, io: { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream }): Promise<number>;
}

const SUITE = 'scripts/bench/scenarios/index.ts';

/** The repository root: the nearest directory above this file that holds the suite. */
export function findRepoRoot(from = dirname(fileURLToPath(import.meta.url))): string | undefined {
  for (let d = resolve(from); ; d = dirname(d)) {
    if (existsSync(join(d, SUITE))) return d;
    if (dirname(d) === d) return undefined;
  }
}

export async function runBench(
  options: BenchOptions,
  io: { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream },
): Promise<number> {
  const root = findRepoRoot();
  if (!root) {
    io.stderr.write('wharf bench: the benchmark suite runs from a clone of the Wharf repository (git clone, npm install, npx wharf bench); this install has none.\n');
    return 1;
  }
  await import(pathToFileURL(join(root, 'scripts/bench/register-tsx.mjs')).href);
  const suite = (await import(pathToFileURL(join(root, SUITE)).href)) as Suite;
  try {
    suite.parseScenarios(options.scenario);
  } catch (err) {
    io.stderr.write(`wharf bench: ${(err as Error).message}\n`);
    return 2;
  }
  return suite.runBenchSuite(
    root,
    {
      scenario: options.scenario,
      quick: options.quick,
      out: options.out,
      dataDir: options.dir,
      rounds: options.rounds,
      minutes: options.minutes,
      memoryBudgetMb: options.memoryBudgetMb,
      docs: options.docs,
      blocks: options.blocks,
      kvPuts: options.kvPuts,
      kvJsPuts: options.kvJsPuts,
    },
    io,
  );
}
