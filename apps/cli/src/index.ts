/** @wharf/cli's programmatic API: what the `wharf` command calls. */
export { main } from './main.js';
export { parse, VERSION, type Parsed } from './parse.js';
export { importCommand, genCommand, serveCommand, type ImportOptions, type GenOptions, type ServeOptions } from './options.js';
export { runImport, type ImportIo, type ImportOutcome } from './commands/import/index.js';
export { EXIT, type ImportReport, type ImportStatus } from './commands/import/report.js';
export { parseThreshold, evaluateThresholds } from './commands/import/thresholds.js';
export { runGen, generate } from './commands/gen/index.js';
export { renderCliReference } from './docs.js';
export { keyOf } from './commands/gen/index.js';
export { readCheckpoint, defaultCheckpointPath, type Checkpoint } from './commands/import/resume.js';
