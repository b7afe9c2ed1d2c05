/**
 * Deepest nesting of objects and arrays a document may have, counting the document itself
 * (`{}` is 1 level, `{"a":[1]}` 2). The engine refuses a deeper document at every write, with an
 * error naming this limit and the line or element; the server's HTTP, ws and driver entries
 * enforce the same value. The same constant as the Rust core's `MAX_DOCUMENT_DEPTH`.
 */
export const MAX_DOCUMENT_DEPTH = 128;
