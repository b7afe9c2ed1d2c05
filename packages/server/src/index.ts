/** `@wharf/server`: the Wharf server. See README.md for the API, ports, limits and errors. */

/** Wharf's error catalogue (docs/ERRORS.md): every code the server answers, with its status. */
export { errorCatalogue } from '@wharf/wire';
export { buildServer } from './app.js';
export { type ErrorCode, WharfServerError } from './errors.js';
export { tuneHeapForIngest } from './heap.js';
export { defaultLimits, type Limits } from './limits.js';
export { main, parseArgs } from './main.js';
export { type ResolvedOptions, resolveOptions, type ServerOptions } from './options.js';
export { type ListenAddress, type ServerHandle, startServer } from './start.js';
