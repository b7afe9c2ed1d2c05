//! Recovery after the journal is cut at every byte offset of its last records: the database
//! opens, holds exactly the records that are whole, and accepts new writes afterwards.

mod support;

use support::*;
use wharf_engine::internals::{segment_file_name, RECORD_HEADER_SIZE, SEGMENT_HEADER_SIZE};
use wharf_engine::io::SimVfs;
use wharf_engine::Durability;

#[test]
fn every_cut_of_the_last_records_recovers_the_whole_ones() {
    let vfs = SimVfs::new();
    let db = open(&vfs, small_options()).unwrap();
    create(&db, "t");
    // Five single-document records of known sizes after the create-table record.
    let docs: Vec<String> = (1..=5).map(|k| doc(k, 10 * k as usize)).collect();
    for d in &docs {
        insert(&db, "t", d, Durability::Hard).unwrap();
    }
    std::mem::forget(db);
    let name = segment_file_name(0);
    let full = vfs.read_file(&name).expect("the first segment");
    // Record boundaries: walk the headers from the segment start.
    let mut ends = Vec::new();
    let mut at = SEGMENT_HEADER_SIZE as usize;
    for _ in 0..6 {
        let len = u32::from_le_bytes(full[at + 8..at + 12].try_into().unwrap()) as usize;
        at += RECORD_HEADER_SIZE + len;
        ends.push(at);
    }
    let first_doc_start = ends[0];
    for cut in first_doc_start..=ends[5] {
        for shorten in [false, true] {
            let mut bytes = full.clone();
            if shorten {
                bytes.truncate(cut);
            } else {
                bytes[cut..].fill(0);
            }
            let crashed = SimVfs::new();
            for f in ["MANIFEST-0", "MANIFEST-1"] {
                if let Some(b) = vfs.read_file(f) {
                    crashed.write_file(f, b);
                }
            }
            crashed.write_file(&name, bytes);
            let db = open(&crashed, small_options()).unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
            let whole = ends[1..].iter().filter(|&&e| e <= cut).count() as u64;
            assert_eq!(db.count("t").unwrap(), whole, "cut at {cut} (shortened: {shorten})");
            for k in 1..=whole {
                assert_eq!(get(&db, "t", k).as_deref(), Some(docs[k as usize - 1].as_str()));
            }
            // The database goes on: a new write after the cut survives another reopen.
            insert(&db, "t", &doc(99, 5), Durability::Hard).unwrap();
            db.close().unwrap();
            let db = open(&crashed, small_options()).unwrap();
            assert_eq!(db.count("t").unwrap(), whole + 1, "cut at {cut}, after a second open");
            db.close().unwrap();
        }
    }
}
