//! CSV (and TSV) records to NDJSON documents, for imports: one call turns a block of CSV text into
//! one JSON object per record, keyed by the header's column names and typed per column, without a
//! JS object per record. The storage engine does not use it; it sits beside it so that a loader
//! can hand the engine's bulk path (`DocFormat::Ndjson`) the bytes this makes.
//!
//! Records are split by `csv-core` (RFC 4180: `"` quotes, `""` inside quotes, `\n`, `\r\n` or
//! `\r` ends a record, empty lines are skipped). `csv-core` accepts any byte sequence; the stricter
//! rules of the CLI's JS parser (csv-parse) are checked here on the records that hold a quote: a
//! quote inside an unquoted field, a closing quote followed by something other than a delimiter or
//! the record's end, and a quote still open at the end of the input stop the transcoding with a
//! [`SyntaxError`] at that line (the records after it cannot be located reliably).
//!
//! A record whose field count differs from the columns', or whose typed value does not convert, is
//! a per-record reject with its message; the records around it are unaffected. Field values are
//! decoded as UTF-8, invalid sequences replaced by U+FFFD (as `Buffer#toString` does).
//!
//! Every call is stateless: [`transcode`] takes the bytes from a record boundary, converts the
//! records that end inside them, and says how many bytes they took; the caller keeps the rest
//! (an unfinished record) for the next call, or says `at_end` to end it.

use csv_core::{ReadRecordResult, Reader, ReaderBuilder, Terminator};

/// How a column's cells become JSON values (the CLI's `--csv-types` and `name:type` headers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnType {
    /// The text, as a string.
    String,
    /// A number; empty drops the field; anything else is a reject.
    Number,
    /// A number that is a safe integer (|n| ≤ 2^53 - 1); empty drops the field.
    Int,
    /// `true|1|yes`, `false|0|no` (any case); empty drops the field.
    Boolean,
    /// A JSON text; empty drops the field.
    Json,
    /// `true`, `false`, `null`, a number, else the text; empty drops the field.
    Auto,
}

impl ColumnType {
    /// The type named `name` (`string`, `number`, `int`, `boolean`, `json`, `auto`).
    pub fn from_name(name: &str) -> Option<ColumnType> {
        Some(match name {
            "string" => ColumnType::String,
            "number" => ColumnType::Number,
            "int" => ColumnType::Int,
            "boolean" => ColumnType::Boolean,
            "json" => ColumnType::Json,
            "auto" => ColumnType::Auto,
            _ => return None,
        })
    }
}

/// One column: the key its cells get and how they convert.
#[derive(Clone, Debug)]
pub struct Column {
    pub name: String,
    pub kind: ColumnType,
}

/// The dialect.
#[derive(Clone, Copy, Debug)]
pub struct Dialect {
    /// The field delimiter (`,`, or `\t` for TSV).
    pub delimiter: u8,
    /// Whether `"` quotes fields (TSV: no, a `"` is text).
    pub quoting: bool,
    /// The record delimiter ([`detect_newline`]).
    pub newline: Newline,
}

/// A record delimiter. As in csv-parse, a file uses the one its first line ends with: with `\n`,
/// a `\r` before it is data; with `\r\n`, a lone `\n` ends a record too (csv-parse: data).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Newline {
    Lf,
    CrLf,
    Cr,
}

impl Newline {
    /// The byte that ends a record, and that line numbers count.
    fn byte(self) -> u8 {
        if self == Newline::Cr {
            b'\r'
        } else {
            b'\n'
        }
    }
}

/// A reject: a record that cannot be a document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordError {
    /// Index of the record in [`Transcoded::records`].
    pub record: usize,
    /// What is wrong, and in which column.
    pub message: String,
    /// The record's text without its line ending, for the rejects file.
    pub raw: String,
}

/// One record: where it starts and ends, and its document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordSpan {
    /// Lines (line breaks) between the start of the input and the record's first line.
    pub line: u32,
    /// Byte offset in the input just past the record (and its line ending).
    pub input_end: u32,
    /// Byte range of its document in [`Transcoded::ndjson`], or `None` for a reject.
    pub doc: Option<(u32, u32)>,
}

/// A quoting error: the input cannot be split into records from here on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    /// Lines between the start of the input and the error.
    pub line: u32,
    pub message: String,
}

impl std::fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// The result of one [`transcode`] call.
#[derive(Debug, Default)]
pub struct Transcoded {
    /// The documents, each followed by `\n`.
    pub ndjson: Vec<u8>,
    pub records: Vec<RecordSpan>,
    pub errors: Vec<RecordError>,
    /// Bytes of the input the records took (with the empty lines among them).
    pub consumed: usize,
    /// Line breaks in those bytes.
    pub lines: u32,
    /// Set when a quoting error stopped the call; the records before it are above.
    pub syntax_error: Option<SyntaxError>,
}

/// The header: the first record's cells.
#[derive(Debug)]
pub struct Header {
    pub cells: Vec<String>,
    /// Lines before the header's first line.
    pub line: u32,
    /// Bytes and line breaks it took (with the empty lines before it).
    pub consumed: usize,
    pub lines: u32,
}

