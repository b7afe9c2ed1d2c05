//! Stale records in recycled segments, corruption before durable records, failed fsyncs.

mod support;

use support::*;
use wharf_engine::internals::{segment_file_name, RECORD_HEADER_SIZE, SEGMENT_HEADER_SIZE};
use wharf_engine::io::{CrashMode, SimVfs};
use wharf_engine::{wait, Durability, ErrorCode, Key, Options};

#[test]
fn stale_records_of_a_recycled_segment_are_never_replayed() {
    let vfs = SimVfs::new();
    let db = open(&vfs, small_options()).unwrap();
    create(&db, "t");
    // First life: many documents, spread over several segments, then deleted.
    for chunk in 0..20u64 {
        let batch: Vec<String> = (chunk * 20..chunk * 20 + 20).map(|k| doc(k, 600)).collect();
        insert(&db, "t", &batch.join("\n"), Durability::Soft).unwrap();
    }
    let keys: Vec<Key> = (0..400).map(|k| Key::from(k as f64)).collect();
    let r = wait(|done| db.delete("t", keys, Durability::Hard, done)).unwrap();
    assert_eq!(r.deleted, 400);
    // Second life: write until a checkpoint has let a segment be reused, then a little more, so
    // new records sit in a recycled segment with the old ones after them.
    let mut k = 1000u64;
    let mut after_recycling = 0;
    while after_recycling < 20 {
        insert(&db, "t", &doc(k, 300), Durability::Hard).unwrap();
        k += 1;
        if db.stats().segments_recycled > 0 {
            after_recycling += 1;
        }
        assert!(k < 10_000, "no segment was recycled: {:?}", db.stats());
    }
    std::mem::forget(db);
    let db = open(&vfs.crash(CrashMode::DropUnsynced), small_options()).unwrap();
    assert_eq!(db.count("t").unwrap(), k - 1000);
    assert!(get(&db, "t", 5).is_none(), "a deleted document came back from a stale record");
    db.close().unwrap();
}

#[test]
fn damage_before_durable_records_is_an_error_not_a_silent_truncation() {
    let vfs = SimVfs::new();
    let db = open(&vfs, small_options()).unwrap();
    create(&db, "t");
    for k in 0..5 {
        insert(&db, "t", &doc(k, 50), Durability::Hard).unwrap();
    }
    std::mem::forget(db);
    let vfs = vfs.crash(CrashMode::KeepUnsynced);
    let name = segment_file_name(0);
    let mut bytes = vfs.read_file(&name).unwrap();
    // Flip a byte inside the second document record: three synced records follow it.
    let mut at = SEGMENT_HEADER_SIZE as usize;
    for _ in 0..2 {
        at += RECORD_HEADER_SIZE + u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
    }
    bytes[at + RECORD_HEADER_SIZE + 3] ^= 0x40;
    vfs.write_file(&name, bytes);
    let err = open(&vfs, small_options()).err().expect("opening must fail");
    assert_eq!(err.code, ErrorCode::CorruptJournal, "{err}");
    assert!(err.message.contains("damaged at offset"), "{err}");
}

// The two tests below count down to the n-th write or fdatasync. They write far less than half a
// segment, so the maintenance thread (spare segments, checkpoints) does no I/O meanwhile.

#[test]
fn a_failed_fdatasync_poisons_the_handle_until_reopened() {
    let vfs = SimVfs::new();
    let db = one_hard_write(&vfs);
    vfs.fail_sync_after(1);
    let err = insert(&db, "t", &doc(2, 10), Durability::Hard).unwrap_err();
    assert_eq!(err.code, ErrorCode::Poisoned);
    // Never retried and claimed durable: every later write fails, soft ones too, and sync().
    assert_eq!(insert(&db, "t", &doc(3, 10), Durability::Soft).unwrap_err().code, ErrorCode::Poisoned);
    assert_eq!(wait(|done| db.sync(done)).unwrap_err().code, ErrorCode::Poisoned);
    assert!(db.stats().poisoned);
    let _ = db.close();
    let db = open(&vfs.crash(CrashMode::DropUnsynced), small_options()).unwrap();
    assert_eq!(get(&db, "t", 1), Some(doc(1, 10)));
    assert_eq!(get(&db, "t", 3), None);
    db.close().unwrap();
}

