/**
 * Binary frame codec for client → server messages:
 *
 *   offset 0 : u32 LE   headerLength (H)
 *   offset 4 : H bytes  header, UTF-8 JSON (an object with `type` and `id`)
 *   offset 4+H: rest    payload bytes (NDJSON or a JSON array for `insert`; empty otherwise)
 */
import { WireError } from './errors.js';
import { type ClientMessage, limits, type ServerMessage } from './messages.js';

export const HEADER_LENGTH_SIZE = 4;

export interface DecodedFrame {
  header: ClientMessage;
  /** A view into the frame (no copy). Empty when the message has no payload. */
  payload: Buffer;
}

/** Encode one client message: the header as JSON, then the payload bytes (if any). */
export function encodeFrame(header: ClientMessage, payload?: Buffer | Uint8Array | string): Buffer {
  const headerBytes = Buffer.from(JSON.stringify(header), 'utf8');
  const payloadBytes =
    payload === undefined ? Buffer.alloc(0) : typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
  const frame = Buffer.allocUnsafe(HEADER_LENGTH_SIZE + headerBytes.length + payloadBytes.length);
  frame.writeUInt32LE(headerBytes.length, 0);
  headerBytes.copy(frame, HEADER_LENGTH_SIZE);
  frame.set(payloadBytes, HEADER_LENGTH_SIZE + headerBytes.length);
  return frame;
}

/**
 * Encode as a list of buffers (length prefix + header, payload), so a large payload is never copied.
 * Send them as one message (e.g. `Buffer.concat`, or a ws `send` of the concatenation).
 */
export function encodeFrameParts(header: ClientMessage, payload?: Buffer): [Buffer, Buffer] {
  const headerBytes = Buffer.from(JSON.stringify(header), 'utf8');
  const head = Buffer.allocUnsafe(HEADER_LENGTH_SIZE + headerBytes.length);
  head.writeUInt32LE(headerBytes.length, 0);
  headerBytes.copy(head, HEADER_LENGTH_SIZE);
  return [head, payload ?? Buffer.alloc(0)];
}

/** Decode and validate one client message. Throws WireError with a stable code. */
export function decodeFrame(frame: Buffer | Uint8Array): DecodedFrame {
  const buf = Buffer.isBuffer(frame) ? frame : Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength);
  if (buf.length > limits.maxMessageBytes) {
    throw new WireError(
      'WHARF_ERR_WS_FRAME_TOO_LARGE',
      `message of ${buf.length} bytes exceeds the limit of ${limits.maxMessageBytes} bytes`,
    );
  }
  if (buf.length < HEADER_LENGTH_SIZE) {
    throw new WireError(
      'WHARF_ERR_WS_BAD_FRAME',
      `frame of ${buf.length} bytes is shorter than its 4-byte header length`,
    );
  }
  const headerLength = buf.readUInt32LE(0);
  if (headerLength > limits.maxHeaderBytes) {
    throw new WireError(
      'WHARF_ERR_WS_BAD_FRAME',
      `header length ${headerLength} exceeds the limit of ${limits.maxHeaderBytes} bytes`,
    );
  }
  if (HEADER_LENGTH_SIZE + headerLength > buf.length) {
    throw new WireError(
      'WHARF_ERR_WS_BAD_FRAME',
      `header length ${headerLength} runs past the end of a ${buf.length}-byte frame`,
    );
  }
  let raw: unknown;
  try {
    raw = JSON.parse(buf.toString('utf8', HEADER_LENGTH_SIZE, HEADER_LENGTH_SIZE + headerLength));
  } catch (err) {
    throw new WireError('WHARF_ERR_WS_BAD_FRAME', `header is not valid JSON: ${(err as Error).message}`);
  }
  const header = validateClientMessage(raw);
  const payload = buf.subarray(HEADER_LENGTH_SIZE + headerLength);
  if (header.type !== 'insert' && payload.length > 0) {
    throw new WireError(
      'WHARF_ERR_WS_BAD_MESSAGE',
      `a ${header.type} message carries no payload, got ${payload.length} bytes`,
      header.id,
    );
  }
  return { header, payload };
}

