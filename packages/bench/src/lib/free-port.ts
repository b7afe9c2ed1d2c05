// A free TCP port on 127.0.0.1 for a server the bench starts (PostgreSQL, RethinkDB).

import { createServer } from 'node:net';

export function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => res(port));
    });
  });
}
