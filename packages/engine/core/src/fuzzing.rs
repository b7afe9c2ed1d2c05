//! The bodies of the fuzz targets (`fuzz/fuzz_targets/`), shared with their stable short pass
//! (`tests/fuzz_short.rs`). Not a stable API.
//!
//! Each takes arbitrary bytes shaped like one file (or, for [`checkpoint`], a directory) the
//! engine reads, and feeds them to the engine's own readers. The property: no panic, no abort,
//! no hang, no allocation beyond what the format bounds (a record's 16 MiB, a file's length),
//! and no invalid result — only a clean [`crate::Error`] or a result that holds its invariants.
//!
//! Every checksum-guarded target runs twice: on the bytes as given (the checksums reject almost
//! every mutation) and *resealed* — with every checksum recomputed over the mutated bytes — so
//! the decoders behind the checksums are fuzzed too: a bug or a later format change could hand
//! them bytes a checksum vouches for.

use std::ops::Bound;
use std::sync::Arc;

use crate::cache::BlockCache;
use crate::checksum::{crc32c, record_checksum, seed_for_segment};
use crate::io::{SimVfs, Vfs};
use crate::journal::{recover, Position, MAX_RECORD_PAYLOAD, SEGMENT_HEADER_SIZE};
use crate::key::{Key, KeyRange};
use crate::manifest;
use crate::mutation::{self, Mutation};
use crate::record::{decompress_payload, RecordHeader, RecordKind, RECORD_HEADER_SIZE};
use crate::run::{run_file_name, Run};
use crate::stats::Counters;
use crate::table::{Catalog, Env};
use crate::tree::Tree;
use crate::{DocFormat, PreparedDocs};

/// The segment end marker: a record header and the next segment's id.
const END_MARKER_SIZE: u64 = RECORD_HEADER_SIZE as u64 + 8;
/// Documents a scan of a fuzzed tree takes at most (a fuzzed run can claim any count).
const SCAN_LIMIT: usize = 100_000;

fn env() -> Env {
    Env { cache: Arc::new(BlockCache::new(1 << 20)), counters: Arc::new(Counters::default()) }
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at.checked_add(4)?)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at.checked_add(8)?)?.try_into().ok()?))
}

// ---------------------------------------------------------------------------------------------
// Journal records

/// Recomputes the checksum of the record at `at` (its segment id as written, its payload cut to
/// what `bytes` holds). Returns where the next record starts, or `None` if `at` holds no header.
fn reseal_record(bytes: &mut [u8], at: usize, segment_id: Option<u64>) -> Option<usize> {
    let end = at.checked_add(RECORD_HEADER_SIZE)?;
    let header = RecordHeader::parse(bytes.get(at..end)?)?;
    let room = (bytes.len() - end) as u32;
    let len = header.payload_len.min(room);
    bytes[at + 8..at + 12].copy_from_slice(&len.to_le_bytes());
    if let Some(id) = segment_id {
        bytes[at + 24..at + 32].copy_from_slice(&id.to_le_bytes());
    }
    let id = u64_at(bytes, at + 24)?;
    bytes[at + 12..at + 16].fill(0);
    let crc = record_checksum(seed_for_segment(id), &bytes[at..end], &bytes[end..end + len as usize]);
    bytes[at + 12..at + 16].copy_from_slice(&crc.to_le_bytes());
    Some(end + len as usize)
}

/// Applies mutations as recovery does, to a catalog of tables in memory.
fn replay_into(catalog: &mut Catalog, m: Mutation) -> crate::Result<()> {
    catalog.replay(m)
}

/// Decodes one payload's mutations, checking that each one re-encodes to the bytes it came from.
fn decode_mutations(payload: &[u8], catalog: &mut Catalog) {
    let mut at = 0;
    for m in mutation::decode(payload) {
        let Ok(m) = m else { return };
        let mut again = Vec::new();
        encode_mutation(&m, &mut again);
        let end = at + again.len();
        assert_eq!(payload.get(at..end), Some(&again[..]), "mutation {m:?} does not re-encode to its bytes");
        at = end;
        let _ = replay_into(catalog, m);
    }
}

