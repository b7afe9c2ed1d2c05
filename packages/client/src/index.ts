/** @wharf/client: the batching loader. */
export { createLoader, resolveLoaderOptions, checkIndexSpecs } from './loader.js';
export type { Loader, LoaderOptions, LoaderProgress, WriteMeta } from './loader.js';
export { LoaderError, errorCode } from './errors.js';
export type { LoaderErrorCode } from './errors.js';
/** Wharf's error catalogue (docs/ERRORS.md), for callers that map codes to statuses or exit codes. */
export { errorCatalogue, exitCodeOf, exitCodes, type WharfErrorCode } from '@wharf/wire';
export { parseTarget, createTarget, redact, DEFAULT_TARGET, DEFAULT_WHARF_PORT, DEFAULT_RETHINKDB_PORT } from './targets/target.js';
export type { Target, TargetSpec, InsertOptions, Payload } from './targets/target.js';
export { EmbeddedTarget, loadEngine } from './targets/embedded.js';
export type { EngineDatabase, EngineTable } from './targets/embedded.js';
export { Inflight } from './inflight.js';
export { LatencyRecorder, latencyOf, aggregateIntervals } from './latency.js';
export { DEFAULT_RETRY, backoffDelay, withRetry } from './retry.js';
export type { RetryOptions } from './retry.js';
export type { DocumentInput, PayloadFormat } from './batcher.js';
export type * from './types.js';
