//! Group commit on a real file system: concurrent hard writers share fdatasyncs, and a lone
//! writer pays exactly one per write. The committer's protocol step by step is `committer.rs`.

mod support;

use std::sync::Arc;
use support::driven::*;
use support::*;
use wharf_engine::testing::SyncPoint;
use wharf_engine::{wait, Database, DocFormat, Durability, Options, PreparedDocs, WriteOptions};

fn hard_insert(db: &Database, key: u64) {
    let docs = PreparedDocs::parse(doc(key, 100).as_bytes(), DocFormat::Ndjson, "id").unwrap();
    let r = wait(|done| db.insert("t", docs, WriteOptions::default(), done)).unwrap();
    assert_eq!(r.inserted, 1);
}

#[test]
fn a_lone_hard_writer_pays_one_fdatasync_per_write() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), Options::default()).unwrap();
    create(&db, "t");
    let before = db.stats().fdatasyncs;
    for k in 0..200 {
        hard_insert(&db, k);
    }
    let stats = db.stats();
    assert_eq!(stats.fdatasyncs - before, 200);
    assert_eq!(stats.groups, 201);
    db.close().unwrap();
}

#[test]
fn checkpoints_after_hard_writes_add_no_journal_fdatasync() {
    let dir = tempfile::tempdir().unwrap();
    // ~1 KiB records and 64 KiB between checkpoints: 300 hard writes start several.
    let options = Options { checkpoint_bytes: 64 << 10, ..Options::default() };
    let db = Database::open(dir.path(), options).unwrap();
    create(&db, "t");
    let before = db.stats().fdatasyncs;
    for k in 0..300 {
        let docs = PreparedDocs::parse(doc(k, 1000).as_bytes(), DocFormat::Ndjson, "id").unwrap();
        wait(|done| db.insert("t", docs, WriteOptions::default(), done)).unwrap();
    }
    // Close waits for the checkpoints under way and makes a last one: every checkpoint is done.
    db.close().unwrap();
    let stats = db.stats();
    assert!(stats.checkpoints >= 3, "{stats:?}");
    // The journal was synced up to each checkpoint's position already.
    assert_eq!(stats.fdatasyncs - before, 300);
}

#[test]
fn concurrent_hard_writers_share_fdatasyncs() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), Options::default()).unwrap();
    create(&db, "t");
    let before = db.stats().fdatasyncs;
    let db = Arc::new(db);
    let threads: Vec<_> = (0..64u64)
        .map(|w| {
            let db = db.clone();
            std::thread::spawn(move || (0..20).for_each(|i| hard_insert(&db, w * 1000 + i)))
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    let stats = db.stats();
    assert_eq!(db.count("t").unwrap(), 64 * 20);
    // Every write waited for a sync, yet syncs were shared: far fewer than writes.
    assert!(stats.fdatasyncs - before < 64 * 20 / 2, "{} fdatasyncs for 1280 writes", stats.fdatasyncs - before);
    assert!(stats.max_group_ops > 1);
    db.close().unwrap();
}

#[test]
fn inserts_sent_together_join_one_group_each_with_its_own_result() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), Options::default()).unwrap();
    create(&db, "t");
    let before = db.stats();
    // Keys 1, 2, 3, 1 and a document that is not an object.
    let ndjson = [1u64, 2, 3, 1].map(|k| doc(k, 10)).join("\n") + "\n[5]";
    let docs = PreparedDocs::parse(ndjson.as_bytes(), DocFormat::Ndjson, "id").unwrap();
    let results = wait(|done| db.insert_each("t", docs, done, WriteOptions::default())).unwrap();
    let counts: Vec<_> = results.iter().map(|r| (r.inserted, r.errors)).collect();
    // In order: the second write of key 1 is the duplicate.
    assert_eq!(counts, [(1, 0), (1, 0), (1, 0), (0, 1), (0, 1)]);
    // Each error is its own write's document 0.
    assert_eq!(results[3].document_errors[0].index, 0, "{:?}", results[3]);
    assert_eq!(results[4].document_errors[0].index, 0, "{:?}", results[4]);
    assert!(results[4].first_error.as_deref().unwrap().contains("object"), "{:?}", results[4]);

    // No documents: answered at once, without a group.
    let none = PreparedDocs::parse(b"", DocFormat::Ndjson, "id").unwrap();
    assert!(wait(|done| db.insert_each("t", none, done, WriteOptions::default())).unwrap().is_empty());
    // A missing table fails the request as a whole.
    let docs = PreparedDocs::parse(doc(9, 10).as_bytes(), DocFormat::Ndjson, "id").unwrap();
    assert!(wait(|done| db.insert_each("missing", docs, done, WriteOptions::default())).is_err());
    let after = db.stats();
    assert_eq!((after.groups - before.groups, after.fdatasyncs - before.fdatasyncs), (1, 1));
    db.close().unwrap();
}

