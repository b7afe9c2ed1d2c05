//! LZ4 compression of journal records: large compressible groups are stored compressed, small
//! and incompressible ones are not, recovery reads both forms back byte for byte, and damage in a
//! compressed record is found like damage in any other.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use support::*;
use wharf_engine::internals::{
    record_checksum, seed_for_segment, segment_file_name, RecordHeader, RECORD_HEADER_SIZE, SEGMENT_HEADER_SIZE,
};
use wharf_engine::io::{CrashMode, SimVfs};
use wharf_engine::{wait, Database, Durability, ErrorCode, Options};

const WORDS: [&str; 16] = [
    "harbor", "crane", "vessel", "cargo", "manifest", "tide", "anchor", "dock", "pier", "freight", "ledger", "berth",
    "hull", "mooring", "quay", "pallet",
];

/// A document that compresses well: JSON with repeated field names and words.
fn text_doc(key: u64) -> String {
    let bio: Vec<&str> = (0..60).map(|i| WORDS[((key * 7 + i * 13) % 16) as usize]).collect();
    format!(
        "{{\"id\":{key},\"name\":\"user {key}\",\"email\":\"user{key}@example.com\",\"city\":\"{}\",\"active\":{},\"bio\":\"{}\"}}",
        WORDS[(key % 16) as usize],
        key.is_multiple_of(2),
        bio.join(" ")
    )
}

/// A document LZ4 cannot shrink: `len` random printable characters (no quote or backslash).
fn random_doc(key: u64, len: usize, rng: &mut u64) -> String {
    let pad: String = (0..len)
        .map(|_| {
            *rng ^= *rng << 13;
            *rng ^= *rng >> 7;
            *rng ^= *rng << 17;
            let c = b' ' + (*rng % 93) as u8; // 0x20..=0x7c
            match c {
                b'"' => '}',
                b'\\' => '~',
                c => c as char,
            }
        })
        .collect();
    format!("{{\"id\":{key},\"pad\":\"{pad}\"}}")
}

/// Large segments, no checkpoints: every write is replayed from the journal on reopen.
fn journal_only() -> Options {
    Options {
        segment_size: Some(1 << 20),
        checkpoint_bytes: 1 << 40,
        flush_interval: Duration::from_secs(3600),
        ..Options::default()
    }
}

/// Small segments and checkpoints: compressed records cross rotations, checkpoints and recycling.
fn churning() -> Options {
    Options { segment_size: Some(256 << 10), checkpoint_bytes: 768 << 10, recycle_segments: 2, ..journal_only() }
}

/// Offset and header of each record of a segment image, in order, up to the first that does
/// not parse (checksums are not checked: the tests use this on images they then damage).
fn records(image: &[u8]) -> Vec<(usize, RecordHeader)> {
    let mut out = Vec::new();
    let mut at = SEGMENT_HEADER_SIZE as usize;
    while let Some(h) = image.get(at..at + RECORD_HEADER_SIZE).and_then(RecordHeader::parse) {
        out.push((at, h));
        at += RECORD_HEADER_SIZE + h.payload_len as usize;
    }
    out
}

/// The length a compressed record's payload says it decompresses to.
fn uncompressed_len(image: &[u8], at: usize) -> usize {
    let p = at + RECORD_HEADER_SIZE;
    u32::from_le_bytes(image[p..p + 4].try_into().unwrap()) as usize
}

/// Every journal segment file of a simulated directory.
fn segments(vfs: &Arc<SimVfs>) -> Vec<(String, Vec<u8>)> {
    (0..).map_while(|slot| vfs.read_file(&segment_file_name(slot)).map(|b| (segment_file_name(slot), b))).collect()
}

struct Written {
    /// Keys in the order their writes were acknowledged, and the text of each document.
    keys: Vec<u64>,
    texts: std::collections::HashMap<u64, String>,
    /// How many of `keys` were durable at the crash.
    durable: usize,
}

