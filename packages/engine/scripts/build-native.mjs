#!/usr/bin/env node
// Builds the native addon (crate wharf-engine-napi, release) and installs it as
// packages/engine/wharf-engine.node. Run by `npm install` (this package's "install" script) and by
// `npm run build:native` at the repository root.
//
// Plain .mjs on purpose: it runs during `npm install`, before tsx is guaranteed to be there.
// Set WHARF_SKIP_NATIVE_BUILD=1 to skip it (for example to install JS dependencies only).

import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const repoRoot = resolve(packageDir, '..', '..');
const target = join(packageDir, 'wharf-engine.node');

if (process.env.WHARF_SKIP_NATIVE_BUILD === '1') {
  console.log('@wharf/engine: WHARF_SKIP_NATIVE_BUILD=1, not building the native addon.');
  process.exit(0);
}

const cargo = findCargo();
if (!cargo) {
  console.error(
    [
      '',
      '@wharf/engine: cannot build the native addon: `cargo` (the Rust toolchain) was not found.',
      '  Install Rust (https://rustup.rs, or your package manager), make sure `cargo` is on PATH,',
      '  then run `npm run build:native` at the repository root (or `npm install` again).',
      '  To install the JS dependencies without the engine, set WHARF_SKIP_NATIVE_BUILD=1.',
      '',
    ].join('\n'),
  );
  process.exit(1);
}

console.log('@wharf/engine: building the native addon (cargo build --release -p wharf-engine-napi)…');
const build = spawnSync(cargo, ['build', '--release', '-p', 'wharf-engine-napi'], {
  cwd: repoRoot,
  stdio: 'inherit',
});
if (build.status !== 0) {
  console.error(
    [
      `\n@wharf/engine: cargo build failed (${build.error?.message ?? `exit ${build.status}`}); see the errors above.`,
      '  To install the JS dependencies without the engine, set WHARF_SKIP_NATIVE_BUILD=1.',
    ].join('\n'),
  );
  process.exit(1);
}

const targetDir = process.env.CARGO_TARGET_DIR
  ? resolve(repoRoot, process.env.CARGO_TARGET_DIR)
  : join(repoRoot, 'target');
const built = join(targetDir, 'release', libraryName('wharf_engine_napi'));
if (!existsSync(built)) {
  console.error(`@wharf/engine: cargo succeeded but ${built} is missing.`);
  process.exit(1);
}

// Copy, then rename over the old file: a process that has the old addon loaded keeps its (now
// unlinked) file, instead of seeing the mapped library rewritten under it and crashing.
const temporary = `${target}.${process.pid}.tmp`;
try {
  copyFileSync(built, temporary);
  renameSync(temporary, target);
} finally {
  rmSync(temporary, { force: true });
}
console.log(`@wharf/engine: installed ${target}`);

function findCargo() {
  const candidates = ['cargo', join(process.env.CARGO_HOME ?? join(homedir(), '.cargo'), 'bin', 'cargo')];
  return candidates.find((c) => spawnSync(c, ['--version'], { stdio: 'ignore' }).status === 0);
}

function libraryName(crate) {
  if (process.platform === 'win32') return `${crate}.dll`;
  if (process.platform === 'darwin') return `lib${crate}.dylib`;
  return `lib${crate}.so`;
}
