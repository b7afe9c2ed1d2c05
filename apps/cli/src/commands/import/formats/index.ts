export { NdjsonParser } from './ndjson.js';
export { JsonArrayParser, JsonArrayError } from './json-array.js';
export { CsvParser, CsvError, columnsOf, convert } from './csv.js';
export type { CsvTypes, CsvOptions, ColumnType } from './csv.js';
export { detectFormat, formatFromPath, formatFromContent, FORMATS } from './detect.js';
export { START, DEFAULT_MAX_RECORD_BYTES } from './types.js';
export type { Emit, FormatParser, StartAt, Format } from './types.js';