/// Large compressible groups (~150 KiB) mixed with small ones, hard and soft, then a crash.
fn mixed_workload(vfs: &Arc<SimVfs>, options: Options, rounds: u64) -> Written {
    let db = open(vfs, options).unwrap();
    create(&db, "t");
    let mut w = Written { keys: Vec::new(), texts: Default::default(), durable: 0 };
    let mut key = 0u64;
    for round in 0..rounds {
        let n = if round % 3 == 0 { 300 } else { 1 + round % 3 };
        let docs: Vec<String> = (key..key + n).map(text_doc).collect();
        let durability = if round % 4 == 1 { Durability::Soft } else { Durability::Hard };
        let r = insert(&db, "t", &docs.join("\n"), durability).unwrap();
        assert_eq!(r.inserted, n);
        for (k, d) in (key..key + n).zip(docs) {
            w.keys.push(k);
            w.texts.insert(k, d);
        }
        key += n;
        if durability == Durability::Hard {
            w.durable = w.keys.len();
        }
    }
    let s = db.stats();
    assert!(s.groups_compressed > 0, "nothing was compressed: {s:?}");
    assert!(s.journal_bytes_saved > 0 && s.compression_ratio > 0.0 && s.compression_ratio < 0.5, "{s:?}");
    assert!(s.journal_bytes_uncompressed > s.journal_bytes_saved, "{s:?}");
    assert!(s.compress_ns_per_byte > 0.0 && s.write_ns_per_byte > 0.0, "{s:?}");
    std::mem::forget(db); // the crash
    w
}

/// The recovered database holds a prefix of the writes, at least the durable ones, each with
/// exactly the bytes it was written with.
fn check_recovered(db: &Database, w: &Written, what: &str) {
    let present = db.count("t").unwrap() as usize;
    assert!(present >= w.durable, "{what}: {present} documents recovered, {} were durable", w.durable);
    for (i, key) in w.keys.iter().enumerate() {
        let got = get(db, "t", *key);
        assert_eq!(got.is_some(), i < present, "{what}: key {key} (write #{i}), {present} recovered");
        if let Some(text) = got {
            assert_eq!(&text, &w.texts[key], "{what}: key {key} came back different");
        }
    }
}

#[test]
fn compressed_and_plain_records_survive_crashes_on_the_simulated_disk() {
    for (name, options) in [("journal only", journal_only()), ("churning", churning())] {
        let vfs = SimVfs::new();
        let w = mixed_workload(&vfs, options.clone(), 40);
        if name == "journal only" {
            // Large groups were compressed, small ones never (each group is one record here).
            let (mut compressed, mut plain_small) = (0, 0);
            for (_, image) in segments(&vfs) {
                for (at, h) in records(&image) {
                    if h.compressed {
                        compressed += 1;
                        assert!(uncompressed_len(&image, at) >= 64 << 10, "a small record was compressed");
                        assert!((h.payload_len as usize) < uncompressed_len(&image, at));
                    } else if h.payload_len < 4096 {
                        plain_small += 1;
                    }
                }
            }
            assert!(compressed > 0 && plain_small > 20, "{compressed} compressed, {plain_small} small plain records");
        }
        for (i, mode) in [CrashMode::DropUnsynced, CrashMode::KeepUnsynced, CrashMode::Torn(7), CrashMode::Torn(8)]
            .into_iter()
            .enumerate()
        {
            let what = format!("{name}, crash #{i}");
            let after = vfs.crash(mode);
            let db = open(&after, options.clone()).unwrap_or_else(|e| panic!("{what}: reopen failed: {e}"));
            check_recovered(&db, &w, &what);
            // It goes on: a compressed group written after recovery survives a clean reopen.
            let present = db.count("t").unwrap();
            let more: Vec<String> = (1_000_000..1_000_300).map(text_doc).collect();
            insert(&db, "t", &more.join("\n"), Durability::Hard).unwrap();
            assert!(db.stats().groups_compressed > 0, "{what}: the first large group after open is a probe");
            db.close().unwrap();
            let db = open(&after, options.clone()).unwrap();
            assert_eq!(db.count("t").unwrap(), present + 300, "{what}");
            assert_eq!(get(&db, "t", 1_000_299).as_deref(), Some(more[299].as_str()), "{what}");
            db.close().unwrap();
        }
    }
}

/// The child half of the real-directory test: writes until killed, printing what was
/// acknowledged. Runs only when the parent test starts it.
#[test]
#[ignore = "started as a child process by compressed_records_survive_a_killed_process_on_a_real_disk"]
fn child_writer_killed_by_the_parent() {
    let Ok(dir) = std::env::var("WHARF_COMPRESSION_CHILD_DIR") else { return };
    let db = Database::open(&dir, churning()).unwrap();
    wait(|done| db.create_table("t", "id", done)).unwrap();
    let mut key = 0u64;
    for round in 0u64.. {
        let n = if round % 2 == 0 { 300 } else { 2 };
        let docs: Vec<String> = (key..key + n).map(text_doc).collect();
        insert(&db, "t", &docs.join("\n"), Durability::Hard).unwrap();
        key += n;
        println!("ACK {key} {}", db.stats().groups_compressed);
    }
}

