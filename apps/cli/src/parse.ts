/**
 * Pure command-line parsing: argv in, a typed command out (or help text, or a usage error).
 * No I/O, no process.exit: main.ts acts on the result, and tests call parse() directly.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import {
  type BenchOptions,
  benchCommand,
  type CommandDef,
  type GenOptions,
  genCommand,
  type ImportOptions,
  importCommand,
  type ServeOptions,
  serveCommand,
} from './options.js';

export const VERSION = '0.1.0';

export type Parsed =
  | { command: 'import'; options: ImportOptions }
  | { command: 'gen'; options: GenOptions }
  | { command: 'serve'; options: ServeOptions }
  | { command: 'bench'; options: BenchOptions }
  | { command: 'output'; text: string; exitCode: 0 }
  | { command: 'error'; message: string; exitCode: 2 };

function addCommand<T>(
  program: Command,
  def: CommandDef<T>,
  env: NodeJS.ProcessEnv,
  onParsed: (opts: T) => void,
  argv: readonly string[],
): void {
  const cmd = program.command(def.name).description(def.summary);
  if (def.argument) cmd.argument(def.argument.name, def.argument.description);
  for (const o of def.options) {
    const flags = `${o.short ? `-${o.short}, ` : ''}--${o.flag}${o.arg ? ` ${o.arg}` : ''}`;
    const opt = new Option(flags, o.description);
    if (o.parse || o.repeatable) {
      opt.argParser((value: string, previous: unknown) => {
        let v: unknown = value;
        if (o.parse) {
          try {
            v = o.parse(value);
          } catch (err) {
            throw new InvalidArgumentError((err as Error).message);
          }
        }
        return o.repeatable ? [...((previous as unknown[] | undefined) ?? []), v] : v;
      });
    }
    if (o.default !== undefined && !o.flag.startsWith('no-')) opt.default(o.default, o.defaultText);
    // `wharf import --job J --status` reads a job and needs no table.
    if (o.required && !(def.name === 'import' && o.key === 'table' && argv.includes('--status')))
      opt.makeOptionMandatory();
    cmd.addOption(opt);
  }
  cmd.action((...args: unknown[]) => {
    const opts = { ...(args[def.argument ? 1 : 0] as Record<string, unknown>) };
    if (def.argument?.restKey) {
      const all = args[0] as string[];
      opts[def.argument.key] = all[0];
      opts[def.argument.restKey] = all;
    } else if (def.argument) opts[def.argument.key] = args[0];
    // Keys in the table are the options' property names; commander derives the same camelCase.
    for (const o of def.options) {
      const cmdKey = o.flag.replace(/^no-/, '').replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
      if (cmdKey !== o.key && cmdKey in opts) {
        opts[o.key] = opts[cmdKey];
        delete opts[cmdKey];
      }
    }
    if (def.name === 'import' && opts.target === undefined) opts.target = env.WHARF_TARGET || 'embedded:./wharf-data';
    onParsed(opts as T);
  });
  if (def.examples.length) cmd.addHelpText('after', `\nExamples:\n${def.examples.map((e) => `  $ ${e}`).join('\n')}\n`);
}

/** Parses `wharf` arguments (without the node and script entries). */
export function parse(argv: readonly string[], env: NodeJS.ProcessEnv = {}): Parsed {
  let out = '';
  let err = '';
  let result: Parsed | null = null;
  const program = new Command('wharf')
    .description('Load JSON documents into Wharf fast: batched soft writes, one final sync, per-document latency.')
    .version(VERSION, '-V, --version')
    .exitOverride()
    .showHelpAfterError('(run wharf help <command> for its options)')
    .configureOutput({ writeOut: (s) => (out += s), writeErr: (s) => (err += s) });
  program.configureHelp({ sortSubcommands: false });
  addCommand(program, importCommand, env, (options) => (result = { command: 'import', options }), argv);
  addCommand(program, genCommand, env, (options) => (result = { command: 'gen', options }), argv);
  addCommand(program, serveCommand, env, (options) => (result = { command: 'serve', options }), argv);
  addCommand(program, benchCommand, env, (options) => (result = { command: 'bench', options }), argv);
  for (const c of program.commands)
    c.exitOverride().configureOutput({ writeOut: (s) => (out += s), writeErr: (s) => (err += s) });

  if (argv.length === 0) return { command: 'output', text: program.helpInformation(), exitCode: 0 };
  try {
    program.parse([...argv], { from: 'user' });
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.exitCode === 0) return { command: 'output', text: out, exitCode: 0 };
      return { command: 'error', message: (err || e.message).trimEnd(), exitCode: 2 };
    }
    throw e;
  }
  if (!result) return { command: 'output', text: out || program.helpInformation(), exitCode: 0 };
  return result;
}
