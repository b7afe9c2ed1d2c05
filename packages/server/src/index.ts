/** `@wharf/server`: the Wharf server. See README.md for the API, ports, limits and errors. */
export { buildServer } from './app.js';
export { startServer, type ServerHandle, type ListenAddress } from './start.js';
export { resolveOptions, type ServerOptions, type ResolvedOptions } from './options.js';
export { defaultLimits, type Limits } from './limits.js';
export { WharfServerError, type ErrorCode } from './errors.js';
/** Wharf's error catalogue (docs/ERRORS.md): every code the server answers, with its status. */
export { errorCatalogue } from '@wharf/wire';
export { parseArgs, main } from './main.js';
export { tuneHeapForIngest } from './heap.js';
