/** @wharf/cli's programmatic API: what the `wharf` command calls. */

export { generate, keyOf, runGen } from './commands/gen/index.js';
export { type ImportIo, type ImportOutcome, runImport } from './commands/import/index.js';
export { EXIT, type ImportReport, type ImportStatus } from './commands/import/report.js';
export { type Checkpoint, defaultCheckpointPath, readCheckpoint } from './commands/import/resume.js';
export { evaluateThresholds, parseThreshold } from './commands/import/thresholds.js';
export { renderCliReference } from './docs.js';
export { main } from './main.js';
export {
  type GenOptions,
  genCommand,
  type ImportOptions,
  importCommand,
  type ServeOptions,
  serveCommand,
} from './options.js';
export { type Parsed, parse, VERSION } from './parse.js';
