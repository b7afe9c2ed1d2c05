/**
 * `wharf bench <scenario|all> [--quick]`: the benchmark suite of @wharf/bench. A scenario whose
 * reference system is not installed (the engine, the server, better-sqlite3, pg: optional peer
 * dependencies of @wharf/bench) is skipped with one line saying what to install.
 */
import { fileURLToPath } from 'node:url';
import type { BenchOptions } from '../../options.js';

/** This command's own entry file: the import scenario runs `wharf import` through it. */
const WHARF_BIN = fileURLToPath(new URL('../../../bin/wharf.mjs', import.meta.url));

export async function runBench(
  options: BenchOptions,
  io: { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream },
): Promise<number> {
  // Loaded here, not at start-up: the other commands do not pay for the suite's modules.
  const suite = await import('@wharf/bench');
  try {
    suite.parseScenarios(options.scenario);
  } catch (err) {
    io.stderr.write(`wharf bench: ${(err as Error).message}\n`);
    return 2;
  }
  const { dir, ...rest } = options;
  return suite.runBenchSuite({ ...rest, dataDir: dir, cliBin: WHARF_BIN }, io);
}
