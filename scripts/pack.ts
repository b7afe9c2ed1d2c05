/**
 * `npm run pack [-- --out DIR]`: the npm tarballs of every published package, as a release makes
 * them: the TypeScript and the admin UI built, the native engine built with cargo's dist profile
 * into its platform package (packages/engine/npm/<platform>/), then `npm pack` of each package.
 * Prints each tarball's size. test/consumer/run.ts installs what this makes.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Published packages in dependency order; the platform package is this machine's. */
export const PACKAGES = [
  'packages/wire',
  'packages/engine',
  'packages/engine/npm/linux-x64-gnu',
  'packages/client',
  'apps/admin',
  'packages/server',
  'packages/bench',
  'apps/cli',
] as const;

export interface Tarball {
  name: string;
  /** absolute path of the .tgz */
  file: string;
  /** bytes packed, bytes unpacked, files */
  size: number;
  unpackedSize: number;
  entryCount: number;
}

const run = (cmd: string, args: string[]) =>
  execFileSync(cmd, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });

export function pack(out: string): Map<string, Tarball> {
  mkdirSync(out, { recursive: true });
  run('npm', ['run', '--silent', 'build:ts']);
  run('npm', ['run', '--silent', 'build:admin']);
  run(process.execPath, ['packages/engine/scripts/build-native.mjs', '--prebuilt']);
  const packed = JSON.parse(
    run('npm', ['pack', '--json', '--pack-destination', out, ...PACKAGES.map((p) => `./${p}`)]),
  ) as (Omit<Tarball, 'file'> & {
    filename: string;
  })[];
  return new Map(
    packed.map((t) => [
      t.name,
      {
        name: t.name,
        file: join(out, t.filename),
        size: t.size,
        unpackedSize: t.unpackedSize,
        entryCount: t.entryCount,
      },
    ]),
  );
}

export function sizeTable(tarballs: Iterable<Tarball>): string {
  const kb = (n: number) => `${(n / 1024).toFixed(0)} kB`;
  const rows = [...tarballs].map((t) => `| ${t.name} | ${kb(t.size)} | ${kb(t.unpackedSize)} | ${t.entryCount} |`);
  return ['| package | tarball | unpacked | files |', '|---|---:|---:|---:|', ...rows].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const i = process.argv.indexOf('--out');
  const out = resolve(i > 0 ? process.argv[i + 1]! : join(ROOT, 'dist-packages'));
  const tarballs = pack(out);
  console.log(`${tarballs.size} tarballs in ${out}\n\n${sizeTable(tarballs.values())}`);
}
