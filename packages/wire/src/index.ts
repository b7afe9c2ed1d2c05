export { encodeFrame, encodeFrameParts, decodeFrame, validateClientMessage, encodeServerMessage, decodeServerMessage, HEADER_LENGTH_SIZE } from './frame.js';
export type { DecodedFrame } from './frame.js';
export { WireError } from './errors.js';
export type { WireErrorCode } from './errors.js';
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
