// A point-get client on its own thread, for the sustained scenario's server target: like a
// separate application reading while the import runs, its latency is not held up by the
// loader's event loop. Reads `acked[0]` (keys below it are acknowledged) from shared memory,
// makes `rate` GETs per second of random such keys, and posts the latency percentiles (ms)
// when told to stop.
import { Agent, get } from 'node:http';
import { createHistogram } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { mulberry32 } from '../random.js';
import { docKey } from './docs.js';

const { url, rate, acked } = workerData as { url: string; rate: number; acked: Int32Array };
const hist = createHistogram();
const rand = mulberry32(7);
let gets = 0,
  misses = 0,
  errors = 0,
  inFlight = 0,
  skipped = 0,
  issued = 0,
  t0 = -1,
  stop = false;

// node:http on kept-alive connections, not fetch: undici's fetch cost ~1 ms of CPU per GET here,
// a fifth of a core at 200 gets/s, taken from the very server it measures on a 2-core machine.
const agent = new Agent({ keepAlive: true, maxSockets: 8 });

function getOne(key: string) {
  const started = performance.now();
  inFlight++;
  let settled = false;
  const done = (status: number) => {
    if (settled) return; // an 'error' after 'end' counts once
    settled = true;
    inFlight--;
    if (status === 0) return void errors++;
    hist.record(Math.max(1, Math.round((performance.now() - started) * 1e6)));
    gets++;
    if (status === 404) misses++;
    else if (status !== 200) errors++;
  };
  get(`${url}/api/tables/sustained/documents/${encodeURIComponent(key)}`, { agent }, (res) => {
    res
      .on('data', () => undefined)
      .on('end', () => done(res.statusCode ?? 0))
      .on('error', () => done(0));
  }).on('error', () => done(0));
}

const timer = setInterval(() => {
  const n = Atomics.load(acked, 0);
  if (n <= 0) return;
  if (t0 < 0) t0 = performance.now();
  const due = Math.floor(((performance.now() - t0) / 1000) * rate) + 1 - issued;
  for (let k = 0; k < Math.min(due, 20); k++, issued++) {
    if (inFlight >= 64) {
      skipped++;
      continue;
    }
    getOne(docKey(Math.floor(rand() * n)));
  }
  if (due > 20) {
    skipped += due - 20;
    issued += due - 20;
  }
}, 5);

parentPort!.postMessage('ready');
parentPort!.on('message', async () => {
  if (stop) return;
  stop = true;
  clearInterval(timer);
  while (inFlight > 0) await new Promise((r) => setTimeout(r, 10));
  const ms = (ns: number) => Math.round(ns / 1e3) / 1e3;
  parentPort!.postMessage({
    gets,
    misses,
    errors,
    skipped,
    ms: gets
      ? {
          p50: ms(hist.percentile(50)),
          p99: ms(hist.percentile(99)),
          'p99.9': ms(hist.percentile(99.9)),
          max: ms(hist.max),
          mean: ms(hist.mean),
        }
      : null,
  });
});
