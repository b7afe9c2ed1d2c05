/**
 * `wharf gen`: YCSB-like documents, deterministic for a seed, written to a file or standard
 * output. The documents themselves are @wharf/bench's (`@wharf/bench/ycsb`), the ones its loader
 * benchmark loads.
 */

import { once } from 'node:events';
import { createWriteStream, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { generate } from '@wharf/bench/ycsb';
import type { GenOptions } from '../../options.js';

export { generate, keyOf, mix32 } from '@wharf/bench/ycsb';

export async function runGen(o: GenOptions, stdout: NodeJS.WritableStream): Promise<number> {
  if (o.out) {
    try {
      mkdirSync(dirname(resolve(o.out)), { recursive: true });
    } catch (err) {
      throw new Error(`cannot write ${o.out}: ${(err as Error).message}`);
    }
  }
  const out: NodeJS.WritableStream = o.out ? createWriteStream(o.out) : stdout;
  let failure: NodeJS.ErrnoException | undefined;
  out.on('error', (err: NodeJS.ErrnoException) => (failure = err));
  for (const chunk of generate(o)) {
    if (failure) break;
    if (!out.write(chunk)) await once(out, 'drain').catch(() => {}); // an error lands in `failure`
  }
  if (o.out && !failure) await new Promise<void>((r) => out.end(() => r()));
  // `wharf gen | head`: the reader leaving early is not an error.
  if (failure && failure.code !== 'EPIPE') {
    throw new Error(`cannot write ${o.out ?? 'standard output'}: ${failure.message}`);
  }
  return 0;
}
