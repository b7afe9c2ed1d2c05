/**
 * `@wharf/wire/rethinkdb`: the RethinkDB wire protocol's shared primitives (V1_0 handshake's
 * SCRAM-SHA-256, query and response frames, the protocol's numbers), used by the server's driver
 * port and by the client's rethinkdb:// target. Node only (node:crypto), hence a subpath of its own.
 */
export {
  encodeBase64Query,
  encodeQuery,
  encodeResponse,
  FRAME_HEADER_SIZE,
  type FrameEvent,
  FrameReader,
  responseHeader,
  TOKEN_SIZE,
} from './framing.js';
export {
  ErrorType,
  type ErrorTypeValue,
  QueryType,
  ResponseType,
  runtimeErrorNames,
  Term,
  Version,
} from './protocol.js';
export {
  authMessage,
  clientFinal,
  DEFAULT_ITERATIONS,
  deriveCredentials,
  hmac,
  parseServerFirst,
  type ScramCredentials,
  saltedPassword,
  serverFinal,
  verifyProof,
} from './scram.js';
