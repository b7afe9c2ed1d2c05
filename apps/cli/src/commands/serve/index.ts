/**
 * `wharf serve`: starts @wharf/server's startServer() over a data directory and runs until
 * SIGINT/SIGTERM. The server package is optional: it is imported only here, when asked for.
 */
import type { ServeOptions } from '../../options.js';

const SERVER_PACKAGE = '@wharf/server';

interface ServerModule {
  tuneHeapForIngest(): void;
  startServer(opts: Record<string, unknown>): Promise<{
    http: { host: string; port: number };
    driver: { host: string; port: number } | null;
    close(): Promise<void>;
  }>;
}

export async function runServe(
  o: ServeOptions,
  io: { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream },
): Promise<number> {
  let mod: ServerModule;
  try {
    mod = (await import(SERVER_PACKAGE)) as ServerModule;
  } catch (err) {
    const missing =
      (err as { code?: string }).code === 'ERR_MODULE_NOT_FOUND' &&
      String((err as Error).message).includes(SERVER_PACKAGE);
    io.stderr.write(
      missing
        ? 'wharf serve: the server is not installed. Install @wharf/server (npm install @wharf/server) and run again.\n'
        : `wharf serve: could not load @wharf/server: ${(err as Error).message}\n`,
    );
    return 1;
  }
  if (typeof mod.startServer !== 'function') {
    io.stderr.write('wharf serve: @wharf/server has no startServer(); update it.\n');
    return 1;
  }
  const opts: Record<string, unknown> = { data: o.data };
  if (o.host !== undefined) opts.host = o.host;
  if (o.port !== undefined) opts.httpPort = o.port;
  if (o.driverPort !== undefined) opts.driverPort = o.driverPort;
  if (o.memoryBudgetMb !== undefined) opts.memoryBudgetMb = o.memoryBudgetMb;
  if (o.password !== undefined) opts.password = o.password;
  if (o.allowedHosts !== undefined && o.allowedHosts.length > 0) opts.allowedHosts = o.allowedHosts;
  // This process is the server's: the V8 heap tuning of @wharf/server's own entry point.
  mod.tuneHeapForIngest();
  let handle: Awaited<ReturnType<ServerModule['startServer']>>;
  try {
    handle = await mod.startServer(opts);
  } catch (err) {
    // A refused bind (beyond loopback without a password), a port in use, a bad option: one line.
    io.stderr.write(`wharf serve: ${(err as Error).message}\n`);
    return 1;
  }
  io.stdout.write(
    `wharf serve: data ${o.data}; http + ws on ${handle.http.host}:${handle.http.port}` +
      (handle.driver ? `; rethinkdb driver port ${handle.driver.host}:${handle.driver.port}` : '') +
      '. Ctrl-C to stop.\n',
  );
  // What the engine did differently from what it was asked (an on-disk option it keeps), one line each.
  const db = (handle as { app?: { db?: { stats?(): { openNotes?: string[] } } } }).app?.db;
  for (const note of db?.stats?.().openNotes ?? []) io.stderr.write(`wharf serve: note: ${note}\n`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await handle.close();
  return 0;
}