#[test]
fn compressed_records_survive_a_killed_process_on_a_real_disk() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_writer_killed_by_the_parent", "--ignored", "--nocapture", "--test-threads=1"])
        .env("WHARF_COMPRESSION_CHILD_DIR", dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (mut acked, mut compressed) = (0u64, 0u64);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    while acked < 9_000 {
        let line = lines.next().expect("the child stopped early").unwrap();
        if let Some(rest) = line.strip_prefix("ACK ") {
            let mut it = rest.split(' ').map(|n| n.parse::<u64>().unwrap());
            (acked, compressed) = (it.next().unwrap(), it.next().unwrap());
        }
    }
    child.kill().unwrap(); // SIGKILL, mid-write most likely
    child.wait().unwrap();
    assert!(compressed > 0, "the child compressed no group");

    let db = Database::open(dir.path(), churning()).unwrap();
    let present = db.count("t").unwrap();
    assert!(present >= acked, "{present} documents recovered, {acked} were acknowledged");
    for k in 0..present {
        assert_eq!(get(&db, "t", k), Some(text_doc(k)), "key {k}");
    }
    db.close().unwrap();
}

#[test]
fn incompressible_large_groups_are_stored_plain_after_the_probe() {
    let vfs = SimVfs::new();
    let db = open(&vfs, journal_only()).unwrap();
    create(&db, "t");
    let mut rng = 0x2545f4914f6cdd1du64;
    let mut texts = Vec::new();
    for k in 0..40u64 {
        // Two ~50 KiB documents: a 100 KiB group, a candidate, the 1st and 33rd of them probes.
        let docs = vec![random_doc(2 * k, 50_000, &mut rng), random_doc(2 * k + 1, 50_000, &mut rng)];
        insert(&db, "t", &docs.join("\n"), if k % 2 == 0 { Durability::Hard } else { Durability::Soft }).unwrap();
        texts.extend(docs);
    }
    // A soft write is acknowledged before its group reaches the journal: sync to count them all.
    wait(|done| db.sync(done)).unwrap();
    let s = db.stats();
    assert_eq!(s.groups_compressed, 0, "{s:?}");
    assert_eq!((s.journal_bytes_saved, s.compression_ratio), (0, 0.0), "{s:?}");
    assert!(s.compress_ns_per_byte > 0.0, "the probe never ran: {s:?}");
    assert!(s.journal_bytes_uncompressed >= 40 * 100_000, "{s:?}");
    for (_, image) in segments(&vfs) {
        assert!(records(&image).iter().all(|(_, h)| !h.compressed), "an incompressible record was stored compressed");
    }
    std::mem::forget(db);
    let db = open(&vfs.crash(CrashMode::KeepUnsynced), journal_only()).unwrap();
    assert_eq!(db.count("t").unwrap(), 80);
    for (k, text) in texts.iter().enumerate() {
        assert_eq!(get(&db, "t", k as u64).as_deref(), Some(text.as_str()), "key {k}");
    }
    db.close().unwrap();
}

#[test]
fn a_soft_load_measures_the_write_cost_from_the_flushers_syncs() {
    // Soft writes reach the disk only through the flusher thread's fdatasyncs. Unless those are
    // measured, the write-cost estimate stays missing and every large group is compressed.
    let vfs = SimVfs::new();
    let options =
        Options { checkpoint_bytes: 1 << 40, flush_interval: Duration::from_secs(3600), ..Options::default() };
    let db = open(&vfs, options).unwrap();
    create(&db, "t");
    let mut rng = 0x9e3779b97f4a7c15u64;
    for k in 0..60u64 {
        // ~90 KiB groups (compression candidates) that LZ4 cannot shrink, so the journal passes
        // the 4 MiB of unsynced bytes that start a background sync.
        let docs = [random_doc(2 * k, 45_000, &mut rng), random_doc(2 * k + 1, 45_000, &mut rng)];
        insert(&db, "t", &docs.join("\n"), Durability::Soft).unwrap();
    }
    wait_until("the flusher's fdatasyncs to measure a write cost", || db.stats().write_ns_per_byte > 0.0);
    assert!(db.stats().fdatasyncs >= 1);
    db.close().unwrap();
}

