/**
 * The `wharf` command: parse (pure) → run the programmatic API → exit status.
 * src/bin.ts (the `wharf` command) calls main().
 */

import { exitCodeOf } from '@wharf/client';
import { runBench } from './commands/bench/index.js';
import { runGen } from './commands/gen/index.js';
import { runImport } from './commands/import/index.js';
import { runJob, runJobStatus } from './commands/import/job.js';
import { EXIT } from './commands/import/report.js';
import { runServe } from './commands/serve/index.js';
import { parse } from './parse.js';

export async function main(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const parsed = parse(argv, env);
  switch (parsed.command) {
    case 'output':
      process.stdout.write(parsed.text);
      return parsed.exitCode;
    case 'error':
      process.stderr.write(`${parsed.message}\n`);
      return parsed.exitCode;
    case 'gen':
      try {
        return await runGen(parsed.options, process.stdout);
      } catch (err) {
        process.stderr.write(`wharf gen: ${(err as Error).message}\n`);
        return EXIT.failed;
      }
    case 'serve':
      return runServe(parsed.options, { stdout: process.stdout, stderr: process.stderr });
    case 'bench':
      return runBench(parsed.options, { stdout: process.stdout, stderr: process.stderr });
    case 'import': {
      // First Ctrl-C: stop reading, finish what was read, keep the checkpoint. Second: exit now.
      const ac = new AbortController();
      const onSigint = () => {
        if (ac.signal.aborted) process.exit(EXIT.interrupted);
        ac.abort();
        process.stderr.write(
          '\nwharf import: interrupted; finishing the batches in flight (Ctrl-C again to quit at once)\n',
        );
      };
      process.on('SIGINT', onSigint);
      process.on('SIGTERM', onSigint);
      const io = {
        stdin: process.stdin,
        stdout: process.stdout,
        stderr: process.stderr,
        isTTY: process.stderr.isTTY === true,
        signal: ac.signal,
      };
      try {
        const o = parsed.options;
        if (o.job !== undefined) return o.status ? await runJobStatus(o, io) : (await runJob(o, io)).exitCode;
        return (await runImport(o, io)).exitCode;
      } catch (err) {
        // The error's code decides the status (docs/ERRORS.md): a UsageError is WHARF_ERR_USAGE, 2.
        process.stderr.write(`wharf import: ${(err as Error).message}\n`);
        return exitCodeOf((err as { code?: unknown }).code);
      } finally {
        process.off('SIGINT', onSigint);
        process.off('SIGTERM', onSigint);
      }
    }
  }
}