/// Byte-order mark at the start of a UTF-8 file.
pub const BOM: &[u8] = b"\xEF\xBB\xBF";

/// How much of a too-long record a reject shows.
pub const RAW_HEAD_BYTES: usize = 200;

/// The largest input one call takes: offsets are `u32`.
pub const MAX_INPUT_BYTES: usize = u32::MAX as usize;

fn reader(dialect: Dialect) -> Reader {
    ReaderBuilder::new()
        .delimiter(dialect.delimiter)
        .quoting(dialect.quoting)
        .double_quote(true)
        .terminator(Terminator::Any(dialect.newline.byte()))
        .build()
}

/// Reads one record from `input` into `fields`/`ends`; returns the input bytes it took (leading
/// empty lines and its line ending included). `None`: the input ends inside a record and
/// `at_end` is false, or it holds no record at all.
fn split_one(
    rdr: &mut Reader,
    input: &[u8],
    at_end: bool,
    fields: &mut Vec<u8>,
    ends: &mut Vec<usize>,
) -> Option<usize> {
    rdr.reset();
    let (mut pos, mut nout, mut nend) = (0, 0, 0);
    loop {
        // Once `input` is used up, the empty slice tells csv-core the input is over.
        let (res, nin, o, e) = rdr.read_record(&input[pos..], &mut fields[nout..], &mut ends[nend..]);
        pos += nin;
        nout += o;
        nend += e;
        match res {
            ReadRecordResult::InputEmpty if at_end => {}
            ReadRecordResult::InputEmpty | ReadRecordResult::End => return None,
            ReadRecordResult::OutputFull => grow(fields),
            ReadRecordResult::OutputEndsFull => grow_ends(ends),
            ReadRecordResult::Record => {
                ends.truncate(nend);
                fields.truncate(nout);
                return Some(pos);
            }
        }
    }
}

fn grow(fields: &mut Vec<u8>) {
    let n = (fields.len() * 2).max(256);
    fields.resize(n, 0);
}

fn grow_ends(ends: &mut Vec<usize>) {
    let n = (ends.len() * 2).max(16);
    ends.resize(n, 0);
}

/// Line breaks in `bytes` (the record delimiter's last byte).
fn count_lines(bytes: &[u8], newline: Newline) -> u32 {
    memchr::memchr_iter(newline.byte(), bytes).count() as u32
}

/// What [`next_record`] found.
enum Next {
    /// The input holds no whole record (yet).
    None,
    /// Only empty lines (`taken` bytes, `lines` line breaks): no record.
    Empty { taken: usize, lines: u32 },
    /// A record, its fields in `fields`/`ends`.
    /// `utf8`: the record's text is valid UTF-8 (so is each field then).
    Record { taken: usize, first_line: u32, lines: u32, body: (usize, usize), utf8: bool },
}

/// The next record of `input`, checked against csv-parse's quoting rules; `Err`: a quoting error
/// in the record that starts that many lines into `input`.
fn next_record(
    rdr: &mut Reader,
    input: &[u8],
    dialect: Dialect,
    at_end: bool,
    fields: &mut Vec<u8>,
    ends: &mut Vec<usize>,
) -> Result<Next, (u32, String)> {
    let Some(taken) = split_one(rdr, input, at_end, fields, ends) else {
        return Ok(if at_end && !input.is_empty() {
            // csv-core ends an input of only empty lines without a record.
            Next::Empty { taken: input.len(), lines: count_lines(input, dialect.newline) }
        } else {
            Next::None
        });
    };
    let raw = &input[..taken];
    let nl = dialect.newline.byte();
    let lead = raw.iter().position(|&c| c != nl).unwrap_or(raw.len());
    let quoted = dialect.quoting && memchr::memchr(b'"', raw).is_some();
    // Without quotes, a record's only line break is its own (if it has one).
    let lines = if quoted || lead > 0 { count_lines(raw, dialect.newline) } else { u32::from(raw.last() == Some(&nl)) };
    let (start, end) = body(raw, lead, dialect.newline);
    // Empty lines; with CRLF, a `\r\n` line is one too (csv-core ends records at the `\n`).
    if start == end && (lead == raw.len() || dialect.newline == Newline::CrLf) {
        return Ok(Next::Empty { taken, lines });
    }
    let first_line = count_lines(&raw[..lead], dialect.newline);
    if dialect.newline == Newline::CrLf && raw.ends_with(b"\r\n") {
        // The `\r` of the record's `\r\n` ends its last field (as data, to csv-core).
        let previous = if ends.len() >= 2 { ends[ends.len() - 2] } else { 0 };
        if let Some(last) = ends.last_mut() {
            if *last > previous && fields[*last - 1] == b'\r' {
                *last -= 1;
            }
        }
    }
    let text = &raw[start..end];
    if quoted {
        if let Some(message) = check_quotes(text, dialect.delimiter) {
            return Err((first_line, message));
        }
    }
    Ok(Next::Record { taken, first_line, lines, body: (start, end), utf8: std::str::from_utf8(text).is_ok() })
}

/// A record [`split_plain`] split.
struct Plain {
    /// Input bytes it took, its line ending included.
    taken: usize,
    /// Line breaks in them (0 or 1).
    lines: u32,
    /// The end of its text (without its line ending).
    text_end: usize,
}

