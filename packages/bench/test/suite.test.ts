// The parts of `wharf bench` that decide what runs: the Node fdatasync loop (the reference where
// the Rust example cannot be built) and the one-line skip of a scenario whose reference is missing.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { moduleArgv, runJsonChild } from '../src/lib/child.ts';
import { fsyncLimitRunner } from '../src/lib/fsync-limit.ts';
import { straceSupport } from '../src/lib/strace.ts';
import { missingFor, SCENARIOS } from '../src/scenarios/index.ts';
import { floorRatios } from '../src/scenarios/seed000.ts';

const dir = mkdtempSync(join(tmpdir(), 'wharf-bench-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the Node fdatasync loop', () => {
  const node = fsyncLimitRunner({ prefer: 'node' });

  it("prints the Rust example's JSON: n ops of `block` bytes each, overwrite and append, and removes its files", async () => {
    const out = (await node.run(dir, 40, 'both')).json;
    expect(node.kind).toBe('node');
    expect(out).toMatchObject({ tool: 'fsync_limit', n: 40, block: 4096 });
    for (const mode of ['overwrite', 'append'] as const) {
      const s = out.results[mode]!;
      expect(s).toMatchObject({ ops: 40, fdatasyncs: 40 });
      expect(s.op_us.min).toBeLessThanOrEqual(s.op_us.median);
      expect(s.op_us.median).toBeLessThanOrEqual(s.op_us.max);
      expect(s.total_ms).toBeGreaterThan(0);
    }
    expect(readdirSync(dir)).toEqual([]);
  });

  // The same syscalls as examples/fsync_limit.rs: per op one pwrite64 (overwrite, at the op's
  // offset) or write (append) and one fdatasync; one fsync of the file and one of the directory.
  it.skipIf(!straceSupport().ok)(
    "makes the Rust example's syscalls: n × (pwrite64 + fdatasync), 2 fsyncs (strace)",
    async () => {
      const r = await node.run(dir, 50, 'overwrite', { strace: { syscalls: ['pwrite64', 'fdatasync', 'fsync'] } });
      expect(r.strace!.calls).toEqual({ pwrite64: 50, fdatasync: 50, fsync: 2 });
      const a = await node.run(dir, 30, 'append', { strace: { syscalls: ['pwrite64', 'fdatasync', 'fsync'] } });
      expect(a.strace!.calls).toEqual({ fdatasync: 30, fsync: 2 });
    },
  );

  it('refuses the Rust loop outside a clone, saying what it needs', () => {
    expect(() => fsyncLimitRunner({ prefer: 'rust', repo: undefined })).toThrow(
      /needs a clone of the Wharf repository and cargo/,
    );
  });
});

describe('a scenario whose reference is missing', () => {
  const none = () => false;
  it('says in one line what to install', () => {
    expect(missingFor('seed000', { installed: (m) => m !== 'better-sqlite3' })).toBe(
      'needs better-sqlite3 (npm install better-sqlite3)',
    );
    expect(missingFor('group-commit', { installed: none })).toBe('needs @wharf/engine (npm install @wharf/engine)');
    expect(missingFor('sustained', { installed: none })).toBe(
      'needs @wharf/engine, @wharf/server (npm install @wharf/engine @wharf/server)',
    );
    expect(missingFor('kv', { installed: () => true, repo: undefined })).toMatch(
      /^needs a clone of the Wharf repository and cargo/,
    );
    expect(missingFor('import', { installed: () => true })).toMatch(/npx wharf bench import/);
  });
  it('limit needs nothing but Node; every scenario runs when everything is there', () => {
    expect(missingFor('limit', { installed: none })).toBeUndefined();
    for (const s of SCENARIOS)
      expect(
        missingFor(s, { installed: () => true, repo: '/repo', cargo: () => true, cliBin: '/bin/wharf' }),
      ).toBeUndefined();
  });
});

it('the per-issue goal scripts are not in the package (they need a clone)', async () => {
  const pkg = (await import('../package.json', { with: { type: 'json' } })).default as { files: string[] };
  expect(pkg.files).toEqual(expect.arrayContaining(['!dist/goals', '!src/goals']));
  expect(existsSync(join(import.meta.dirname, '../src/goals/engine.ts'))).toBe(true);
});

describe('seed000 through the driver', () => {
  it('runs the insert loop and, on the same fresh server, the r.expr floor loop, with one fdatasync per hard insert', async () => {
    const [cmd, argv] = moduleArgv('scenarios/workers', ['driver-seq', '--dir', join(dir, 'driver-seq'), '--n', '30']);
    const out = (
      await runJsonChild<{ total_ms: number; expr_ms: number; fdatasyncs: number; server_cpu_ms?: number }>(cmd, argv, {
        cwd: process.cwd(),
        timeoutMs: 120_000,
      })
    ).json;
    expect(out.total_ms).toBeGreaterThan(0);
    expect(out.expr_ms).toBeGreaterThan(0);
    // The floor of a lone hard writer: more would be a second sync per insert, fewer a write not made durable.
    expect(out.fdatasyncs).toBe(30);
    expect(out.server_cpu_ms).toBeGreaterThanOrEqual(0);
  }, 130_000);

  it('divides each round by its own floor, r.expr loop + raw loop', () => {
    expect(
      floorRatios(
        [
          { total_ms: 300, expr_ms: 100 },
          { total_ms: 660, expr_ms: 200 },
        ],
        [200, 400],
      ),
    ).toEqual([1, 1.1]);
    expect(() => floorRatios([{ total_ms: 300 }], [200])).toThrow(/r\.expr/);
  });
});
