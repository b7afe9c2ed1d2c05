#!/usr/bin/env node
// Builds the native addon from source (crate wharf-engine-napi) with cargo.
//
//   npx wharf-engine-build                        in a project that installed @wharf/engine, on a
//                                                 platform with no prebuilt package: dist profile
//                                                 → node_modules/@wharf/engine/wharf-engine.node
//   node scripts/build-native.mjs                 in a checkout (`npm run build:native`): release
//                                                 profile (with debug info) → wharf-engine.node
//   node scripts/build-native.mjs --prebuilt      dist profile → npm/<platform>/, the file of the
//                                                 prebuilt platform package (scripts/pack.ts)
//
// src/native.ts loads wharf-engine.node first, then the prebuilt package. This is not an npm
// install script: npm flags (and is moving to block) dependencies' install scripts, and the
// prebuilt package needs none. Plain .mjs: it runs with no TypeScript loader.

import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
// Installed as a dependency: the dist profile (no debug info) in a throw-away target directory,
// since the gigabyte of intermediate files would otherwise stay in node_modules. In a checkout:
// packages/engine/target, so rebuilds are incremental.
const installed = packageDir.split(sep).includes('node_modules');
const prebuilt = process.argv.includes('--prebuilt');
const native = prebuilt ? await import(pathToFileURL(join(packageDir, 'dist', 'native.js')).href) : null;
const profile = prebuilt || installed ? 'dist' : 'release';
const output = prebuilt
  ? join(packageDir, 'npm', native.platformName(), `wharf-engine.${native.platformName()}.node`)
  : join(packageDir, 'wharf-engine.node');

const cargo = findCargo();
if (!cargo) {
  console.error(
    '@wharf/engine: cannot build the native engine: cargo was not found; install Rust (https://rustup.rs) and run this again.',
  );
  process.exit(1);
}

const temporaryTarget = installed && !process.env.CARGO_TARGET_DIR;
const targetDir = process.env.CARGO_TARGET_DIR
  ? resolve(process.env.CARGO_TARGET_DIR)
  : temporaryTarget
    ? mkdtempSync(join(tmpdir(), 'wharf-engine-build-'))
    : join(packageDir, 'target');
console.log(`@wharf/engine: building the native engine from source (cargo build --profile ${profile})…`);
const build = spawnSync(
  cargo,
  ['build', '--profile', profile, '--locked', '-p', 'wharf-engine-napi', '--target-dir', targetDir],
  {
    cwd: packageDir,
    stdio: 'inherit',
  },
);
let status = 0;
try {
  if (build.status === 0) {
    install(join(targetDir, profile, libraryName('wharf_engine_napi')));
  } else {
    console.error(
      `@wharf/engine: cargo build failed (${build.error?.message ?? `exit ${build.status}`}); see the errors above.`,
    );
    status = 1;
  }
} finally {
  if (temporaryTarget) rmSync(targetDir, { recursive: true, force: true });
}
process.exit(status);

// Copy, then rename over the old file: a process that has the old addon loaded keeps its (now
// unlinked) file, instead of seeing the mapped library rewritten under it and crashing.
function install(built) {
  const temporary = `${output}.${process.pid}.tmp`;
  try {
    copyFileSync(built, temporary);
    renameSync(temporary, output);
  } finally {
    rmSync(temporary, { force: true });
  }
  console.log(`@wharf/engine: installed ${output}`);
}

function findCargo() {
  const candidates = ['cargo', join(process.env.CARGO_HOME ?? join(homedir(), '.cargo'), 'bin', 'cargo')];
  return candidates.find((c) => spawnSync(c, ['--version'], { stdio: 'ignore' }).status === 0);
}

function libraryName(crate) {
  if (process.platform === 'win32') return `${crate}.dll`;
  if (process.platform === 'darwin') return `lib${crate}.dylib`;
  return `lib${crate}.so`;
}