/// Splits the record at the start of `input` into `ranges` (offsets in `input`) when that is
/// simple: it holds no quote (or quoting is off), it does not start with an empty line, its
/// record delimiter is `\n` or `\r\n`. `None`: csv-core's turn ([`next_record`]).
fn split_plain(input: &[u8], dialect: Dialect, at_end: bool, ranges: &mut Vec<(usize, usize)>) -> Option<Plain> {
    if dialect.newline == Newline::Cr || *input.first()? == b'\n' {
        return None;
    }
    let (line_end, taken, lines) = match memchr::memchr(b'\n', input) {
        Some(i) => (i, i + 1, 1),
        None if at_end => (input.len(), input.len(), 0),
        None => return None,
    };
    let line = &input[..line_end];
    let text_end = if line.last() == Some(&b'\r') { line_end - 1 } else { line_end };
    // The fields: with `\r\n` a `\r` before the `\n` ends the record; with `\n` it is data.
    let fields_end = if dialect.newline == Newline::CrLf { text_end } else { line_end };
    if fields_end == 0 {
        return None; // an empty `\r\n` line
    }
    // One pass for delimiters and quotes (fields are short: a byte loop beats a memchr per field).
    let quote = if dialect.quoting { b'"' } else { dialect.delimiter };
    ranges.clear();
    let mut start = 0;
    for (i, &c) in line.iter().enumerate() {
        if c == dialect.delimiter {
            ranges.push((start, i));
            start = i + 1;
        } else if c == quote {
            return None;
        }
    }
    ranges.push((start, fields_end));
    Some(Plain { taken, lines, text_end })
}

/// The bounds of the record's text in `raw`: without the empty lines before it (`lead` bytes) and
/// its line ending.
fn body(raw: &[u8], lead: usize, newline: Newline) -> (usize, usize) {
    let mut end = raw.len();
    if end > lead && raw[end - 1] == newline.byte() {
        end -= 1;
        if newline != Newline::Cr && end > lead && raw[end - 1] == b'\r' {
            end -= 1;
        }
    }
    (lead, end)
}

/// csv-parse's quoting rules on one record's text (`body`, which holds a quote): the first
/// violation's message.
fn check_quotes(body: &[u8], delimiter: u8) -> Option<String> {
    let mut i = 0;
    let mut field = 0; // csv-parse counts fields from 0 in its messages
    let mut field_start = true;
    while i < body.len() {
        let c = body[i];
        if field_start && c == b'"' {
            // A quoted field: up to its closing quote.
            i += 1;
            loop {
                match memchr::memchr(b'"', &body[i..]) {
                    None => return Some("Quote Not Closed: the parsing is finished with an opening quote".into()),
                    Some(q) => {
                        i += q + 1;
                        if body.get(i) == Some(&b'"') {
                            i += 1;
                            continue;
                        }
                        break;
                    }
                }
            }
            match body.get(i) {
                None => return None,
                Some(&d) if d == delimiter => {
                    i += 1;
                    field += 1;
                }
                Some(&c) => {
                    return Some(format!(
                        "Invalid Closing Quote: got {} instead of delimiter, record delimiter or end of input",
                        serde_json::to_string(&char_at(body, i, c)).unwrap_or_default()
                    ))
                }
            }
        } else if c == b'"' {
            let start = body[..i].iter().rposition(|&b| b == delimiter).map_or(0, |p| p + 1);
            return Some(format!(
                "Invalid Opening Quote: a quote is found on field {field}, value is {}",
                serde_json::to_string(&String::from_utf8_lossy(&body[start..i])).unwrap_or_default()
            ));
        } else {
            if c == delimiter {
                field += 1;
                field_start = true;
            } else {
                field_start = false;
            }
            i += 1;
        }
    }
    None
}

fn char_at(body: &[u8], i: usize, c: u8) -> String {
    if c.is_ascii() {
        return (c as char).to_string();
    }
    let end = (i + 4).min(body.len());
    String::from_utf8_lossy(&body[i..end]).chars().next().map(String::from).unwrap_or_default()
}

/// The record delimiter csv-parse would use for `input` (from a file's start or a record
/// boundary): the first line ending outside quotes. `None` until the input holds one (and at its
/// end, when it holds none: any will do).
pub fn detect_newline(input: &[u8], quoting: bool) -> Option<Newline> {
    let mut in_quotes = false;
    for (i, &c) in input.iter().enumerate() {
        match c {
            b'"' if quoting => in_quotes = !in_quotes,
            b'\n' if !in_quotes => return Some(Newline::Lf),
            b'\r' if !in_quotes => {
                return input.get(i + 1).map(|&n| if n == b'\n' { Newline::CrLf } else { Newline::Cr });
            }
            _ => {}
        }
    }
    None
}

