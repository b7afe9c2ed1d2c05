/** Writes docs/reference/cli.md from the option tables. `--check`: fail if the file is stale. */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderCliReference } from '../src/docs.js';

const target = resolve(dirname(fileURLToPath(import.meta.url)), '../../../docs/reference/cli.md');
const text = renderCliReference();
if (process.argv.includes('--check')) {
  const current = existsSync(target) ? readFileSync(target, 'utf8') : '';
  if (current !== text) {
    console.error(`${target} is out of date: run npx tsx apps/cli/scripts/render-docs.ts`);
    process.exit(1);
  }
} else {
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, text);
  console.log(`wrote ${target}`);
}
