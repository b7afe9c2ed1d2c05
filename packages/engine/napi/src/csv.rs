//! `csvToNdjson`: the CSV transcoder of `wharf_engine::csv` for JS, one synchronous call per block
//! of records. The per-record spans come back as numbers in one `Uint32Array`, not an object per
//! record (building objects natively costs ~100 ns per value on the JS thread).
// Everything here is called from JS only; the crate's unit tests do not use it.
#![cfg_attr(test, allow(dead_code))]

use napi::bindgen_prelude::{Buffer, Uint32Array};
use napi::{Error, Result, Status};
use napi_derive::napi;
use wharf_engine::csv::{self, Column, ColumnType, Dialect, Newline};

/// A column of `csvToNdjson`: its key and its type (`string|number|int|boolean|json|auto`).
#[napi(object)]
pub struct CsvColumn {
    pub name: String,
    pub kind: String,
}

#[napi(object)]
pub struct CsvRecordError {
    /// Index of the record (`records[4 * record]`).
    pub record: u32,
    pub message: String,
    pub raw: String,
}

#[napi(object)]
pub struct CsvSyntaxError {
    /// Line breaks between the start of the input and the error.
    pub line: u32,
    pub message: String,
}

/// The answer of `csvToNdjson`. With columns: `ndjson` and `records`, 4 numbers per record (lines
/// before its first line, input offset past it, start and end of its document in `ndjson`, both
/// 0xFFFFFFFF for a reject, whose message is in `errors`). Without: `header` (when the input held
/// a whole first record) and `headerLine`.
#[napi(object)]
pub struct CsvBatch {
    pub ndjson: Buffer,
    pub records: Uint32Array,
    pub errors: Vec<CsvRecordError>,
    pub consumed: u32,
    pub lines: u32,
    pub syntax_error: Option<CsvSyntaxError>,
    pub header: Option<Vec<String>>,
    pub header_line: u32,
}

fn invalid(message: String) -> Error {
    Error::new(Status::InvalidArg, message)
}

/// How to read the input (`src/csv.ts` validates and fills in the defaults).
#[napi(object)]
pub struct CsvOptions {
    /// An ASCII byte.
    pub delimiter: u32,
    pub quoting: bool,
    /// 0 `\n`, 1 `\r\n`, 2 `\r`, 3 the one `input`'s first line ends with.
    pub newline: u32,
    pub strip_bom: bool,
    pub at_end: bool,
    pub max_record_bytes: f64,
}

/// Converts the whole CSV records of `input` to NDJSON documents keyed by `columns`; without
/// `columns`, reads the header (the first record, after a BOM when `stripBom`) instead.
#[napi]
pub fn csv_to_ndjson(input: Buffer, columns: Option<Vec<CsvColumn>>, options: CsvOptions) -> Result<CsvBatch> {
    let CsvOptions { delimiter, quoting, newline, strip_bom, at_end, max_record_bytes } = options;
    let delimiter = u8::try_from(delimiter)
        .ok()
        .filter(u8::is_ascii)
        .ok_or_else(|| invalid(format!("csvToNdjson: the delimiter must be one ASCII character, got {delimiter}")))?;
    if input.len() > csv::MAX_INPUT_BYTES {
        return Err(invalid(format!("csvToNdjson: at most {} bytes per call", csv::MAX_INPUT_BYTES)));
    }
    let newline = match newline {
        0 => Newline::Lf,
        1 => Newline::CrLf,
        2 => Newline::Cr,
        3 => csv::detect_newline(&input, quoting).unwrap_or(Newline::Lf),
        _ => return Err(invalid(format!("csvToNdjson: unknown newline code {newline}"))),
    };
    let dialect = Dialect { delimiter, quoting, newline };
    let empty = || CsvBatch {
        ndjson: Vec::new().into(),
        records: Uint32Array::new(Vec::new()),
        errors: Vec::new(),
        consumed: 0,
        lines: 0,
        syntax_error: None,
        header: None,
        header_line: 0,
    };
    let Some(columns) = columns else {
        return Ok(match csv::read_header(&input, dialect, strip_bom, at_end) {
            Ok(None) => empty(),
            Ok(Some(h)) => CsvBatch {
                consumed: h.consumed as u32,
                lines: h.lines,
                header: Some(h.cells),
                header_line: h.line,
                ..empty()
            },
            Err(e) => CsvBatch { syntax_error: Some(CsvSyntaxError { line: e.line, message: e.message }), ..empty() },
        });
    };
    let columns = columns
        .into_iter()
        .map(|c| match ColumnType::from_name(&c.kind) {
            Some(kind) => Ok(Column { name: c.name, kind }),
            None => Err(invalid(format!("csvToNdjson: column {:?} has an unknown type {:?}", c.name, c.kind))),
        })
        .collect::<Result<Vec<_>>>()?;
    let t = csv::transcode(&input, dialect, &columns, at_end, max_record_bytes as usize);
    let mut records = Vec::with_capacity(t.records.len() * 4);
    for r in &t.records {
        let (a, b) = r.doc.unwrap_or((u32::MAX, u32::MAX));
        records.extend_from_slice(&[r.line, r.input_end, a, b]);
    }
    Ok(CsvBatch {
        ndjson: t.ndjson.into(),
        records: Uint32Array::new(records),
        errors: t
            .errors
            .into_iter()
            .map(|e| CsvRecordError { record: e.record as u32, message: e.message, raw: e.raw })
            .collect(),
        consumed: t.consumed as u32,
        lines: t.lines,
        syntax_error: t.syntax_error.map(|e| CsvSyntaxError { line: e.line, message: e.message }),
        header: None,
        header_line: 0,
    })
}
