/**
 * Numbers of the RethinkDB client protocol (ql2.proto) as used on the wire, shared by the
 * server's driver port and the client's rethinkdb:// target.
 */

/** Handshake magic numbers (u32 LE, the first 4 bytes a client sends). */
export const Version = {
  V0_1: 0x3f61ba36,
  V0_2: 0x723081e1,
  V0_3: 0x5f75e83e,
  V0_4: 0x400c2d20,
  V1_0: 0x34c2bdc3,
} as const;

export const QueryType = {
  START: 1,
  CONTINUE: 2,
  STOP: 3,
  NOREPLY_WAIT: 4,
  SERVER_INFO: 5,
} as const;

export const ResponseType = {
  SUCCESS_ATOM: 1,
  SUCCESS_SEQUENCE: 2,
  SUCCESS_PARTIAL: 3,
  WAIT_COMPLETE: 4,
  SERVER_INFO: 5,
  CLIENT_ERROR: 16,
  COMPILE_ERROR: 17,
  RUNTIME_ERROR: 18,
} as const;

export const ErrorType = {
  INTERNAL: 1000000,
  RESOURCE_LIMIT: 2000000,
  QUERY_LOGIC: 3000000,
  NON_EXISTENCE: 3100000,
  OP_FAILED: 4100000,
  OP_INDETERMINATE: 4200000,
  USER: 5000000,
  PERMISSION_ERROR: 6000000,
} as const;

export type ErrorTypeValue = (typeof ErrorType)[keyof typeof ErrorType];

/** The error class name the official JS driver gives a RUNTIME_ERROR of each type. */
export const runtimeErrorNames: Record<number, string> = {
  [ErrorType.INTERNAL]: 'ReqlInternalError',
  [ErrorType.RESOURCE_LIMIT]: 'ReqlResourceLimitError',
  [ErrorType.QUERY_LOGIC]: 'ReqlQueryLogicError',
  [ErrorType.NON_EXISTENCE]: 'ReqlNonExistenceError',
  [ErrorType.OP_FAILED]: 'ReqlOpFailedError',
  [ErrorType.OP_INDETERMINATE]: 'ReqlOpIndeterminateError',
  [ErrorType.USER]: 'ReqlUserError',
  [ErrorType.PERMISSION_ERROR]: 'ReqlPermissionError',
};

/** Term numbers the bulk insert query uses. */
export const Term = {
  DB: 14,
  TABLE: 15,
  COERCE_TO: 51,
  INSERT: 56,
  JSON: 98,
} as const;