const DURABILITIES = new Set(['soft', 'hard']);
const CONFLICTS = new Set(['error', 'replace', 'update']);
const FORMATS = new Set(['ndjson', 'json']);

/** Check a parsed header against the protocol. Throws WireError (WHARF_ERR_WS_BAD_MESSAGE). */
export function validateClientMessage(raw: unknown): ClientMessage {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new WireError('WHARF_ERR_WS_BAD_MESSAGE', 'header must be a JSON object');
  }
  const h = raw as Record<string, unknown>;
  const id = h.id;
  if (typeof id !== 'number' || !Number.isSafeInteger(id)) {
    throw new WireError('WHARF_ERR_WS_BAD_MESSAGE', 'header.id must be an integer');
  }
  const bad = (message: string): never => {
    throw new WireError('WHARF_ERR_WS_BAD_MESSAGE', message, id);
  };
  switch (h.type) {
    case 'ensureTable': {
      if (typeof h.table !== 'string' || h.table.length === 0) bad('ensureTable: table must be a non-empty string');
      if (h.primaryKey !== undefined && (typeof h.primaryKey !== 'string' || h.primaryKey.length === 0)) {
        bad('ensureTable: primaryKey must be a non-empty string');
      }
      return {
        type: 'ensureTable',
        id,
        table: h.table as string,
        ...(h.primaryKey !== undefined ? { primaryKey: h.primaryKey as string } : {}),
      };
    }
    case 'insert': {
      if (typeof h.table !== 'string' || h.table.length === 0) bad('insert: table must be a non-empty string');
      if (!FORMATS.has(h.format as string)) bad('insert: format must be "ndjson" or "json"');
      if (h.durability !== undefined && !DURABILITIES.has(h.durability as string))
        bad('insert: durability must be "soft" or "hard"');
      if (h.conflict !== undefined && !CONFLICTS.has(h.conflict as string))
        bad('insert: conflict must be "error", "replace" or "update"');
      const msg: ClientMessage = {
        type: 'insert',
        id,
        table: h.table as string,
        format: h.format as 'ndjson' | 'json',
      };
      if (h.durability !== undefined) msg.durability = h.durability as 'soft' | 'hard';
      if (h.conflict !== undefined) msg.conflict = h.conflict as 'error' | 'replace' | 'update';
      return msg;
    }
    case 'sync':
      return { type: 'sync', id };
    default:
      return bad(`unknown message type ${JSON.stringify(h.type)}`);
  }
}

/** Encode one server message (a text frame). */
export function encodeServerMessage(msg: ServerMessage): string {
  return JSON.stringify(msg);
}

/** Decode one server message (client side). Throws WireError on anything that is not a server message. */
export function decodeServerMessage(text: string | Buffer): ServerMessage {
  let raw: unknown;
  try {
    raw = JSON.parse(typeof text === 'string' ? text : text.toString('utf8'));
  } catch (err) {
    throw new WireError('WHARF_ERR_WS_BAD_MESSAGE', `server message is not valid JSON: ${(err as Error).message}`);
  }
  if (raw === null || typeof raw !== 'object')
    throw new WireError('WHARF_ERR_WS_BAD_MESSAGE', 'server message must be an object');
  const m = raw as Record<string, unknown>;
  switch (m.type) {
    case 'ack':
      if (typeof m.id !== 'number' || typeof m.result !== 'object' || m.result === null) break;
      return m as unknown as ServerMessage;
    case 'synced':
      if (typeof m.id !== 'number') break;
      return m as unknown as ServerMessage;
    case 'error':
      if ((typeof m.id !== 'number' && m.id !== null) || typeof m.code !== 'string' || typeof m.message !== 'string')
        break;
      return m as unknown as ServerMessage;
  }
  throw new WireError('WHARF_ERR_WS_BAD_MESSAGE', `not a server message: ${JSON.stringify(raw).slice(0, 200)}`);
}
