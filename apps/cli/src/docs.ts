/** Renders the option tables (options.ts) as docs/reference/cli.md. */

import { EXIT } from './commands/import/report.js';
import { benchCommand, type CommandDef, genCommand, importCommand, serveCommand } from './options.js';

function defaultOf<T>(o: CommandDef<T>['options'][number]): string {
  if (o.defaultText !== undefined) return o.defaultText;
  if (o.required) return 'required';
  if (o.default === undefined) return '';
  if (o.flag.startsWith('no-')) return '';
  return String(o.default);
}

function cell(s: string): string {
  return s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

function commandSection<T>(def: CommandDef<T>): string {
  const lines = [`## wharf ${def.name}${def.argument ? ` ${def.argument.name}` : ''}`, '', def.summary, ''];
  if (def.argument) lines.push(`\`${def.argument.name}\`: ${def.argument.description}`, '');
  lines.push('| option | default | description |', '|---|---|---|');
  for (const o of def.options) {
    const flags = `${o.short ? `-${o.short}, ` : ''}--${o.flag}${o.arg ? ` ${o.arg}` : ''}`;
    lines.push(`| \`${cell(flags)}\` | ${cell(defaultOf(o))} | ${cell(o.description)} |`);
  }
  if (def.examples.length) lines.push('', 'Examples:', '', '```sh', ...def.examples, '```');
  return lines.join('\n');
}

export function renderCliReference(): string {
  return [
    '<!-- Generated from apps/cli/src/options.ts by `npx tsx apps/cli/scripts/render-docs.ts`. Do not edit. -->',
    '# `wharf` command line',
    '',
    commandSection(importCommand),
    '',
    '### Exit status',
    '',
    '| status | meaning |',
    '|---|---|',
    `| ${EXIT.ok} | every document read was written |`,
    `| ${EXIT.failed} | failed: an error, --max-errors exceeded, or written ≠ read − rejected |`,
    `| ${EXIT.usage} | bad command line, a bad argument the engine or the loader refused, or a checkpoint that belongs to another import |`,
    `| ${EXIT.rejects} | finished; some documents were rejected (see --rejects), all others written |`,
    `| ${EXIT.thresholds} | finished, but a --fail-if threshold was breached |`,
    `| ${EXIT.interrupted} | interrupted (Ctrl-C, SIGTERM); continue with --resume |`,
    '',
    "A failure exits with the status the error catalogue gives its code (the report's `error.code`; see docs/ERRORS.md).",
    '',
    commandSection(genCommand),
    '',
    commandSection(serveCommand),
    '',
    commandSection(benchCommand),
    '',
  ].join('\n');
}