/// The acknowledgement listener is told before and after the answers of a batch: a poller that
/// sees `acknowledged` finds every answer of the group sent, none still to come, and none is sent
/// outside the two calls.
#[test]
fn the_ack_listener_brackets_a_groups_answers() {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::sync::Mutex;
    /// Answers sent so far, at each call: `(acknowledging, n)`; each `acknowledged` is also
    /// sent on `batches`.
    struct Recorder {
        answered: Arc<AtomicUsize>,
        calls: Arc<Mutex<Vec<(bool, usize)>>>,
        batches: Mutex<std::sync::mpsc::Sender<()>>,
    }
    impl wharf_engine::AckListener for Recorder {
        fn acknowledging(&self) {
            self.calls.lock().unwrap().push((true, self.answered.load(SeqCst)));
        }
        fn acknowledged(&self) {
            self.calls.lock().unwrap().push((false, self.answered.load(SeqCst)));
            let _ = self.batches.lock().unwrap().send(());
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), Options::default()).unwrap();
    create(&db, "t");
    let answered = Arc::new(AtomicUsize::new(0));
    let calls = Arc::new(Mutex::new(Vec::new()));
    let (batch_tx, batches) = std::sync::mpsc::channel();
    let recorder =
        || Recorder { answered: answered.clone(), calls: calls.clone(), batches: Mutex::new(batch_tx.clone()) };
    db.set_ack_listener(Box::new(recorder())).unwrap();
    let again = recorder();
    assert!(db.set_ack_listener(Box::new(again)).is_err(), "one listener per database");

    // 32 hard writes handed over at once: one group, answered after its fdatasync.
    let (tx, rx) = std::sync::mpsc::channel();
    let ndjson: Vec<String> = (0..32u64).map(|k| doc(k, 100)).collect();
    let docs = PreparedDocs::parse(ndjson.join("\n").as_bytes(), DocFormat::Ndjson, "id").unwrap();
    let a = answered.clone();
    let done = Box::new(move |r: wharf_engine::Result<Vec<wharf_engine::WriteResult>>| {
        let results = r.unwrap();
        assert!(results.len() == 32 && results.iter().all(|r| r.inserted == 1));
        a.fetch_add(32, SeqCst);
        tx.send(()).unwrap();
    });
    db.insert_each("t", docs, done, WriteOptions { durability: Durability::Hard, ..WriteOptions::default() });
    rx.recv_timeout(NEVER).expect("the 32 writes are answered");
    batches.recv_timeout(NEVER).expect("the listener is told the batch was sent");
    let calls = calls.lock().unwrap().clone();
    assert_eq!(calls, [(true, 0), (false, 32)], "one batch, its 32 answers between the two calls");
    db.close().unwrap();
}

/// A write after its table was dropped fails, even when both are in one group (the committer
/// reuses the previous write's table within a group).
#[test]
fn a_write_after_its_table_was_dropped_fails_in_the_same_group_too() {
    let vfs = wharf_engine::io::SimVfs::new();
    let d = open_driven(&vfs, small_options());
    let (done, created) = to_channel();
    d.db.create_table("t", "id", done);
    d.gate.pass(SyncPoint::Idle);
    answer(&created, "create_table").unwrap();
    // Queued while the committer is held between groups: one group takes all three.
    let soft = WriteOptions { durability: Durability::Soft, ..WriteOptions::default() };
    let one = |k: u64| PreparedDocs::parse(doc(k, 50).as_bytes(), DocFormat::Ndjson, "id").unwrap();
    let (done, before) = to_channel();
    d.db.insert("t", one(1), soft, done);
    let (done, dropped) = to_channel();
    d.db.drop_table("t", done);
    let (done, after) = to_channel();
    d.db.insert("t", one(2), soft, done);
    let groups = d.db.stats().groups;
    d.gate.pass(SyncPoint::Idle);
    assert_eq!(answer(&before, "the insert before the drop").unwrap().inserted, 1);
    answer(&dropped, "drop_table").unwrap();
    let after = answer(&after, "the insert after the drop").map(|r| r.inserted).map_err(|e| e.code);
    assert_eq!(after, Err(wharf_engine::ErrorCode::TableNotFound));
    assert_eq!(d.db.stats().groups, groups + 1, "one group");
    d.gate.release_all();
    d.db.close().unwrap();
}
