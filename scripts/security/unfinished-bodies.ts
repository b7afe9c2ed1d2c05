/**
 * The reproduction of unbounded buffering: N connections (default 20) each send the
 * headers of a 60 MiB body and most of it, then stall. Prints the server's RSS before and after,
 * and what each connection got. `node --import tsx scripts/security/unfinished-bodies.ts [N]`.
 */
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { removeDir, spawnServer } from '../../test/helpers/spawn-server.js';

const connections = Number(process.argv[2] ?? 20);
const BODY = 60 * 1024 * 1024;
const SENT = 58 * 1024 * 1024;

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Math.round(Number(m?.[1] ?? 0) / 1024);
}

const server = await spawnServer();
const pid = server.proc.pid as number;
await fetch(`${server.url}/api/tables`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: '{"name":"t"}',
});
const before = rssMb(pid);
const answers: string[] = [];
const sockets: Socket[] = [];
const chunk = Buffer.alloc(1024 * 1024, 0x20);
await Promise.all(
  Array.from(
    { length: connections },
    (_, i) =>
      new Promise<void>((resolve) => {
        const s = connect(server.http.port, '127.0.0.1');
        sockets.push(s);
        let answer = '';
        s.on('data', (d: Buffer) => (answer += d.toString('latin1')));
        s.on('error', () => {});
        s.on('close', () => (answers[i] = answer.split('\r\n')[0] || '(no answer: still held when the client closed)'));
        s.write(
          `POST /api/tables/t/documents HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/x-ndjson\r\ncontent-length: ${BODY}\r\n\r\n`,
        );
        let sent = 0;
        const pump = (): void => {
          while (sent < SENT && !s.destroyed) {
            sent += chunk.length;
            if (!s.write(chunk)) {
              s.once('drain', pump);
              return;
            }
          }
          resolve();
        };
        pump();
        s.on('close', () => resolve());
      }),
  ),
);
await new Promise((r) => setTimeout(r, 2000));
const peak = rssMb(pid);
const health = (await fetch(`${server.url}/health`)).status;
for (const s of sockets) s.destroy();
await new Promise((r) => setTimeout(r, 500));
const counts = new Map<string, number>();
for (const a of answers) counts.set(a ?? '(still open)', (counts.get(a ?? '(still open)') ?? 0) + 1);
console.log(
  JSON.stringify({
    connections,
    rssBeforeMb: before,
    rssWithUnfinishedBodiesMb: peak,
    healthWhileHeld: health,
    answers: Object.fromEntries(counts),
  }),
);
await server.stop('SIGKILL');
removeDir(server.dataDir);