fn encode_mutation(m: &Mutation, out: &mut Vec<u8>) {
    match m {
        Mutation::Put { table_id, key, doc } => mutation::encode_put(out, *table_id, key, doc),
        Mutation::Delete { table_id, key } => mutation::encode_delete(out, *table_id, key),
        Mutation::CreateTable { table_id, name, primary_key } => {
            mutation::encode_create_table(out, *table_id, name, primary_key)
        }
        Mutation::DropTable { table_id } => mutation::encode_drop_table(out, *table_id),
        Mutation::CreateIndex { table_id, name, field, multi } => {
            mutation::encode_create_index(out, *table_id, name, field, *multi)
        }
        Mutation::DropIndex { table_id, name } => mutation::encode_drop_index(out, *table_id, name),
    }
}

/// Target `journal_record`: one journal record (header ‖ payload) as the journal stores it —
/// header parse, checksum, LZ4 payload, mutation decoding and replay.
pub fn journal_record(data: &[u8]) {
    let mut resealed = data.to_vec();
    reseal_record(&mut resealed, 0, None);
    for bytes in [data, &resealed[..]] {
        let Some(header) = bytes.get(..RECORD_HEADER_SIZE).and_then(RecordHeader::parse) else { continue };
        // The header round-trips through its encoding.
        let Some(payload) = bytes.get(RECORD_HEADER_SIZE..RECORD_HEADER_SIZE + header.payload_len as usize) else {
            continue;
        };
        let mut again = Vec::new();
        header.encode(seed_for_segment(header.segment_id), payload, &mut again);
        assert_eq!(RecordHeader::parse(&again), Some(header));
        if !RecordHeader::verify(seed_for_segment(header.segment_id), bytes, payload) {
            continue;
        }
        let mut catalog = Catalog::new(env());
        let mut inflated = Vec::new();
        match header.kind {
            RecordKind::SegmentEnd => {}
            RecordKind::Mutations if header.compressed => {
                if decompress_payload(payload, MAX_RECORD_PAYLOAD, &mut inflated).is_ok() {
                    decode_mutations(&inflated, &mut catalog);
                }
            }
            RecordKind::Mutations => decode_mutations(payload, &mut catalog),
        }
    }
}

/// Recomputes a segment file's header checksum and the checksums of the records after it.
fn reseal_segment(bytes: &mut [u8]) {
    if bytes.len() >= 40 {
        let crc = crc32c(&bytes[..32]);
        bytes[32..36].copy_from_slice(&crc.to_le_bytes());
    }
    let id = u64_at(bytes, 16);
    let mut at = SEGMENT_HEADER_SIZE as usize;
    while let Some(next) = reseal_record(bytes, at, id) {
        at = next;
    }
}

