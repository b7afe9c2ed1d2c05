/** @wharf/client: the batching loader. */

/** The documents of a distributed import and how a job is read from them. */
export type {
  CoordinationDoc,
  JobDefinition,
  JobInput,
  JobStatus,
  JobTask,
  TaskEpoch,
  TaskLow,
  WorkerBeat,
} from '@wharf/wire';
/** Wharf's error catalogue (docs/ERRORS.md), for callers that map codes to statuses or exit codes. */
export {
  DEFAULT_JOB_TABLE,
  errorCatalogue,
  exitCodeOf,
  exitCodes,
  JobView,
  jobStatus,
  type WharfErrorCode,
} from '@wharf/wire';
export type { DocumentInput, PayloadFormat } from './batcher.js';
export type { LoaderErrorCode } from './errors.js';
export { errorCode, LoaderError } from './errors.js';
export { Inflight } from './inflight.js';
export type { JobOptions, TaskOutcome, TaskRun, WorkerEvents } from './job/job.js';
export { JobWorker, Liveness, ownerIn, planTasks, readJob } from './job/job.js';
export { jumpHash, keyHash, ownerOf, rehash } from './job/jump-hash.js';
export type { CoordinationStore } from './job/store.js';
export { openStore } from './job/store.js';
export { aggregateIntervals, LatencyRecorder, latencyOf } from './latency.js';
export type { BlockMeta, Loader, LoaderOptions, LoaderProgress, WriteMeta } from './loader.js';
export { checkIndexSpecs, createLoader, resolveLoaderOptions } from './loader.js';
export type { RetryOptions } from './retry.js';
export { backoffDelay, DEFAULT_RETRY, withRetry } from './retry.js';
export type { EngineDatabase, EngineTable } from './targets/embedded.js';
export { EmbeddedTarget, loadEngine } from './targets/embedded.js';
export type { InsertOptions, Payload, Target, TargetSpec } from './targets/target.js';
export {
  createTarget,
  DEFAULT_RETHINKDB_PORT,
  DEFAULT_TARGET,
  DEFAULT_WHARF_PORT,
  parseTarget,
  redact,
} from './targets/target.js';
export type * from './types.js';
