/**
 * `npm start` / `tsx packages/server/src/main.ts --data DIR [options]`: run the server until
 * SIGTERM or SIGINT, then shut down gracefully (stop accepting, answer in-flight work, sync,
 * close) and exit 0. `wharf serve` calls startServer() directly instead.
 */
import { pathToFileURL } from 'node:url';
import { tuneHeapForIngest } from './heap.js';
import type { ServerOptions } from './options.js';
import { startServer } from './start.js';

export const USAGE = `Usage: wharf-server --data DIR [options]

  --data DIR            data directory (created if absent)                   required
  --host ADDR           interface for every listener                          127.0.0.1
  --http-port N         HTTP API + WebSocket port (0: any free port)          8080
  --driver-port N|off   RethinkDB driver port (0: any free port)              28015
  --password TEXT       admin password: driver port, HTTP and ws (prefer env WHARF_PASSWORD);
                        required to listen beyond loopback
  --allowed-host NAME   a Host name to answer besides localhost, IP literals and this machine's
                        name (repeatable; env WHARF_ALLOWED_HOSTS, comma-separated; * for any)
  --server-name NAME    name reported to drivers                              wharf
  --memory-budget-mb N  engine memory for memtables and block cache (MiB; env WHARF_MEMORY_BUDGET_MB)  256
  --log-level LEVEL     fatal|error|warn|info|debug|trace|silent              info
  --limit NAME=N        change one documented limit (repeatable), e.g. --limit httpBodyBytes=1048576
  --no-reql-push-down   evaluate ReQL filters, limits and counts in JS over whole reads (diagnosis)
  --help                print this help`;

function value(args: string[], i: number, flag: string): string {
  const v = args[i + 1];
  if (v === undefined || v.startsWith('--')) throw new Error(`${flag} needs a value`);
  return v;
}

function port(text: string, flag: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new Error(`${flag} must be a port number 0..65535, got ${text}`);
  return n;
}

/** Parse command-line arguments (pure; throws Error with a message for the user). */
export function parseArgs(args: string[]): ServerOptions | 'help' {
  const opts: ServerOptions = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    const [flag, inline] = a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    const next = (): string => {
      if (inline !== undefined) return inline;
      const v = value(args, i, flag);
      i++;
      return v;
    };
    switch (flag) {
      case '--help':
      case '-h':
        return 'help';
      case '--data':
        opts.data = next();
        break;
      case '--host':
        opts.host = next();
        break;
      case '--http-port':
        opts.httpPort = port(next(), flag);
        break;
      case '--driver-port': {
        const v = next();
        opts.driverPort = v === 'off' ? false : port(v, flag);
        break;
      }
      case '--password':
        opts.password = next();
        break;
      case '--allowed-host':
        opts.allowedHosts = [...(opts.allowedHosts ?? []), next()];
        break;
      case '--no-reql-push-down':
        opts.reqlPushDown = false;
        break;
      case '--server-name':
        opts.serverName = next();
        break;
      case '--log-level':
        opts.logger = { level: next() };
        break;
      case '--memory-budget-mb': {
        const v = next();
        const n = Number(v);
        if (!(n >= 4)) throw new Error(`--memory-budget-mb must be a number of MiB, at least 4, got ${v}`);
        opts.memoryBudgetMb = n;
        break;
      }
      case '--limit': {
        const v = next();
        const eq = v.indexOf('=');
        const n = Number(v.slice(eq + 1));
        if (eq <= 0 || !(n > 0)) throw new Error(`--limit takes NAME=N with a positive N, got ${v}`);
        opts.limits = { ...opts.limits, [v.slice(0, eq)]: n };
        break;
      }
      default:
        throw new Error(`unknown option ${a}`);
    }
  }
  if (!opts.data) throw new Error('--data DIR is required');
  return opts;
}

/** Exit status after a shutdown that found the engine poisoned (a clean drain exits 0). */
export const EXIT_POISONED = 3;

export function poisonedExitLine(cause: string): string {
  return `stopped with the engine poisoned by an I/O failure, so writes after it were refused: ${cause}`;
}

export async function main(argv: string[] = process.argv.slice(2)): Promise<void> {
  let opts: ServerOptions | 'help';
  try {
    opts = parseArgs(argv);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${USAGE}\n`);
    process.exit(2);
  }
  if (opts === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  tuneHeapForIngest();
  let handle: Awaited<ReturnType<typeof startServer>>;
  try {
    handle = await startServer(opts);
  } catch (err) {
    // A bad option, a port in use, a bind refused without a password: one line, no stack.
    process.stderr.write(`wharf-server: ${(err as Error).message}\n`);
    process.exit(1);
  }
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    handle.app.log.info({ signal }, 'shutting down');
    handle.close().then(
      () => {
        const poisoned = handle.app.wharf.poisonedAtClose;
        if (poisoned === null) process.exit(0);
        process.stderr.write(`wharf-server: ${poisonedExitLine(poisoned)}\n`);
        process.exit(EXIT_POISONED);
      },
      (err: unknown) => {
        process.stderr.write(`wharf-server: shutdown failed: ${(err as Error).message}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

const entry = process.argv[1];
if (entry !== undefined && import.meta.url === pathToFileURL(entry).href) {
  main().catch((err: unknown) => {
    process.stderr.write(`wharf-server: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
