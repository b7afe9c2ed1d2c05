/** `wharf bench`: a hook for the benchmark suite, which lives in scripts/bench/ for now. */
export function runBench(stderr: NodeJS.WritableStream): number {
  stderr.write('wharf bench: not yet available. Run the benchmark scripts instead, e.g. npx tsx scripts/bench/loader.ts\n');
  return 1;
}
