/**
 * GET /ws/stats: one JSON text message per interval (default 1 s) with the same snapshot as
 * GET /api/stats. A subscriber that does not read is skipped while it has more than 1 MiB
 * queued, and disconnected past the outbound limit.
 */

import { closeCodes } from '@wharf/wire';
import type { FastifyInstance } from 'fastify';
import type { WebSocket } from 'ws';
import { statsSnapshot } from '../stats.js';

const SKIP_WHEN_QUEUED = 1024 * 1024;

export default async function statsFeedRoute(app: FastifyInstance): Promise<void> {
  const subscribers = new Set<WebSocket>();
  let timer: NodeJS.Timeout | undefined;

  const broadcast = (): void => {
    if (subscribers.size === 0) return;
    let text: string;
    try {
      text = JSON.stringify(statsSnapshot(app.db, app.wharf));
    } catch (err) {
      app.log.warn({ err }, 'stats snapshot failed');
      return;
    }
    for (const ws of subscribers) {
      if (ws.bufferedAmount > app.wharf.options.limits.outboundBufferBytes) ws.terminate();
      else if (ws.bufferedAmount <= SKIP_WHEN_QUEUED) ws.send(text);
    }
  };

  app.addHook('onClose', async () => {
    if (timer) clearInterval(timer);
    for (const ws of subscribers) ws.close(closeCodes.goingAway, 'server shutting down');
  });

  app.get(
    '/ws/stats',
    {
      websocket: true,
      schema: {
        tags: ['ws'],
        summary: 'WebSocket live stats: a GET /api/stats snapshot as JSON text every second',
        response: { 101: { type: 'null', description: 'Switching Protocols' } },
      },
    },
    (socket) => {
      subscribers.add(socket);
      app.wharf.counters.statsSubscribers = subscribers.size;
      if (!timer) {
        timer = setInterval(broadcast, app.wharf.options.statsIntervalMs);
        timer.unref();
      }
      try {
        socket.send(JSON.stringify(statsSnapshot(app.db, app.wharf)));
      } catch {
        // the next tick retries
      }
      socket.on('message', () => {}); // the feed is one-way; client messages are ignored
      socket.on('error', () => {});
      socket.on('close', () => {
        subscribers.delete(socket);
        app.wharf.counters.statsSubscribers = subscribers.size;
        if (subscribers.size === 0 && timer) {
          clearInterval(timer);
          timer = undefined;
        }
      });
    },
  );
}
