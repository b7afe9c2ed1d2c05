/**
 * Finds and loads the native addon, the napi-rs way: first a source build in this package
 * (`wharf-engine.node`, made by `scripts/build-native.mjs`), then the prebuilt platform package
 * (`@wharf/engine-linux-x64-gnu`, an optional dependency that npm installs only on its platform).
 * Elsewhere `npx wharf-engine-build` (scripts/build-native.mjs) makes the source build.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/** The source build's output, beside `dist/` and `src/`. */
export const SOURCE_BUILD_PATH = fileURLToPath(new URL('../wharf-engine.node', import.meta.url));

/** Platforms with a prebuilt package on npm (`npm/<platform>/` in this package's repository). */
export const PREBUILT_PLATFORMS: readonly string[] = ['linux-x64-gnu'];

/** napi-rs's platform name: `linux-x64-gnu`, `linux-arm64-musl`, `darwin-arm64`, `win32-x64-msvc`. */
export function platformName(): string {
  const base = `${process.platform}-${process.arch}`;
  if (process.platform === 'win32') return `${base}-msvc`;
  if (process.platform !== 'linux') return base;
  const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined;
  return `${base}-${report?.header?.glibcVersionRuntime ? 'gnu' : 'musl'}`;
}

export const prebuiltPackage = (platform: string): string => `@wharf/engine-${platform}`;

/** Loads the addon, or throws an error that says what to install. */
export function loadNative(): unknown {
  const require = createRequire(import.meta.url);
  if (existsSync(SOURCE_BUILD_PATH)) return require(SOURCE_BUILD_PATH);

  const platform = platformName();
  const pkg = prebuiltPackage(platform);
  if (!PREBUILT_PLATFORMS.includes(platform)) {
    throw new Error(
      `@wharf/engine: there is no prebuilt engine for ${platform}; build it from source with ` +
        '`npx wharf-engine-build` (needs Rust: https://rustup.rs).',
    );
  }
  try {
    return require(pkg);
  } catch (err) {
    if ((err as { code?: string }).code !== 'MODULE_NOT_FOUND' || !String((err as Error).message).includes(pkg))
      throw err;
    throw new Error(
      `@wharf/engine: the prebuilt engine ${pkg} is not installed (npm skips optional dependencies ` +
        `with --omit=optional); run \`npm install ${pkg}\`, or build from source with \`npx wharf-engine-build\`.`,
      { cause: err },
    );
  }
}
