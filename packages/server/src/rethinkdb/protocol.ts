/**
 * Numbers of the RethinkDB client protocol (ql2.proto), as used on the wire.
 * See /work/shared/reference/rethinkdb-protocol.md (§1 handshake, §2 queries, §3 responses).
 */

// The protocol's numbers are shared with the client's rethinkdb:// target.
export { ErrorType, type ErrorTypeValue, QueryType, ResponseType, Version } from '@wharf/wire/rethinkdb';

/** What the server writes to a client that sends an unknown magic number (plain text, then NUL). */
export const UNSUPPORTED_VERSION_TEXT =
  'ERROR: Received an unsupported protocol version. This port is for RethinkDB queries. Does your client driver version not match the server?\n';

/** The version string in the hello message (drivers ignore it). */
export const SERVER_VERSION = '2.4.4-wharf';
