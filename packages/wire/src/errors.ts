/** Why a frame or message could not be decoded. `code` is stable and also sent in `error` messages. */
export type WireErrorCode =
  | 'WHARF_ERR_WS_BAD_FRAME'
  | 'WHARF_ERR_WS_FRAME_TOO_LARGE'
  | 'WHARF_ERR_WS_BAD_MESSAGE';

export class WireError extends Error {
  readonly code: WireErrorCode;
  /** The message id, when the header was readable far enough to have one. */
  readonly id: number | null;

  constructor(code: WireErrorCode, message: string, id: number | null = null) {
    super(message);
    this.name = 'WireError';
    this.code = code;
    this.id = id;
  }
}
