/**
 * Query frames on the driver port (after the handshake): token, u32 LE length, UTF-8 JSON body.
 * The reader and encoders are shared with the client's rethinkdb:// target through
 * `@wharf/wire/rethinkdb`; this module is where the server takes them from.
 */
export {
  encodeQuery,
  encodeResponse,
  FRAME_HEADER_SIZE,
  type FrameEvent,
  FrameReader,
  responseHeader,
  TOKEN_SIZE,
} from '@wharf/wire/rethinkdb';
