export { encodeFrame, encodeFrameParts, decodeFrame, validateClientMessage, encodeServerMessage, decodeServerMessage, HEADER_LENGTH_SIZE } from './frame.js';
export type { DecodedFrame } from './frame.js';
export {
  WireError,
  errorCatalogue,
  errorCodes,
  errorCodesOf,
  errorSpec,
  exitCodeOf,
  exitCodes,
  formatErrorMessage,
  isErrorCode,
  reqlErrorClasses,
} from './errors.js';
export type { ErrorCodeOf, ErrorLayer, ErrorSpec, ReqlErrorType, WharfErrorCode, WireErrorCode } from './errors.js';
export type { EngineStats, IndexInfo, LatencySummary, TableInfo, WriteStages } from './engine-shapes.js';
export { limits, closeCodes, paths } from './messages.js';
export type {
  Durability,
  Conflict,
  PayloadFormat,
  WriteResult,
  EnsureTableMessage,
  InsertMessage,
  SyncMessage,
  ClientMessage,
  AckMessage,
  SyncedMessage,
  ErrorMessage,
  ServerMessage,
} from './messages.js';
export type { ServerCounters, ImportFormat, ImportRun } from './http-types.js';
