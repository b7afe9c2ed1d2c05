// Minimal `--name value` / `--flag` argument parsing shared by the bench scripts and workers.

export function parseArgs(argv: string[]): { positional: string[]; opts: Map<string, string | true> } {
  const positional: string[] = [];
  const opts = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      if (eq > 0) opts.set(a.slice(2, eq), a.slice(eq + 1));
      else if (i + 1 < argv.length && !argv[i + 1]!.startsWith('--')) opts.set(a.slice(2), argv[++i]!);
      else opts.set(a.slice(2), true);
    } else positional.push(a);
  }
  return { positional, opts };
}

export function numOpt(opts: Map<string, string | true>, name: string, dflt: number): number {
  const v = opts.get(name);
  if (v === undefined || v === true) return dflt;
  const n = Number(v);
  if (!Number.isFinite(n)) throw new Error(`--${name} must be a number, got ${v}`);
  return n;
}

export function strOpt(opts: Map<string, string | true>, name: string, dflt: string): string {
  const v = opts.get(name);
  return typeof v === 'string' ? v : dflt;
}