/// Reads the header: the first record of `input` (after a BOM if `strip_bom`). `Ok(None)`: the
/// input holds no whole record yet (and `at_end` is false), or holds none at all.
pub fn read_header(
    input: &[u8],
    dialect: Dialect,
    strip_bom: bool,
    at_end: bool,
) -> Result<Option<Header>, SyntaxError> {
    let skip = if strip_bom && input.starts_with(BOM) { BOM.len() } else { 0 };
    let mut rdr = reader(dialect);
    let (mut fields, mut ends) = (vec![0; 4096], vec![0; 64]);
    let (mut pos, mut line) = (skip, 0);
    loop {
        match next_record(&mut rdr, &input[pos..], dialect, at_end, &mut fields, &mut ends) {
            Err((at, message)) => return Err(SyntaxError { line: line + at, message }),
            Ok(Next::None) => return Ok(None),
            Ok(Next::Empty { taken, lines }) => {
                pos += taken;
                line += lines;
                if pos == input.len() {
                    return Ok(None);
                }
            }
            Ok(Next::Record { taken, first_line, lines, .. }) => {
                let mut cells = Vec::with_capacity(ends.len());
                let mut start = 0;
                for &end in &ends {
                    cells.push(String::from_utf8_lossy(&fields[start..end]).into_owned());
                    start = end;
                }
                return Ok(Some(Header { cells, line: line + first_line, consumed: pos + taken, lines: line + lines }));
            }
        }
    }
}

/// A column's key, JSON-encoded with its `:` (written once per call, copied per record).
fn keys(columns: &[Column]) -> Vec<Vec<u8>> {
    columns
        .iter()
        .map(|c| {
            let mut k = serde_json::to_vec(&c.name).expect("a string encodes");
            k.push(b':');
            k
        })
        .collect()
}

/// Converts the whole records of `input` (which starts at a record boundary, after any header)
/// into NDJSON documents keyed by `columns`. With `at_end`, the input's last record may lack its
/// line ending and a quote still open at the end is an error; without, an unfinished last record
/// is left for the next call (`consumed` stops before it).
/// A record whose text is longer than `max_record_bytes` is a reject (its raw text cut to 200
/// bytes), as the caller rejects one it cannot hold whole.
pub fn transcode(
    input: &[u8],
    dialect: Dialect,
    columns: &[Column],
    at_end: bool,
    max_record_bytes: usize,
) -> Transcoded {
    assert!(input.len() <= MAX_INPUT_BYTES, "transcode takes at most 4 GiB at a time");
    let keys = keys(columns);
    // Room for every record's keys and punctuation: one realloc of a large block costs more.
    let per_record: usize = keys.iter().map(|k| k.len() + 3).sum::<usize>() + 2;
    let estimate = input.len() + (count_lines(input, dialect.newline) as usize + 1) * per_record;
    let mut out = Transcoded { ndjson: Vec::with_capacity(estimate), ..Default::default() };
    let mut rdr = reader(dialect);
    let (mut fields, mut ends) = (vec![0; 4096], vec![0; columns.len().max(1) * 2]);
    let mut ranges: Vec<(usize, usize)> = Vec::with_capacity(columns.len() + 1);
    let mut pos = 0;
    let mut line = 0u32;
    while pos < input.len() {
        // Most records hold no quote and start right after the previous one: split them here,
        // with no copy; the others go through csv-core.
        let plain = split_plain(&input[pos..], dialect, at_end, &mut ranges);
        let (taken, first_line, lines, (start, end), utf8, base) = match plain {
            Some(p) => {
                let text = &input[pos..pos + p.text_end];
                (p.taken, line, p.lines, (0, p.text_end), std::str::from_utf8(text).is_ok(), &input[pos..])
            }
            None => match next_record(&mut rdr, &input[pos..], dialect, at_end, &mut fields, &mut ends) {
                Err((at, message)) => {
                    out.syntax_error = Some(SyntaxError { line: line + at, message });
                    return out;
                }
                Ok(Next::None) => break,
                Ok(Next::Empty { taken, lines }) => {
                    pos += taken;
                    line += lines;
                    out.consumed = pos;
                    out.lines = line;
                    continue;
                }
                Ok(Next::Record { taken, first_line, lines, body, utf8 }) => {
                    ranges.clear();
                    let mut start = 0;
                    for &end in &ends {
                        ranges.push((start, end));
                        start = end;
                    }
                    (taken, line + first_line, lines, body, utf8, &fields[..])
                }
            },
        };
        let text = &input[pos + start..pos + end];
        pos += taken;
        line += lines;
        let index = out.records.len();
        let reject =
            |message: String| RecordError { record: index, message, raw: String::from_utf8_lossy(text).into_owned() };
        let doc_start = out.ndjson.len();
        let result = if text.len() > max_record_bytes {
            let head = String::from_utf8_lossy(&text[..text.len().min(RAW_HEAD_BYTES)]);
            Err(RecordError {
                record: index,
                message: format!("record longer than {max_record_bytes} bytes"),
                raw: format!("{head}…"),
            })
        } else if ranges.len() != columns.len() {
            Err(reject(format!("{} fields, the header has {}", ranges.len(), columns.len())))
        } else {
            write_document(&mut out.ndjson, base, &ranges, columns, &keys, utf8).map_err(reject)
        };
        match result {
            Ok(()) => {
                let doc_end = out.ndjson.len();
                out.ndjson.push(b'\n');
                out.records.push(RecordSpan {
                    line: first_line,
                    input_end: pos as u32,
                    doc: Some((doc_start as u32, doc_end as u32)),
                });
            }
            Err(e) => {
                out.ndjson.truncate(doc_start);
                out.records.push(RecordSpan { line: first_line, input_end: pos as u32, doc: None });
                out.errors.push(e);
            }
        }
        out.consumed = pos;
        out.lines = line;
    }
    out
}