/// Target `journal`: a journal segment file as written (header, records; trailing zeros may be
/// cut), recovered as at open: records replayed into a catalog, the end and torn tail found.
pub fn journal(data: &[u8]) {
    let mut resealed = data.to_vec();
    reseal_segment(&mut resealed);
    for bytes in [data, &resealed[..]] {
        let segment_id = u64_at(bytes, 16).filter(|&id| id != 0).unwrap_or(1);
        let first_seq = u64_at(bytes, 24).unwrap_or(1);
        // Room for everything given, as a whole number of pages, like a real segment.
        let segment_size = ((bytes.len() as u64 + END_MARKER_SIZE).next_multiple_of(4096)).max(2 * SEGMENT_HEADER_SIZE);
        let vfs = SimVfs::new();
        vfs.write_file(&crate::journal::segment_file_name(0), bytes.to_vec());
        let start = Position { segment_id, offset: SEGMENT_HEADER_SIZE, next_seq: first_seq };
        let mut catalog = Catalog::new(env());
        if let Ok(r) = recover(&vfs, segment_size, start, |m| replay_into(&mut catalog, m)) {
            assert!(
                r.end.offset <= segment_size,
                "recovery ended at {} past the segment's {segment_size} bytes",
                r.end.offset
            );
            assert_eq!(
                r.end.next_seq.wrapping_sub(first_seq),
                r.records,
                "records replayed and sequence numbers disagree"
            );
            assert!(r.records <= bytes.len() as u64 / RECORD_HEADER_SIZE as u64);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Manifest

/// Rewrites a manifest slot's header (length, checksum, version) to vouch for its body as given.
fn reseal_manifest(bytes: &mut [u8]) {
    const HEADER: usize = 24;
    if bytes.len() < HEADER {
        return;
    }
    bytes[..8].copy_from_slice(b"WHARFMAN");
    let body_len = (bytes.len() - HEADER) as u32;
    // The version the body claims, so that a body that parses also passes the version check.
    let version = serde_json::from_slice::<serde_json::Value>(&bytes[HEADER..])
        .ok()
        .and_then(|v| v.get("version").and_then(|v| v.as_u64()))
        .unwrap_or_else(|| u64_at(bytes, 8).unwrap_or(0));
    bytes[8..16].copy_from_slice(&version.to_le_bytes());
    bytes[16..20].copy_from_slice(&body_len.to_le_bytes());
    let crc = crc32c::crc32c_append(crc32c(&bytes[8..20]), &bytes[HEADER..]);
    bytes[20..24].copy_from_slice(&crc.to_le_bytes());
}

/// Target `manifest`: one manifest slot file, alone and beside a valid older slot.
pub fn manifest(data: &[u8]) {
    let mut resealed = data.to_vec();
    reseal_manifest(&mut resealed);
    for bytes in [data, &resealed[..]] {
        let vfs = SimVfs::new();
        vfs.write_file(manifest::MANIFEST_SLOTS[1], bytes.to_vec());
        if let Ok(Some(m)) = manifest::load(&vfs) {
            // What loads stores and loads back the same.
            let again = SimVfs::new();
            manifest::store(&again, &m).expect("storing to a simulated directory");
            assert_eq!(manifest::load(&again).unwrap().as_ref(), Some(&m));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Run files

/// Recomputes a run file's block checksums (blocks as its index lists them) and its footer's.
pub(crate) fn reseal_run(bytes: &mut [u8]) {
    const FOOTER: usize = 64;
    let len = bytes.len();
    if len < 24 + FOOTER {
        return;
    }
    let footer_at = len - FOOTER;
    let field = |b: &[u8], i: usize| u64_at(b, footer_at + 8 + 8 * i).unwrap_or(0);
    let (index_offset, index_len, bloom_len) = (field(bytes, 0), field(bytes, 1), field(bytes, 3));
    let Some(meta_end) = index_offset.checked_add(index_len).and_then(|e| e.checked_add(bloom_len)) else { return };
    if meta_end > footer_at as u64 {
        return;
    }
    let (index_at, index_end) = (index_offset as usize, (index_offset + index_len) as usize);
    // Blocks: offset u64 | length u32 | first key, after a count.
    let count = u32_at(bytes, index_at).unwrap_or(0);
    let mut at = index_at + 4;
    let mut blocks = Vec::new();
    for _ in 0..count {
        let (Some(offset), Some(length)) = (u64_at(bytes, at), u32_at(bytes, at + 8)) else { break };
        let Some((_, used)) = bytes.get(at + 12..index_end).and_then(Key::decode) else { break };
        blocks.push((offset, length));
        at += 12 + used;
        if at > index_end {
            break;
        }
    }
    for (offset, length) in blocks {
        let (Ok(start), Ok(length)) = (usize::try_from(offset), usize::try_from(length)) else { continue };
        let Some(end) = start.checked_add(length).filter(|&e| e <= index_at && length >= 4) else { continue };
        let crc = crc32c(&bytes[start..end - 4]);
        bytes[end - 4..end].copy_from_slice(&crc.to_le_bytes());
    }
    let crc = crc32c::crc32c_append(crc32c(&bytes[index_at..meta_end as usize]), &bytes[footer_at..footer_at + 56]);
    bytes[footer_at + 56..footer_at + 60].copy_from_slice(&crc.to_le_bytes());
}

/// Reads everything a run holds every way the engine reads it: both scan directions and a point
/// read of each key seen (and of keys it does not hold).
fn read_run(run: Run) {
    let run = Arc::new(run);
    let cache = BlockCache::new(1 << 20);
    let mut keys = Vec::new();
    for reverse in [false, true] {
        for entry in run.iter(None, reverse).take(SCAN_LIMIT) {
            match entry {
                Ok((key, _)) if keys.len() < 32 => keys.push(key),
                Ok(_) => {}
                Err(_) => break,
            }
        }
    }
    keys.extend([Key::from(0.0), Key::from(""), Key::from(f64::MAX), Key::from("~")]);
    let mut encoded = Vec::new();
    for key in &keys {
        encoded.clear();
        key.encode(&mut encoded);
        let _ = run.get(key, &encoded, &cache, crate::run::Fetch::Wait);
        let _ = run.iter(Some(key), false).take(3).count();
        let _ = run.iter(Some(key), true).take(3).count();
    }
    let _ = (run.memory(), run.last_key());
}

/// Target `run`: one run file (a checkpoint's or a merge's output), opened and read in full.
pub fn run(data: &[u8]) {
    let mut resealed = data.to_vec();
    reseal_run(&mut resealed);
    for bytes in [data, &resealed[..]] {
        let vfs = SimVfs::new();
        let name = run_file_name(1);
        vfs.write_file(&name, bytes.to_vec());
        if let Ok(run) = Run::open(&vfs, &name) {
            read_run(run);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Checkpoints: the manifest and the run files it names

/// Separates the files of a [`checkpoint`] input: each file is its name, a newline, its bytes.
pub const FILE_SEPARATOR: &[u8] = b"\n=WHARF-FILE=\n";

/// Builds a [`checkpoint`] input from a directory's files.
pub fn checkpoint_input(files: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, (name, bytes)) in files.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(FILE_SEPARATOR);
        }
        out.extend_from_slice(name.as_bytes());
        out.push(b'\n');
        out.extend_from_slice(bytes);
    }
    out
}

fn split_files(data: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    let mut rest = data;
    loop {
        let (part, next) = match memchr::memmem::find(rest, FILE_SEPARATOR) {
            Some(at) => (&rest[..at], Some(&rest[at + FILE_SEPARATOR.len()..])),
            None => (rest, None),
        };
        if let Some(nl) = memchr::memchr(b'\n', part) {
            if let Ok(name) = std::str::from_utf8(&part[..nl]) {
                if !name.is_empty() && !name.contains('/') {
                    files.push((name.to_string(), part[nl + 1..].to_vec()));
                }
            }
        }
        match next {
            Some(next) => rest = next,
            None => return files,
        }
    }
}

/// Target `checkpoint`: a database directory's manifest and run files, loaded as open loads
/// them (tables, then index trees, then orphan removal), every table then scanned and read.
pub fn checkpoint(data: &[u8]) {
    let files = split_files(data);
    let resealed: Vec<_> = files
        .iter()
        .map(|(name, bytes)| {
            let mut bytes = bytes.clone();
            if name.starts_with("MANIFEST-") {
                reseal_manifest(&mut bytes);
            } else if crate::run::is_run_file(name) {
                reseal_run(&mut bytes);
            }
            (name.clone(), bytes)
        })
        .collect();
    for files in [files, resealed] {
        let vfs = SimVfs::new();
        for (name, bytes) in files {
            vfs.write_file(&name, bytes);
        }
        let Ok(Some(mut m)) = manifest::load(&vfs) else { continue };
        let env = env();
        for entry in &mut m.tables {
            if let Some(spec) = &entry.index {
                let tree = crate::table::Table::new(entry.id, entry.name.clone(), String::new(), &env);
                let _ =
                    crate::index::Index::new(spec.name.clone(), spec.field.clone(), spec.multi, tree, spec.complete);
            }
            let mut tree = Tree::default();
            if crate::checkpoint::load_table(&vfs, entry, &mut tree).is_err() {
                continue;
            }
            let mut keys = Vec::new();
            for reverse in [false, true] {
                if let Ok(docs) = tree.scan(&KeyRange::default(), SCAN_LIMIT, reverse) {
                    keys.extend(docs.into_iter().take(16).map(|(k, _)| k));
                }
            }
            for key in keys {
                let _ = tree.get(&key, &env.cache);
                let range = KeyRange { lower: Bound::Included(key.clone()), upper: Bound::Unbounded };
                let _ = tree.scan(&range, 3, false);
            }
        }
        let _ = crate::checkpoint::remove_orphans(&vfs, &m);
    }
}

// ---------------------------------------------------------------------------------------------
// Documents

/// Target `doc`: a batch of documents as NDJSON and as a JSON array, for primary key `id`.
/// Every document accepted is a JSON object whose `id` is the key it was given.
pub fn doc(data: &[u8]) {
    for format in [DocFormat::Ndjson, DocFormat::JsonArray] {
        let Ok(docs) = PreparedDocs::parse(data, format, "id") else { continue };
        for d in &docs.docs {
            let crate::doc::PreparedDoc::Ok { key, json, .. } = d else { continue };
            let value: serde_json::Value = match serde_json::from_str(json) {
                Ok(v) => v,
                // Deeper than serde_json's limit for a `Value`: depth has its own rule.
                Err(e) if e.to_string().contains("recursion limit") => continue,
                Err(e) => panic!("accepted document is not JSON ({e}): {json}"),
            };
            let found = value.as_object().expect("an accepted document is an object").get("id");
            let matches = match (key, found) {
                (Key::Num(n), Some(serde_json::Value::Number(v))) => v.as_f64() == Some(*n),
                (Key::Str(s), Some(serde_json::Value::String(v))) => s == v,
                // Any other key value: the key its value encodes to.
                (Key::Datum(_), Some(v)) => Key::from_value(v).as_ref() == Ok(key),
                _ => false,
            };
            assert!(matches, "document {json} was given key {key:?}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// CSV

/// Target `csv`: bytes as CSV (the first byte picks the dialect and the column types): the header,
/// then its records. Every document is a JSON object; records are located in increasing order
/// within the input; a reject or a document for each; and transcoding in two calls, the second
/// from where the first stopped, gives what one call gives.
pub fn csv(data: &[u8]) {
    use crate::csv::{read_header, transcode, Column, ColumnType, Dialect, Newline, Transcoded};
    let Some((&selector, data)) = data.split_first() else { return };
    let dialect = Dialect {
        delimiter: if selector & 1 == 0 { b',' } else { b'\t' },
        quoting: selector & 1 == 0,
        newline: [Newline::Lf, Newline::CrLf, Newline::Cr, Newline::Lf][(selector as usize >> 1) & 3],
    };
    let kinds = [
        ColumnType::String,
        ColumnType::Auto,
        ColumnType::Number,
        ColumnType::Int,
        ColumnType::Boolean,
        ColumnType::Json,
    ];
    let Ok(Some(header)) = read_header(data, dialect, true, true) else { return };
    let columns: Vec<Column> = header
        .cells
        .iter()
        .enumerate()
        .map(|(i, name)| Column { name: name.clone(), kind: kinds[(i + (selector as usize >> 3)) % kinds.len()] })
        .collect();
    let rest = &data[header.consumed..];
    let limit = 1 << 10;
    let whole = transcode(rest, dialect, &columns, true, limit);
    let mut previous_end = 0;
    let mut rejects = 0;
    for r in &whole.records {
        assert!(
            r.input_end as usize > previous_end && r.input_end as usize <= whole.consumed,
            "record spans out of order"
        );
        previous_end = r.input_end as usize;
        match r.doc {
            Some((a, b)) => {
                let doc = &whole.ndjson[a as usize..b as usize];
                assert!(!doc.contains(&b'\n'), "a document holds a line break");
                match serde_json::from_slice::<serde_json::Value>(doc) {
                    Ok(v) => assert!(v.is_object(), "a document is not an object"),
                    Err(e) if e.to_string().contains("recursion limit") => {}
                    Err(e) => panic!("a document is not JSON ({e}): {}", String::from_utf8_lossy(doc)),
                }
            }
            None => rejects += 1,
        }
    }
    assert_eq!(rejects, whole.errors.len(), "one message per reject");
    assert!(whole.consumed == rest.len() || whole.syntax_error.is_some(), "at the end every byte is taken");
    // The same in two calls, cut at a point the input picks.
    let cut = (selector as usize).wrapping_mul(7919) % (rest.len() + 1);
    let first = transcode(&rest[..cut], dialect, &columns, false, limit);
    let spans = |t: &Transcoded, offset: u32, lines: u32| -> Vec<(u32, u32, Option<Vec<u8>>)> {
        t.records
            .iter()
            .map(|r| {
                (r.line + lines, r.input_end + offset, r.doc.map(|(a, b)| t.ndjson[a as usize..b as usize].to_vec()))
            })
            .collect()
    };
    let mut parts = spans(&first, 0, 0);
    let mut errors = first.errors.clone();
    let syntax = if first.syntax_error.is_some() {
        first.syntax_error.clone()
    } else {
        let second = transcode(&rest[first.consumed..], dialect, &columns, true, limit);
        let base = parts.len();
        parts.extend(spans(&second, first.consumed as u32, first.lines));
        errors.extend(second.errors.iter().map(|e| crate::csv::RecordError { record: e.record + base, ..e.clone() }));
        second.syntax_error.map(|e| crate::csv::SyntaxError { line: e.line + first.lines, ..e })
    };
    assert_eq!(parts, spans(&whole, 0, 0), "two calls give the same records as one");
    assert_eq!(errors, whole.errors, "two calls give the same rejects as one");
    assert_eq!(syntax, whole.syntax_error, "two calls give the same quoting error as one");
}

/// A fuzz target: its name and its body.
pub type Target = (&'static str, fn(&[u8]));

/// Every target, by name, for the short pass and the corpus tools.
pub const TARGETS: [Target; 7] = [
    ("journal_record", journal_record),
    ("journal", journal),
    ("manifest", manifest),
    ("run", run),
    ("checkpoint", checkpoint),
    ("doc", doc),
    ("csv", csv),
];

// ---------------------------------------------------------------------------------------------
// Seeds

/// Cuts the zeros a preallocated segment ends with (the `journal` target pads them back).
fn trim_zeros(mut bytes: Vec<u8>) -> Vec<u8> {
    let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    bytes.truncate(end.max(SEGMENT_HEADER_SIZE as usize));
    bytes
}

/// Seed inputs for every target, `(target, name, bytes)`, taken from files the engine writes: a
/// database on a simulated disk given tables, an index, documents (numbers and strings as keys,
/// compressible ones so that journal records are LZ4), deletes and a checkpoint; an LZ4 run;
/// and document batches. (The format-2 run is committed in the corpus as `fixture-run-format-2`:
/// this crate's published source does not carry the test fixtures.)
pub fn seed_files() -> Vec<(&'static str, String, Vec<u8>)> {
    use crate::{wait, Database, Durability, Options, WriteOptions};
    let mut seeds: Vec<(&'static str, String, Vec<u8>)> = Vec::new();
    let vfs = SimVfs::new();
    let options = Options { segment_size: Some(64 << 10), memory_budget: 4 << 20, ..Options::default() };
    let db = Database::open_with(Arc::new(vfs.clone()), options).expect("opening a database on a simulated disk");
    wait(|done| db.create_table("people", "id", done)).unwrap();
    wait(|done| db.create_table("tags", "name", done)).unwrap();
    wait(|done| db.create_index("people", "by_city", "address.city", false, done)).unwrap();
    let batch = |range: std::ops::Range<u32>| -> String {
        range
            .map(|i| {
                format!(
                    "{{\"id\":{i},\"name\":\"person {i}\",\"address\":{{\"city\":\"c{}\"}},\"bio\":\"{}\"}}\n",
                    i % 7,
                    "lorem ipsum ".repeat(i as usize % 5)
                )
            })
            .collect()
    };
    let hard = WriteOptions::default();
    let soft = WriteOptions { durability: Durability::Soft, ..WriteOptions::default() };
    let docs = db.prepare("people", batch(0..40).as_bytes(), DocFormat::Ndjson).unwrap();
    wait(|done| db.insert("people", docs, hard, done)).unwrap();
    let tags = db
        .prepare(
            "tags",
            br#"[{"name":"a","n":1},{"name":"\u00e9t\u00e9","n":-0.5e3},{"name":"z","list":[1,2,{"x":null}]}]"#,
            DocFormat::JsonArray,
        )
        .unwrap();
    wait(|done| db.insert("tags", tags, soft, done)).unwrap();
    wait(|done| db.delete("people", vec![Key::from(3.0), Key::from(5.0)], Durability::Hard, done)).unwrap();
    wait(|done| db.sync(done)).unwrap();
    // The journal as it stands before close: records of every kind.
    for name in vfs.list().unwrap() {
        if name.starts_with("journal-") {
            let bytes = trim_zeros(vfs.read_file(&name).unwrap());
            let mut at = SEGMENT_HEADER_SIZE as usize;
            while let Some(header) = bytes.get(at..).and_then(RecordHeader::parse) {
                let end = at + RECORD_HEADER_SIZE + header.payload_len as usize;
                if end > bytes.len() {
                    break;
                }
                seeds.push(("journal_record", format!("{name}-at-{at}"), bytes[at..end].to_vec()));
                at = end;
            }
            seeds.push(("journal", name.clone(), bytes.clone()));
            // The same segment with its records LZ4-compressed where that is smaller (the
            // committer compresses adaptively, so a small database may write none).
            let mut lz4 = bytes[..SEGMENT_HEADER_SIZE as usize].to_vec();
            let seed = seed_for_segment(u64_at(&bytes, 16).unwrap_or(0));
            let mut at = SEGMENT_HEADER_SIZE as usize;
            let mut packed = Vec::new();
            while let Some(header) = bytes.get(at..).and_then(RecordHeader::parse) {
                let payload = &bytes[at + RECORD_HEADER_SIZE..at + RECORD_HEADER_SIZE + header.payload_len as usize];
                let start = lz4.len();
                if header.kind == RecordKind::Mutations && crate::record::compress_payload(payload, &mut packed) {
                    let h = RecordHeader { compressed: true, payload_len: packed.len() as u32, ..header };
                    h.encode(seed, &packed, &mut lz4);
                    seeds.push(("journal_record", format!("{name}-at-{at}-lz4"), lz4[start..].to_vec()));
                } else {
                    header.encode(seed, payload, &mut lz4);
                }
                at += RECORD_HEADER_SIZE + payload.len();
            }
            seeds.push(("journal", format!("{name}-lz4"), lz4));
        }
    }
    // A second batch through a close, which checkpoints: the manifest and the run files.
    let docs = db.prepare("people", batch(40..200).as_bytes(), DocFormat::Ndjson).unwrap();
    wait(|done| db.insert("people", docs, soft, done)).unwrap();
    db.close().unwrap();
    let mut directory = Vec::new();
    let mut names = vfs.list().unwrap();
    names.sort();
    for name in names {
        let bytes = vfs.read_file(&name).unwrap();
        if name.starts_with("MANIFEST-") {
            seeds.push(("manifest", name.clone(), bytes.clone()));
            directory.push((name, bytes));
        } else if crate::run::is_run_file(&name) {
            seeds.push(("run", name.clone(), bytes.clone()));
            directory.push((name, bytes));
        }
    }
    seeds.push(("checkpoint", "database".into(), checkpoint_input(&directory)));

    // A run the checkpoint above does not write: LZ4 blocks, string keys.
    let mut w = crate::run::RunWriter::create(&vfs, "run-lz4.wrun", 7, (300, 0), true).unwrap();
    for i in 0..300 {
        let key = Key::from(format!("key-{i:04}").as_str());
        let doc = format!("{{\"id\":\"key-{i:04}\",\"pad\":\"{}\"}}", "ab".repeat(100));
        w.add(&key, (i % 11 != 0).then_some(doc.as_str())).unwrap();
    }
    w.finish().unwrap();
    seeds.push(("run", "run-lz4".into(), vfs.read_file("run-lz4.wrun").unwrap()));

    for (name, text) in [
        (
            "ndjson",
            "{\"id\":1,\"a\":[1,2,3]}\n\n{\"id\":\"x\",\"b\":{\"c\":null}}\n{\"name\":\"no id\"}\n{\"id\":1.5e3}\n",
        ),
        ("array", "[{\"id\":1},{\"id\":\"two\",\"n\":-0.0},{\"v\":true},{\"id\":[1]}]"),
        ("errors", "{\"id\":null}\n{\"id\":1e999}\n[1]\n{\"id\":\"\\ud800\"}\n{\"id\":1,\"id\":2}\n{\"id\":2} x\n"),
        ("unicode", "{\"id\":\"\u{e9}\u{1F600}\",\"s\":\"\\u00e9\\n\"}\n"),
    ] {
        seeds.push(("doc", name.into(), text.as_bytes().to_vec()));
    }
    // CSV: the first byte picks the dialect (see `csv`).
    for (name, selector, text) in [
        ("quoted", 0u8, "id,name,age\n1,Ada,36\n\n2,\"Grace\nHopper\",85\n3,only-two\n4,\"A, \"\"T\"\"\",41\n"),
        ("crlf", 2, "a,b,c\r\n1,\"x\r\ny\",\r\n\r\n-0,1.50,1e400\r\n"),
        ("typed", 8, "a,b,c,d,e,f\ntrue,\"[1, {\"\"k\"\": 2}]\",yes,7,x,\n"),
        ("errors", 16, "a,b\n1,\"2\"x\n3,4\"\n\"5"),
        ("tsv", 1, "a\tb\n\"x\ty\n1\t2\t3\n"),
        ("cr", 4, "a,b\r1,2\r\"3\r\",4\r"),
    ] {
        let mut bytes = vec![selector];
        bytes.extend_from_slice(text.as_bytes());
        seeds.push(("csv", name.into(), bytes));
    }
    seeds
}
