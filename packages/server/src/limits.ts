/**
 * Documented limits (README.md "Limits"). Each can be changed through ServerOptions.limits.
 */
export const defaultLimits = {
  /** HTTP request body (insert batches), in bytes. Larger: 413 WHARF_ERR_BODY_TOO_LARGE. */
  httpBodyBytes: 64 * 1024 * 1024,
  /** One ws ingest message (header + payload). Larger: error message, then close 1009. */
  wsMessageBytes: 64 * 1024 * 1024,
  /** Insert batches in flight per ws connection before the server stops reading from it. */
  wsInflightBatches: 64,
  /** Payload bytes in flight per ws connection before the server stops reading from it. */
  wsInflightBytes: 256 * 1024 * 1024,
  /** Bytes queued for a client that does not read before it is disconnected (ws and driver port). */
  outboundBufferBytes: 64 * 1024 * 1024,
  /** One RethinkDB query frame body. Larger: CLIENT_ERROR, then the connection is closed. */
  driverQueryBytes: 64 * 1024 * 1024,
  /** One handshake message on the driver port (JSON + NUL), as in the reference server. */
  handshakeMessageBytes: 2048,
  /** Time allowed for the driver handshake to finish. */
  handshakeTimeoutMs: 20_000,
  /** Concurrent queries per driver connection; past this the server stops reading from the socket. */
  driverQueriesInFlight: 1024,
  /** Rows per cursor batch (and the byte budget of a batch; the first batch gets a quarter). */
  cursorBatchRows: 1000,
  cursorBatchBytes: 1024 * 1024,
  /**
   * Changes one driver-port changefeed holds for a client that reads slower than the table
   * changes (RethinkDB's changefeed_queue_size): the default, and the most a query's
   * `changefeed_queue_size` may ask. Past it the feed drops changes and says how many in the stream.
   */
  changefeedQueueSize: 100_000,
  /** Changefeeds open at once on one driver connection. Past it: a new feed's query fails with RESOURCE_LIMIT. */
  driverFeedsPerConnection: 64,
  /** Rows returned by one HTTP scan page at most. */
  scanPageRows: 10_000,
  /** Elements of an array built in memory by ReQL (order_by without index, materialized selections). */
  arrayLimit: 100_000,
  /** Worker threads that run `r.js` code (started when first needed). */
  jsWorkers: 2,
  /** V8 heap (old generation) of one `r.js` worker, in MiB. Past it: that evaluation fails with RESOURCE_LIMIT. */
  jsWorkerMemoryMb: 64,
  /** `r.js` evaluations waiting for a free worker. Past it: RESOURCE_LIMIT. */
  jsQueue: 1000,
  /** Time to receive a request's headers. Past it: 408, and the connection is closed. */
  httpHeadersTimeoutMs: 20_000,
  /** Time to receive a whole HTTP request, body included (a body trickled at 1 byte/s ends here): 408, close. */
  httpRequestTimeoutMs: 120_000,
  /** An HTTP connection with no request in progress and no bytes moving is closed after this. */
  httpIdleTimeoutMs: 120_000,
  /** Open connections at once, HTTP (ws included) and driver port together. Past it: HTTP 503, driver connections closed. */
  maxConnections: 1024,
  /** HTTP request bytes held in memory at once across all requests. Past it: 503 WHARF_ERR_OVERLOADED, connection closed. */
  bufferedBodyBytes: 256 * 1024 * 1024,
  /** Failed logins (HTTP credentials, driver-port SCRAM) per client address per minute before it is refused until the minute ends. */
  loginFailuresPerMinute: 10,
} as const;

/**
 * The deepest a document may nest (objects and arrays), the engine's MAX_DOCUMENT_DEPTH. The
 * HTTP and ws entries check it before the engine sees a batch, so a deep document gets a 400
 * naming the limit and its line or element, never a stack overflow. Not a tunable limit: the
 * engine enforces the same number.
 */
export const MAX_DOCUMENT_DEPTH = 128;

export type Limits = { -readonly [K in keyof typeof defaultLimits]: number };