#[test]
fn a_failed_journal_write_poisons_the_handle() {
    let vfs = SimVfs::new();
    let db = open(&vfs, small_options()).unwrap();
    create(&db, "t");
    vfs.fail_write_after(1);
    assert_eq!(insert(&db, "t", &doc(1, 10), Durability::Hard).unwrap_err().code, ErrorCode::Poisoned);
    assert_eq!(insert(&db, "t", &doc(2, 10), Durability::Hard).unwrap_err().code, ErrorCode::Poisoned);
}

#[test]
fn a_failed_background_fdatasync_of_soft_writes_poisons_the_handle() {
    let vfs = SimVfs::new();
    let options = Options { flush_interval: std::time::Duration::from_millis(5), ..small_options() };
    let db = open(&vfs, options).unwrap();
    create(&db, "t");
    vfs.fail_sync_after(1);
    insert(&db, "t", &doc(1, 10), Durability::Soft).unwrap();
    // The flusher thread's fdatasync fails; the committer takes the outcome and poisons.
    wait_until("the failed background sync to poison the handle", || db.stats().poisoned);
    assert_eq!(insert(&db, "t", &doc(2, 10), Durability::Soft).unwrap_err().code, ErrorCode::Poisoned);
    assert_eq!(wait(|done| db.sync(done)).unwrap_err().code, ErrorCode::Poisoned);
    let _ = db.close();
}

#[test]
fn records_of_a_segment_whose_activation_was_lost_never_come_back() {
    // Life 1: one hard write, then a power cut.
    let vfs = SimVfs::new();
    let options = || Options { checkpoint_bytes: 1 << 40, ..small_options() };
    let db = open(&vfs, options()).unwrap();
    create(&db, "t");
    insert(&db, "t", &doc(1, 10), Durability::Hard).unwrap();
    std::mem::forget(db);
    let vfs = vfs.crash(CrashMode::KeepUnsynced);
    // Life 2: the open seals segment 1 with a marker naming segment 2 and activates 2 in the free
    // file; a soft write lands in it. The power cut keeps the record but not the new header
    // (sectors are torn independently).
    let db = open(&vfs, options()).unwrap();
    insert(&db, "t", &doc(2, 10), Durability::Soft).unwrap();
    // A soft write's group is written to the journal before the committer takes the next one:
    // once this second write is acknowledged, the first is in the file.
    insert(&db, "t", &doc(3, 10), Durability::Soft).unwrap();
    std::mem::forget(db);
    let vfs = vfs.crash(CrashMode::KeepUnsynced);
    let second = segment_file_name(1);
    let mut bytes = vfs.read_file(&second).expect("the second segment file");
    assert_ne!(
        bytes[SEGMENT_HEADER_SIZE as usize..SEGMENT_HEADER_SIZE as usize + 4],
        [0; 4],
        "the soft write's record is there"
    );
    bytes[..512].fill(0);
    vfs.write_file(&second, bytes);
    // Life 3: the journal ends at segment 1's marker; the soft write is lost, as it may be. A
    // clean close then syncs the new active segment's header and names it in the manifest.
    let db = open(&vfs, options()).unwrap();
    assert_eq!((get(&db, "t", 2), get(&db, "t", 3)), (None, None));
    db.close().unwrap();
    // Had the new segment taken id 2 again, in the same file, the stale record would validate.
    let db = open(&vfs.crash(CrashMode::DropUnsynced), options()).unwrap();
    assert_eq!(get(&db, "t", 1), Some(doc(1, 10)));
    assert_eq!(get(&db, "t", 2), None, "a lost write came back from a stale record");
    assert_eq!(get(&db, "t", 3), None, "a lost write came back from a stale record");
    assert_eq!(db.count("t").unwrap(), 1);
    db.close().unwrap();
}
