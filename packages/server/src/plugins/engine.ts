/**
 * Opens the database (or takes the injected one) and decorates the instance with `db` and
 * `wharf` (server state). Registered first, so its onClose runs last: after every listener has
 * stopped accepting, it waits for in-flight writes, syncs, and closes the database it opened.
 */

import type { Database, OpenOptions } from '@wharf/engine';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { engineCodeOf } from '../errors.js';
import type { ServerState } from '../state.js';

declare module 'fastify' {
  interface FastifyInstance {
    db: Database;
    wharf: ServerState;
  }
}

export interface EnginePluginOptions {
  state: ServerState;
}

/**
 * Opens the database. `@wharf/engine` is imported here, on first use, so loading the server's
 * modules does not load the native addon.
 */
export async function openDatabase(dir: string, options: OpenOptions): Promise<Database> {
  const engine = await import('@wharf/engine');
  return engine.Database.open(dir, options);
}

async function enginePlugin(app: FastifyInstance, { state }: EnginePluginOptions): Promise<void> {
  const { options } = state;
  const owned = options.database === undefined;
  const db = options.database ?? (await openDatabase(options.data as string, options.engine));
  app.decorate('db', db);
  app.decorate('wharf', state);

  app.addHook('preClose', async () => {
    state.closing = true;
  });
  app.addHook('onClose', async () => {
    await state.writes.drain();
    // A poisoned engine is a known state, not a crash: note it (one line, no stack) and still
    // close; the process exits non-zero (main.ts) and a restart replays the journal.
    const poisoned = (err: unknown): boolean => {
      if (engineCodeOf(err) !== 'WHARF_ERR_POISONED') return false;
      state.poisonedAtClose ??= (err as Error).message;
      return true;
    };
    try {
      await db.sync();
    } catch (err) {
      if (!poisoned(err)) app.log.error({ err }, 'final sync failed');
    }
    try {
      if (db.stats().poisoned === true) state.poisonedAtClose ??= 'an earlier journal write or fdatasync failed';
    } catch {
      // stats of a closed database: nothing more to learn
    }
    if (owned) {
      try {
        await db.close();
      } catch (err) {
        if (!poisoned(err)) throw err;
      }
    }
    state.eventLoop.close();
    state.gc.close();
    if (state.poisonedAtClose !== null)
      app.log.error({ code: 'WHARF_ERR_POISONED' }, `database closed poisoned: ${state.poisonedAtClose}`);
    else app.log.info('database synced and closed');
  });
}

export default fp(enginePlugin, { name: 'wharf-engine', fastify: '5.x' });
