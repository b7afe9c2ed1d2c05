// A point-get client on its own thread, for the sustained scenario's server target: like a
// separate application reading while the import runs, its latency is not held up by the
// loader's event loop. Reads `acked[0]` (keys below it are acknowledged) from shared memory,
// makes `rate` GETs per second of random such keys (lib/point-reads.ts), and posts the latency
// percentiles (ms) when told to stop.
import { Agent, get } from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';
import { type PointRead, startPointReads } from './point-reads.js';

const { url, rate, acked } = workerData as { url: string; rate: number; acked: Int32Array };

// node:http on kept-alive connections, not fetch: undici's fetch cost ~1 ms of CPU per GET here,
// a fifth of a core at 200 gets/s, taken from the very server it measures on a 2-core machine.
const agent = new Agent({ keepAlive: true, maxSockets: 8 });

function getOne(key: string): Promise<PointRead> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const done = (status: number) => {
      if (settled) return; // an 'error' after 'end' counts once
      settled = true;
      if (status === 0) reject(new Error(`GET ${key}: no answer`));
      else resolve(status === 200 ? 'found' : status === 404 ? 'missing' : 'error');
    };
    get(`${url}/api/tables/sustained/documents/${encodeURIComponent(key)}`, { agent }, (res) => {
      res
        .on('data', () => undefined)
        .on('end', () => done(res.statusCode ?? 0))
        .on('error', () => done(0));
    }).on('error', () => done(0));
  });
}

const stopReads = startPointReads(rate, () => Atomics.load(acked, 0), getOne);
let stopped = false;

parentPort!.postMessage('ready');
parentPort!.on('message', async () => {
  if (stopped) return;
  stopped = true;
  parentPort!.postMessage(await stopReads());
});
