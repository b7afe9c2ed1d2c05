/**
 * Renders docs/ERRORS.md from the error catalogue (`packages/wire/src/errors.ts`).
 * `npm run docs:errors` writes it; `npm run docs:errors -- --check` fails when it is stale, and
 * packages/wire/test/errors.test.ts fails too (a missing file is stale).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type ErrorLayer,
  errorCatalogue,
  errorCodes,
  exitCodes,
  reqlErrorClasses,
} from '../packages/wire/src/index.ts';

export const ERRORS_DOC_PATH = resolve(fileURLToPath(new URL('..', import.meta.url)), 'docs/ERRORS.md');

const LAYERS: readonly { layer: ErrorLayer; title: string; text: string }[] = [
  {
    layer: 'engine',
    title: 'Engine',
    text: 'Raised by `@wharf/engine` (`core/src/error.rs` `ErrorCode`); the server and the loader pass them on unchanged.',
  },
  {
    layer: 'wire',
    title: 'Wire',
    text: 'Raised by the ws ingest frame codec (`@wharf/wire`), sent in ws `error` messages.',
  },
  {
    layer: 'server',
    title: 'Server',
    text: 'Raised by `@wharf/server`: HTTP answers (`{ statusCode, code, error, message }`), ws `error` messages, ReQL errors.',
  },
  {
    layer: 'client',
    title: 'Client',
    text: 'Raised by the loader (`@wharf/client`) as a `LoaderError`; a code a target answered with is passed through.',
  },
  { layer: 'cli', title: 'CLI', text: "Raised by `wharf` (in `--report`'s `error.code`)." },
];

function cell(s: string): string {
  return s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

export function renderErrorReference(): string {
  const lines = [
    '# Errors',
    '',
    '<!-- Generated from packages/wire/src/errors.ts by `npm run docs:errors`; edit the catalogue, not this file. -->',
    '',
    'Every error Wharf raises has one stable `code` from one catalogue (`errorCatalogue` in',
    '`@wharf/wire`), whichever layer raises it. For each code the catalogue gives:',
    '',
    "- **HTTP**: the status of the server's answer (`{ statusCode, code, error, message }`); ws `error`",
    '  messages carry the same `code`.',
    '- **ReQL**: the error type a query on the RethinkDB port fails with, and the class the official',
    '  drivers raise for it; `—` when the ReQL port never answers that code.',
    `- **exit**: the status \`wharf import\` exits with when the error stops it (${exitCodes.failed}: failed,`,
    `  ${exitCodes.usage}: a bad command line, ${exitCodes.interrupted}: interrupted). Outcomes that are not errors have their own`,
    '  statuses (3: some documents rejected, 4: a `--fail-if` threshold breached; see docs/reference/cli.md).',
    '- **retry**: the loader retries a batch that failed with it.',
    '',
    "The engine's codes are checked against the Rust `ErrorCode::ALL` by a test. Engine errors from",
    'the pool carry the names they concern as fields (`table`, `index`), so nobody parses messages.',
    '',
  ];
  for (const { layer, title, text } of LAYERS) {
    const codes = errorCodes.filter((c) => errorCatalogue[c].layers[0] === layer);
    if (codes.length === 0) continue;
    lines.push(
      `## ${title}`,
      '',
      text,
      '',
      '| code | meaning | HTTP | ReQL | exit | retry | fix |',
      '|---|---|---|---|---|---|---|',
    );
    for (const code of codes) {
      const e = errorCatalogue[code];
      const reql = e.reql === null ? '—' : `${e.reql} (\`${reqlErrorClasses[e.reql]}\`)`;
      const also = e.layers.length > 1 ? ` Also raised by: ${e.layers.slice(1).join(', ')}.` : '';
      lines.push(
        `| \`${code}\` | ${cell(e.meaning + also)} | ${e.status} | ${reql} | ${e.exit} | ${e.retryable ? 'yes' : 'no'} | ${cell(e.fix)} |`,
      );
    }
    lines.push('');
  }
  return lines.join('\n');
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const text = renderErrorReference();
  if (process.argv.includes('--check')) {
    let current = '';
    try {
      current = readFileSync(ERRORS_DOC_PATH, 'utf8');
    } catch {
      // missing: stale
    }
    if (current !== text) {
      console.error(`${ERRORS_DOC_PATH} is out of date: run npm run docs:errors`);
      process.exit(1);
    }
  } else {
    writeFileSync(ERRORS_DOC_PATH, text);
    console.log(`wrote ${ERRORS_DOC_PATH}`);
  }
}
