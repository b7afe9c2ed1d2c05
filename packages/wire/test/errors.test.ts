/**
 * The error catalogue: docs/ERRORS.md is rendered from it and up to date, and every code the
 * sources raise is in it. (That each code reaches callers with the status, ReQL type and exit
 * code it claims is tested on the real server and CLI: test/server/errors.test.ts and
 * test/import/errors.test.ts; the engine's codes against the Rust enum in packages/engine.)
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERRORS_DOC_PATH, renderErrorReference } from '../../../scripts/errors-doc.ts';
import {
  errorCatalogue,
  errorCodes,
  exitCodeOf,
  exitCodes,
  formatErrorMessage,
  isErrorCode,
  reqlErrorClasses,
} from '../src/index.ts';

const ROOT = resolve(import.meta.dirname, '../../..');

/** Source files of every package and app (tests, docs and build output excluded). */
function sources(): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      if (name === 'node_modules' || name === 'dist' || name === 'target' || name === 'test' || name === 'tests')
        continue;
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (/\.(ts|rs)$/.test(name)) files.push(path);
    }
  };
  for (const top of ['packages', 'apps']) {
    for (const pkg of readdirSync(join(ROOT, top))) {
      for (const sub of ['src', 'core/src', 'napi/src']) {
        const dir = join(ROOT, top, pkg, sub);
        try {
          if (statSync(dir).isDirectory()) walk(dir);
        } catch {
          // this package has no such folder
        }
      }
    }
  }
  return files;
}

describe('the error catalogue', () => {
  it('docs/ERRORS.md exists and is rendered from it (npm run docs:errors)', () => {
    // A missing file fails here too: readFileSync throws.
    expect(readFileSync(ERRORS_DOC_PATH, 'utf8')).toBe(renderErrorReference());
  });

  it('every entry is well formed: one prefix, an error status, a known ReQL type and exit code', () => {
    expect(errorCodes.length).toBeGreaterThan(30);
    for (const code of errorCodes) {
      const e = errorCatalogue[code];
      expect(code, code).toMatch(/^WHARF_ERR_[A-Z_]+$/);
      expect(e.status, code).toBeGreaterThanOrEqual(400);
      expect(e.status, code).toBeLessThan(600);
      if (e.reql !== null) expect(Object.keys(reqlErrorClasses), code).toContain(e.reql);
      expect(Object.values(exitCodes), code).toContain(e.exit);
      expect(e.layers.length, code).toBeGreaterThan(0);
      expect(e.meaning.length > 0 && e.fix.length > 0, code).toBe(true);
    }
  });

  it('fills message templates in order and maps codes to exit statuses', () => {
    expect(formatErrorMessage('WHARF_ERR_INDEX_NOT_FOUND', ['by_city', 'people'])).toBe(
      'Index `by_city` does not exist on table `people`',
    );
    expect(exitCodeOf('WHARF_ERR_USAGE')).toBe(2);
    expect(exitCodeOf('WHARF_ERR_MAX_ERRORS')).toBe(1);
    expect(exitCodeOf('ENOENT')).toBe(1);
    expect(exitCodeOf(undefined)).toBe(1);
  });

  it('every code the sources raise or compare with is in it, and every code in it is used', () => {
    const used = new Map<string, string>();
    // Quoted codes ('WHARF_ERR_…'), and any quoted WHARF_ string given as an error's code.
    const patterns = [
      /['"`](WHARF_ERR_[A-Z_]+)['"`]/g,
      /code:\s*['"`](WHARF_[A-Z_]+)['"`]/g,
      /Error\(\s*['"`](WHARF_[A-Z_]+)['"`]/g,
    ];
    const files = sources();
    expect(files.length).toBeGreaterThan(50);
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      if (file.endsWith(join('wire', 'src', 'errors.ts'))) continue; // the catalogue itself
      for (const pattern of patterns) {
        for (const m of text.matchAll(pattern)) used.set(m[1]!, file.slice(ROOT.length + 1));
      }
    }
    expect(used.size).toBeGreaterThan(20);
    const unknown = [...used].filter(([code]) => !isErrorCode(code)).map(([code, file]) => `${code} (${file})`);
    expect(unknown).toEqual([]);
    // And the other way: no entry that nothing raises.
    expect(errorCodes.filter((code) => !used.has(code))).toEqual([]);
  });
});