/// Small hard writes, one large compressible hard group (the first candidate: always
/// compressed), then `after` more small hard writes. Returns the crashed directory, the first
/// segment's name and image, and the compressed record's offset.
fn with_a_compressed_record(after: u64) -> (Arc<SimVfs>, String, Vec<u8>, usize) {
    let vfs = SimVfs::new();
    let db = open(&vfs, journal_only()).unwrap();
    create(&db, "t");
    for k in 0..5 {
        insert(&db, "t", &text_doc(k), Durability::Hard).unwrap();
    }
    let big: Vec<String> = (100..400).map(text_doc).collect();
    insert(&db, "t", &big.join("\n"), Durability::Hard).unwrap();
    for k in 0..after {
        insert(&db, "t", &text_doc(1000 + k), Durability::Hard).unwrap();
    }
    assert_eq!(db.stats().groups_compressed, 1);
    std::mem::forget(db);
    let vfs = vfs.crash(CrashMode::KeepUnsynced);
    let name = segment_file_name(0);
    let image = vfs.read_file(&name).unwrap();
    let compressed: Vec<usize> = records(&image).into_iter().filter(|(_, h)| h.compressed).map(|(at, _)| at).collect();
    assert_eq!(compressed.len(), 1);
    (vfs, name, image, compressed[0])
}

#[test]
fn a_flipped_bit_in_a_compressed_last_record_is_a_torn_tail() {
    let (vfs, name, mut image, at) = with_a_compressed_record(0);
    let len = RecordHeader::parse(&image[at..]).unwrap().payload_len as usize;
    image[at + RECORD_HEADER_SIZE + len / 2] ^= 0x10;
    vfs.write_file(&name, image);
    // As for any record: the last one, damaged, is indistinguishable from a torn write.
    let db = open(&vfs, journal_only()).unwrap();
    assert_eq!(db.count("t").unwrap(), 5);
    assert!(get(&db, "t", 100).is_none());
    insert(&db, "t", &text_doc(99), Durability::Hard).unwrap();
    db.close().unwrap();
    let db = open(&vfs, journal_only()).unwrap();
    assert_eq!(db.count("t").unwrap(), 6);
    db.close().unwrap();
}

#[test]
fn a_flipped_bit_in_a_compressed_record_before_durable_ones_is_corruption() {
    let (vfs, name, mut image, at) = with_a_compressed_record(3);
    let len = RecordHeader::parse(&image[at..]).unwrap().payload_len as usize;
    image[at + RECORD_HEADER_SIZE + len / 3] ^= 0x01;
    vfs.write_file(&name, image);
    let e = open(&vfs, journal_only()).err().expect("damage before durable records must not open");
    assert_eq!(e.code, ErrorCode::CorruptJournal, "{e}");
    assert!(e.message.contains(&format!("offset {at}")), "{e}");
}

/// Rewrites the payload of the record at `at` with `edit`, then fixes its checksum, as a bug
/// (not the disk) would have written it.
fn rewrite_with_valid_checksum(image: &mut [u8], at: usize, edit: impl FnOnce(&mut [u8])) {
    let h = RecordHeader::parse(&image[at..]).unwrap();
    let payload = at + RECORD_HEADER_SIZE..at + RECORD_HEADER_SIZE + h.payload_len as usize;
    edit(&mut image[payload.clone()]);
    let mut header = image[at..at + RECORD_HEADER_SIZE].to_vec();
    header[12..16].fill(0);
    let crc = record_checksum(seed_for_segment(h.segment_id), &header, &image[payload]);
    image[at + 12..at + 16].copy_from_slice(&crc.to_le_bytes());
}

#[test]
fn a_checksummed_compressed_record_that_does_not_decompress_is_corruption() {
    type Edit = fn(&mut [u8]);
    let edits: [(&str, Edit); 3] = [
        ("length one too many", |p| {
            let n = u32::from_le_bytes(p[..4].try_into().unwrap()) + 1;
            p[..4].copy_from_slice(&n.to_le_bytes());
        }),
        ("length one too few", |p| {
            let n = u32::from_le_bytes(p[..4].try_into().unwrap()) - 1;
            p[..4].copy_from_slice(&n.to_le_bytes());
        }),
        ("a bad block", |p| {
            let n = p.len();
            p[n - 40..].fill(0xff);
        }),
    ];
    for (what, edit) in edits {
        // Last record or not: behind a valid checksum it is never a torn write.
        for after in [0, 2] {
            let (vfs, name, mut image, at) = with_a_compressed_record(after);
            rewrite_with_valid_checksum(&mut image, at, edit);
            assert!(RecordHeader::parse(&image[at..]).unwrap().compressed);
            vfs.write_file(&name, image);
            let e = open(&vfs, journal_only()).err().unwrap_or_else(|| panic!("{what}, {after} after: opened"));
            assert_eq!(e.code, ErrorCode::CorruptJournal, "{what}: {e}");
            assert!(
                e.message.contains("LZ4")
                    && e.message.contains(&format!("offset {at}"))
                    && e.message.contains("segment"),
                "{what}: {e}"
            );
        }
    }
}
