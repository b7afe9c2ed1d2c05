export type { ColumnType, CsvOptions, CsvTypes } from './csv.js';
export { CsvError, CsvParser, columnsOf, convert, loadNativeCsv } from './csv.js';
export { detectFormat, FORMATS, formatFromContent, formatFromPath } from './detect.js';
export { JsonArrayError, JsonArrayParser } from './json-array.js';
export { NdjsonParser } from './ndjson.js';
export type { Emit, EmitBlock, Format, FormatParser, StartAt } from './types.js';
export { DEFAULT_MAX_RECORD_BYTES, START } from './types.js';
