// Runs measurements interleaved: A B A B … (or A B C A B C …), so that each sample of a
// measurement has a reference sample taken right next to it on the same disk in the same minute.

export interface Step<T> {
  /** Name used as the key of the result and in progress lines. */
  name: string;
  run: (rep: number) => Promise<T>;
  /** One short line for the progress log, from the sample. */
  describe?: (sample: T) => string;
}

export type Interleaved<T> = Record<string, T[]>;

/**
 * Runs `reps` rounds; in each round every step runs once, in the order given. Progress goes to
 * stderr. Returns the samples per step name, index = round, so samples at the same index form
 * one interleaved pair (or tuple).
 */
export async function interleave<T>(
  reps: number,
  steps: Step<T>[],
  log: (line: string) => void = (l) => process.stderr.write(`${l}\n`),
): Promise<Interleaved<T>> {
  const out: Interleaved<T> = {};
  for (const s of steps) out[s.name] = [];
  for (let rep = 0; rep < reps; rep++) {
    for (const s of steps) {
      const t0 = performance.now();
      const sample = await s.run(rep);
      out[s.name]!.push(sample);
      const took = ((performance.now() - t0) / 1000).toFixed(1);
      log(`  [${rep + 1}/${reps}] ${s.name.padEnd(22)} ${s.describe ? s.describe(sample) : ''} (${took} s wall)`);
    }
  }
  return out;
}
