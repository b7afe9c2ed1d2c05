export type { EngineStats, IndexInfo, LatencySummary, TableInfo, WriteStages } from './engine-shapes.js';
export type { ErrorCodeOf, ErrorLayer, ErrorSpec, ReqlErrorType, WharfErrorCode, WireErrorCode } from './errors.js';
export {
  errorCatalogue,
  errorCodes,
  errorCodesOf,
  errorSpec,
  exitCodeOf,
  exitCodes,
  formatErrorMessage,
  isErrorCode,
  reqlErrorClasses,
  WireError,
} from './errors.js';
export type { DecodedFrame } from './frame.js';
export {
  decodeFrame,
  decodeServerMessage,
  encodeFrame,
  encodeFrameParts,
  encodeServerMessage,
  HEADER_LENGTH_SIZE,
  validateClientMessage,
} from './frame.js';
export type { ImportFormat, ImportRun, JobList, JobSummary, ServerCounters } from './http-types.js';
export type {
  CoordinationDoc,
  JobDefinition,
  JobInput,
  JobMember,
  JobStatus,
  JobTask,
  TaskEpoch,
  TaskLow,
  WorkerBeat,
} from './jobs.js';
export { DEFAULT_JOB_TABLE, JobView, jobPrefix, jobStatus } from './jobs.js';
export type {
  AckMessage,
  ClientMessage,
  Conflict,
  Durability,
  EnsureTableMessage,
  ErrorMessage,
  InsertMessage,
  PayloadFormat,
  ServerMessage,
  SyncedMessage,
  SyncMessage,
  WriteResult,
} from './messages.js';
export { closeCodes, limits, paths } from './messages.js';