/// Writes one record's document; `Err` is a reject's message.
fn write_document(
    ndjson: &mut Vec<u8>,
    base: &[u8],
    ranges: &[(usize, usize)],
    columns: &[Column],
    keys: &[Vec<u8>],
    utf8: bool,
) -> Result<(), String> {
    ndjson.push(b'{');
    let mut first = true;
    for (i, &(start, end)) in ranges.iter().enumerate() {
        let bytes = &base[start..end];
        let text = if utf8 {
            // SAFETY: the record's text is valid UTF-8 (checked by the caller), and a field is a
            // piece of it cut at ASCII bytes (delimiters, quotes), so it is valid UTF-8 too.
            std::borrow::Cow::Borrowed(unsafe { std::str::from_utf8_unchecked(bytes) })
        } else {
            String::from_utf8_lossy(bytes)
        };
        let mark = ndjson.len();
        if !first {
            ndjson.push(b',');
        }
        ndjson.extend_from_slice(&keys[i]);
        let value_start = ndjson.len();
        let column = &columns[i];
        convert(&text, column.kind, ndjson)
            .map_err(|m| format!("column {}: {m}", serde_json::to_string(&column.name).unwrap_or_default()))?;
        if ndjson.len() == value_start {
            ndjson.truncate(mark); // an empty cell: no field
            continue;
        }
        first = false;
    }
    ndjson.push(b'}');
    Ok(())
}

/// JS's `String#trim`: ECMAScript's white space and line terminators.
fn js_trim(s: &str) -> &str {
    fn is_js_space(c: char) -> bool {
        matches!(
            c,
            '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
                ..='\u{200A}' | '\u{2028}' | '\u{2029}' | '\u{202F}' | '\u{205F}' | '\u{3000}' | '\u{FEFF}'
        )
    }
    s.trim_matches(is_js_space)
}

/// JSON's number grammar (`-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?`), the CLI's `NUMBER`.
fn is_json_number(s: &[u8]) -> bool {
    let mut i = 0;
    let n = s.len();
    if i < n && s[i] == b'-' {
        i += 1;
    }
    if i >= n {
        return false;
    }
    if s[i] == b'0' {
        i += 1;
    } else if s[i].is_ascii_digit() {
        while i < n && s[i].is_ascii_digit() {
            i += 1;
        }
    } else {
        return false;
    }
    if i < n && s[i] == b'.' {
        i += 1;
        let d = i;
        while i < n && s[i].is_ascii_digit() {
            i += 1;
        }
        if i == d {
            return false;
        }
    }
    if i < n && (s[i] == b'e' || s[i] == b'E') {
        i += 1;
        if i < n && (s[i] == b'+' || s[i] == b'-') {
            i += 1;
        }
        let d = i;
        while i < n && s[i].is_ascii_digit() {
            i += 1;
        }
        if i == d {
            return false;
        }
    }
    i == n
}

/// The JSON text JS writes for the number `s` denotes (`JSON.stringify(Number(s))`), or `None` when
/// it is not finite. `s` matches [`is_json_number`].
fn write_number(s: &str, out: &mut Vec<u8>) -> bool {
    if s == "-0" {
        out.push(b'0');
        return true;
    }
    if is_js_canonical(s.as_bytes()) {
        out.extend_from_slice(s.as_bytes());
        return true;
    }
    match s.parse::<f64>() {
        Ok(n) if n.is_finite() => {
            out.extend_from_slice(ryu_js::Buffer::new().format(n).as_bytes());
            true
        }
        _ => false,
    }
}

/// Whether JS writes the number `s` (which matches [`is_json_number`], and is not `-0`) as `s`
/// itself: no exponent, at most 15 significant digits (a double tells all such decimals apart, so
/// none shorter denotes the same number), no trailing zero in the fraction, and not below 1e-6
/// (which JS writes with an exponent).
fn is_js_canonical(s: &[u8]) -> bool {
    let digits = if s[0] == b'-' { &s[1..] } else { s };
    if digits.iter().any(|&c| c == b'e' || c == b'E') {
        return false;
    }
    let (int, frac) = match memchr::memchr(b'.', digits) {
        Some(dot) => (&digits[..dot], &digits[dot + 1..]),
        None => (digits, &digits[digits.len()..]),
    };
    if frac.last() == Some(&b'0') {
        return false;
    }
    let significant = if int == b"0" {
        let zeros = frac.iter().take_while(|&&c| c == b'0').count();
        if zeros > 5 || (frac.is_empty() && s[0] == b'-') {
            return false;
        }
        frac.len() - zeros
    } else {
        int.len() + frac.len()
    };
    significant <= 15
}

fn write_string(s: &str, out: &mut Vec<u8>) {
    serde_json::to_writer(out, s).expect("a string encodes");
}

