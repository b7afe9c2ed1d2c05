//! Options that shape the files on disk come from the database, never from the open call.
//!
//! Guards against: reading old journal segments with the segment size passed at open (recovery
//! read `min(len, segment_size)` bytes of each, so a smaller size silently dropped every record
//! past it), and against a note-less override.

mod support;

use std::sync::Arc;
use support::*;
use wharf_engine::io::{CrashMode, SimVfs};
use wharf_engine::{wait, Database, Durability, Options};

fn with_segment(size: u64) -> Options {
    Options { segment_size: Some(size), checkpoint_bytes: 1 << 40, ..small_options() }
}

fn check_all(db: &Database, keys: impl IntoIterator<Item = u64>, size: usize, context: &str) -> u64 {
    let mut checked = 0;
    for k in keys {
        assert_eq!(get(db, "t", k), Some(doc(k, size)), "{context}: key {k}");
        checked += 1;
    }
    checked
}

#[test]
fn reopening_with_a_smaller_segment_size_keeps_every_hard_write() {
    let vfs = SimVfs::new();
    let db = open(&vfs, with_segment(1 << 20)).unwrap();
    create(&db, "t");
    for k in 0..2000 {
        insert(&db, "t", &doc(k, 300), Durability::Hard).unwrap();
    }
    std::mem::forget(db); // a power cut: no checkpoint, everything is in the one journal segment
    let after = vfs.crash(CrashMode::DropUnsynced);
    let db = open(&after, with_segment(64 << 10)).unwrap();
    assert_eq!(db.count("t").unwrap(), 2000);
    check_all(&db, 0..2000, 300, "reopened with 64 KiB");
    let stats = db.stats();
    assert_eq!(stats.segment_size, 1 << 20, "the database keeps its own segment size");
    assert_eq!(stats.open_notes.len(), 1, "{:?}", stats.open_notes);
    assert!(stats.open_notes[0].contains("segment size 65536 bytes ignored"), "{}", stats.open_notes[0]);
    assert!(stats.open_notes[0].contains("1048576-byte journal segments"), "{}", stats.open_notes[0]);
    // Writes after the reopen go to segments of the database's size, and survive the next one.
    for k in 2000..2400 {
        insert(&db, "t", &doc(k, 300), Durability::Hard).unwrap();
    }
    db.close().unwrap();
    for (name, len) in after.files() {
        if name.starts_with("journal-") {
            assert_eq!(len, 1 << 20, "{name}");
        }
    }
    let db =
        open(&after.crash(CrashMode::DropUnsynced), Options { segment_size: None, ..with_segment(1 << 20) }).unwrap();
    assert!(db.stats().open_notes.is_empty(), "no size passed: nothing to note");
    check_all(&db, 0..2400, 300, "reopened with no size");
    db.close().unwrap();
}

#[test]
fn alternating_segment_sizes_between_restarts_under_load_loses_nothing() {
    let sizes = [256 << 10, 64 << 10, 1 << 20, 64 << 10, 128 << 10, 1 << 20, 64 << 10, 256 << 10];
    let mut vfs: Arc<SimVfs> = SimVfs::new();
    let mut durable = 0u64;
    let mut checked = 0;
    for (round, &size) in sizes.iter().enumerate() {
        // Checkpoints, rotations and recycling all happen at these sizes.
        let options = Options { segment_size: Some(size), checkpoint_bytes: 200 << 10, ..small_options() };
        let db = open(&vfs, options).unwrap_or_else(|e| panic!("round {round}: {e}"));
        if round == 0 {
            create(&db, "t");
        } else {
            assert_eq!(db.stats().segment_size, 256 << 10, "round {round}");
            assert_eq!(
                db.stats().open_notes.is_empty(),
                size == 256 << 10,
                "round {round}: {:?}",
                db.stats().open_notes
            );
        }
        checked += check_all(&db, 0..durable, 500, &format!("round {round} at {size}"));
        // Hard writes among soft ones, then a sync: all 600 acknowledged as durable.
        for k in durable..durable + 600 {
            let durability = if k % 3 == 0 { Durability::Hard } else { Durability::Soft };
            assert_eq!(insert(&db, "t", &doc(k, 500), durability).unwrap().inserted, 1);
        }
        wait(|done| db.sync(done)).unwrap();
        durable += 600;
        // A soft write after the sync may be lost; its key is outside the checked range.
        insert(&db, "t", &doc(1_000_000 + round as u64, 500), Durability::Soft).unwrap();
        std::mem::forget(db);
        vfs = vfs.crash(if round % 2 == 0 { CrashMode::DropUnsynced } else { CrashMode::Torn(round as u64) });
    }
    let db = open(&vfs, small_options()).unwrap();
    checked += check_all(&db, 0..durable, 500, "last open");
    assert!(durable >= 4800 && checked > 20_000, "{durable} durable, {checked} checks");
    db.close().unwrap();
}

#[test]
fn a_segment_size_below_the_minimum_is_refused_with_the_limit() {
    let vfs = SimVfs::new();
    let err = open(&vfs, Options { segment_size: Some(4096), ..small_options() }).err().unwrap();
    assert!(err.message.contains("at least 64 KiB"), "{err}");
    assert!(vfs.files().is_empty(), "nothing created: {:?}", vfs.files());
}