/// One cell to its JSON text appended to `out` (nothing: the field is dropped), or a reject's
/// message.
fn convert(value: &str, kind: ColumnType, out: &mut Vec<u8>) -> Result<(), String> {
    let base = out.len();
    match kind {
        ColumnType::String => write_string(value, out),
        ColumnType::Auto => match value {
            "" => {}
            "true" | "false" | "null" => out.extend_from_slice(value.as_bytes()),
            _ => {
                if !(is_json_number(value.as_bytes()) && write_number(value, out)) {
                    out.truncate(base);
                    write_string(value, out);
                }
            }
        },
        ColumnType::Number | ColumnType::Int => {
            if value.is_empty() {
                return Ok(());
            }
            let trimmed = js_trim(value);
            let quoted = || serde_json::to_string(value).unwrap_or_default();
            if !is_json_number(trimmed.as_bytes()) {
                return Err(format!("{} is not a number", quoted()));
            }
            let n: f64 = trimmed.parse().map_err(|_| format!("{} is not a number", quoted()))?;
            if !n.is_finite() {
                return Err(format!("{} is not a number", quoted()));
            }
            if kind == ColumnType::Int && !(n.fract() == 0.0 && n.abs() <= 9_007_199_254_740_991.0) {
                return Err(format!("{} is not an integer", quoted()));
            }
            write_number(trimmed, out);
        }
        ColumnType::Boolean => {
            if value.is_empty() {
                return Ok(());
            }
            let lower = value.to_lowercase();
            match lower.as_str() {
                "true" | "1" | "yes" => out.extend_from_slice(b"true"),
                "false" | "0" | "no" => out.extend_from_slice(b"false"),
                _ => return Err(format!("{} is not a boolean", serde_json::to_string(value).unwrap_or_default())),
            }
        }
        ColumnType::Json => {
            if value.is_empty() {
                return Ok(());
            }
            if serde_json::from_str::<serde::de::IgnoredAny>(value).is_err() {
                // JS's `slice(0, 100)`: UTF-16 units.
                let head = String::from_utf16_lossy(&value.encode_utf16().take(100).collect::<Vec<u16>>());
                return Err(format!("{} is not JSON", serde_json::to_string(&head).unwrap_or_default()));
            }
            minify_json(value.as_bytes(), out);
        }
    }
    Ok(())
}

/// Copies a valid JSON text as JS's `JSON.stringify(JSON.parse(text))` writes it: without the
/// white space between tokens (an NDJSON line holds no line break; inside strings it is escaped
/// already, as raw control characters are invalid there), numbers as JS writes them (`-0` → `0`,
/// `1.50` → `1.5`, one too large for a double → `null`).
fn minify_json(json: &[u8], out: &mut Vec<u8>) {
    let mut in_string = false;
    let mut i = 0;
    while i < json.len() {
        let c = json[i];
        if in_string {
            out.push(c);
            if c == b'\\' {
                out.push(json[i + 1]);
                i += 1;
            } else if c == b'"' {
                in_string = false;
            }
        } else if c == b'"' {
            in_string = true;
            out.push(c);
        } else if c == b'-' || c.is_ascii_digit() {
            let end = json[i..]
                .iter()
                .position(|&b| !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                .map_or(json.len(), |n| i + n);
            // SAFETY: ASCII bytes only.
            let token = unsafe { std::str::from_utf8_unchecked(&json[i..end]) };
            if !write_number(token, out) {
                out.extend_from_slice(b"null");
            }
            i = end;
            continue;
        } else if !matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
            out.push(c);
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: Dialect = Dialect { delimiter: b',', quoting: true, newline: Newline::Lf };
    const CRLF: Dialect = Dialect { delimiter: b',', quoting: true, newline: Newline::CrLf };
    const TSV: Dialect = Dialect { delimiter: b'\t', quoting: false, newline: Newline::Lf };

    fn cols(spec: &[(&str, ColumnType)]) -> Vec<Column> {
        spec.iter().map(|(n, k)| Column { name: n.to_string(), kind: *k }).collect()
    }

    fn strings(names: &[&str]) -> Vec<Column> {
        names.iter().map(|n| Column { name: n.to_string(), kind: ColumnType::String }).collect()
    }

    /// (first line, document or error) per record.
    fn docs(t: &Transcoded) -> Vec<(u32, String)> {
        let mut errors = t.errors.iter();
        t.records
            .iter()
            .map(|r| match r.doc {
                Some((a, b)) => (r.line, String::from_utf8(t.ndjson[a as usize..b as usize].to_vec()).unwrap()),
                None => (r.line, format!("! {}", errors.next().unwrap().message)),
            })
            .collect()
    }

    #[test]
    fn records_with_lines_offsets_and_rejects() {
        let input = b"1,Ada,36\n\n2,\"Grace\nHopper\",85\n3,only-two\n4,\"Alan, \"\"T\"\"\",41\n";
        let t = transcode(input, CSV, &strings(&["id", "name", "age"]), true, usize::MAX);
        assert_eq!(
            docs(&t),
            vec![
                (0, r#"{"id":"1","name":"Ada","age":"36"}"#.to_string()),
                (2, r#"{"id":"2","name":"Grace\nHopper","age":"85"}"#.to_string()),
                (4, "! 2 fields, the header has 3".to_string()),
                (5, r#"{"id":"4","name":"Alan, \"T\"","age":"41"}"#.to_string()),
            ]
        );
        assert_eq!(t.errors[0].raw, "3,only-two");
        let ends: Vec<u32> = t.records.iter().map(|r| r.input_end).collect();
        assert_eq!(ends, vec![9, 30, 41, input.len() as u32]);
        assert_eq!(t.consumed, input.len());
        assert_eq!(t.lines, 6);
        assert!(t.syntax_error.is_none());
    }

    #[test]
    fn an_unfinished_record_is_left_for_the_next_call() {
        let cols = strings(&["a", "b"]);
        let input = b"1,2\n3,\"x\ny";
        let t = transcode(input, CSV, &cols, false, usize::MAX);
        assert_eq!(docs(&t), vec![(0, r#"{"a":"1","b":"2"}"#.to_string())]);
        assert_eq!((t.consumed, t.lines), (4, 1));
        // No line ending at the very end: without at_end it may continue; with it, it is whole.
        let t = transcode(b"1,2", CSV, &cols, false, usize::MAX);
        assert_eq!((t.records.len(), t.consumed), (0, 0));
        let t = transcode(b"1,2", CSV, &cols, true, usize::MAX);
        assert_eq!(docs(&t), vec![(0, r#"{"a":"1","b":"2"}"#.to_string())]);
        assert_eq!(t.consumed, 3);
        // Trailing empty lines are taken, with their line breaks.
        let t = transcode(b"1,2\n\n\n", CSV, &cols, true, usize::MAX);
        assert_eq!((t.records.len(), t.consumed, t.lines), (1, 6, 3));
    }

    #[test]
    fn line_endings_as_csv_parse_detects_them() {
        let cols = strings(&["a", "b"]);
        assert_eq!(detect_newline(b"a,b\r\n1", true), Some(Newline::CrLf));
        assert_eq!(detect_newline(b"\"a\nb\",c\n", true), Some(Newline::Lf));
        assert_eq!(detect_newline(b"a,b\r1", true), Some(Newline::Cr));
        assert_eq!(detect_newline(b"a,b\r", true), None);
        let input = b"1,2\r\n\r\n\"x\r\ny\",\"4\"\r\n5,\r\n";
        let t = transcode(input, CRLF, &cols, false, usize::MAX);
        assert_eq!(
            docs(&t),
            vec![
                (0, r#"{"a":"1","b":"2"}"#.to_string()),
                (2, r#"{"a":"x\r\ny","b":"4"}"#.to_string()),
                (4, r#"{"a":"5","b":""}"#.to_string()),
            ]
        );
        assert_eq!((t.consumed, t.lines), (input.len(), 5));
        // With `\n` detected, a `\r` before it is data (and a `\r\n` line a one-field record).
        let t = transcode(b"1,2\r\n\r\n", CSV, &cols, true, usize::MAX);
        assert_eq!(
            docs(&t),
            vec![(0, r#"{"a":"1","b":"2\r"}"#.to_string()), (1, "! 1 fields, the header has 2".into())]
        );
        let cr = Dialect { newline: Newline::Cr, ..CSV };
        let t = transcode(b"1,2\r\r3,4\r", cr, &cols, true, usize::MAX);
        assert_eq!(docs(&t), vec![(0, r#"{"a":"1","b":"2"}"#.to_string()), (2, r#"{"a":"3","b":"4"}"#.to_string())]);
    }

    #[test]
    fn quoting_errors_stop_with_their_line() {
        let cols = strings(&["a", "b"]);
        let t = transcode(b"1,2\n3,\"4\n\n5", CSV, &cols, true, usize::MAX);
        assert_eq!(t.records.len(), 1);
        let e = t.syntax_error.unwrap();
        assert!(e.message.starts_with("Quote Not Closed"), "{e:?}");
        assert_eq!(e.line, 1);
        let t = transcode(b"1,2\n3,\"4\"x\n", CSV, &cols, true, usize::MAX);
        let e = t.syntax_error.unwrap();
        assert!(e.message.starts_with("Invalid Closing Quote: got \"x\""), "{e:?}");
        assert_eq!((e.line, t.records.len(), t.consumed), (1, 1, 4));
        let t = transcode(b"1,2\n3,\"a\nb\"\n5,x\"y\n", CSV, &cols, true, usize::MAX);
        let e = t.syntax_error.unwrap();
        assert!(e.message.starts_with("Invalid Opening Quote: a quote is found on field 1"), "{e:?}");
        assert_eq!((e.line, t.records.len()), (3, 2));
        // Without at_end an open quote is an unfinished record, not an error.
        let t = transcode(b"1,\"2\n", CSV, &cols, false, usize::MAX);
        assert!(t.syntax_error.is_none());
        assert_eq!(t.consumed, 0);
        // TSV: a quote is text.
        let t = transcode(b"\"x\ty\n", TSV, &cols, true, usize::MAX);
        assert_eq!(docs(&t), vec![(0, r#"{"a":"\"x","b":"y"}"#.to_string())]);
    }

    #[test]
    fn types_convert_as_the_cli_does() {
        let auto = cols(&[
            ("a", ColumnType::Auto),
            ("b", ColumnType::Auto),
            ("c", ColumnType::Auto),
            ("d", ColumnType::Auto),
            ("e", ColumnType::Auto),
            ("f", ColumnType::Auto),
            ("g", ColumnType::Auto),
        ]);
        let t = transcode(
            b"1,true,,x,-2.5e3,null,1.50\n-0,01,1e400,12345678901234567890,0.1,\"\",-\n",
            CSV,
            &auto,
            true,
            usize::MAX,
        );
        assert_eq!(
            docs(&t),
            vec![
                (0, r#"{"a":1,"b":true,"d":"x","e":-2500,"f":null,"g":1.5}"#.to_string()),
                (1, r#"{"a":0,"b":"01","c":"1e400","d":12345678901234567000,"e":0.1,"g":"-"}"#.to_string()),
            ]
        );
        let typed = cols(&[
            ("id", ColumnType::Int),
            ("tags", ColumnType::Json),
            ("ok", ColumnType::Boolean),
            ("zip", ColumnType::String),
            ("n", ColumnType::Number),
        ]);
        let t = transcode(
            b"7,\"[\"\"a\"\", {\"\"b\"\" :\n 1}]\",YES,01234, 2.0 \nx,[],no,1,\n1.5,,,,\n1,{,1,,\n1,,maybe,,\n1,,,,1e999\n",
            CSV,
            &typed,
            true,
            usize::MAX,
        );
        assert_eq!(
            docs(&t),
            vec![
                (0, r#"{"id":7,"tags":["a",{"b":1}],"ok":true,"zip":"01234","n":2}"#.to_string()),
                (2, r#"! column "id": "x" is not a number"#.to_string()),
                (3, r#"! column "id": "1.5" is not an integer"#.to_string()),
                (4, r#"! column "tags": "{" is not JSON"#.to_string()),
                (5, r#"! column "ok": "maybe" is not a boolean"#.to_string()),
                (6, r#"! column "n": "1e999" is not a number"#.to_string()),
            ]
        );
        let json = cols(&[("j", ColumnType::Json)]);
        let t = transcode(b"\"[-0, 1.50, 1e400, -0.0e1, {\"\"a\"\": 1E2}]\"\n", CSV, &json, true, usize::MAX);
        assert_eq!(docs(&t), vec![(0, r#"{"j":[0,1.5,null,0,{"a":100}]}"#.to_string())]);
    }

    #[test]
    fn header_bom_and_invalid_utf8() {
        let h = read_header(b"\xEF\xBB\xBF\n\nid,\"na\nme\"\n1,2\n", CSV, true, false).unwrap().unwrap();
        assert_eq!(h.cells, vec!["id", "na\nme"]);
        assert_eq!((h.line, h.lines, h.consumed), (2, 4, 3 + 2 + 11));
        assert!(read_header(b"id,na", CSV, true, false).unwrap().is_none());
        assert!(read_header(b"", CSV, true, true).unwrap().is_none());
        assert!(read_header(b"a,\"b", CSV, true, true).is_err());
        let t = transcode(b"\xFFx,\"\x01\"\n", CSV, &strings(&["a", "b"]), true, usize::MAX);
        assert_eq!(docs(&t), vec![(0, "{\"a\":\"\u{FFFD}x\",\"b\":\"\\u0001\"}".to_string())]);
    }

    #[test]
    fn a_record_longer_than_the_limit_is_a_reject() {
        let cols = strings(&["a", "b"]);
        let input = format!("1,x\n2,\"{}\"\n3,z\n", "y\n".repeat(150));
        let t = transcode(input.as_bytes(), CSV, &cols, true, 50);
        assert_eq!(
            docs(&t),
            vec![
                (0, r#"{"a":"1","b":"x"}"#.to_string()),
                (1, "! record longer than 50 bytes".to_string()),
                (152, r#"{"a":"3","b":"z"}"#.to_string())
            ]
        );
        assert_eq!(t.errors[0].raw, format!("2,\"{}…", &"y\n".repeat(150)[..197]));
    }

    #[test]
    fn long_fields_and_many_columns_grow_the_buffers() {
        let n = 100;
        let names: Vec<String> = (0..n).map(|i| format!("c{i}")).collect();
        let columns: Vec<Column> = names.iter().map(|n| Column { name: n.clone(), kind: ColumnType::String }).collect();
        let long = "y".repeat(100_000);
        let row: Vec<&str> = (0..n).map(|_| long.as_str()).collect();
        let input = format!("{}\n", row.join(","));
        let t = transcode(input.as_bytes(), CSV, &columns, true, usize::MAX);
        assert_eq!(t.records.len(), 1);
        assert!(t.errors.is_empty());
        let (a, b) = t.records[0].doc.unwrap();
        let v: serde_json::Value = serde_json::from_slice(&t.ndjson[a as usize..b as usize]).unwrap();
        assert_eq!(v["c99"].as_str().unwrap().len(), 100_000);
    }
}
