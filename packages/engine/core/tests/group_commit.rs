//! Group commit on a real file system: concurrent hard writers share fdatasyncs, and a lone
//! writer pays exactly one per write.

mod support;

use std::sync::Arc;
use support::*;
use wharf_engine::{wait, Database, DocFormat, Durability, Key, Options, PreparedDocs, WriteOptions};

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
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while db.stats().checkpoints < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let stats = db.stats();
    assert!(stats.checkpoints >= 2, "{stats:?}");
    // The journal was synced up to each checkpoint's position already.
    assert_eq!(stats.fdatasyncs - before, 300);
    db.close().unwrap();
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

/// 64 hard writes handed over in four parts, as the binding sends the writes of one tick: after a
/// group of 64, the committer applies each part as it arrives (each is visible before the next is
/// sent) and commits all four as one group, with one fdatasync.
#[test]
fn a_cohort_sent_in_parts_is_applied_as_it_arrives_and_committed_as_one_group() {
    let dir = tempfile::tempdir().unwrap();
    // A long window (its gap between arrivals is an eighth of it: 125 ms), so that no pause of
    // this thread or the committer on a loaded machine splits the cohort.
    let options = Options { group_commit_window: std::time::Duration::from_secs(1), ..Options::default() };
    let db = Database::open(dir.path(), options).unwrap();
    create(&db, "t");
    let ndjson = |keys: std::ops::Range<u64>| keys.map(|k| doc(k, 10)).collect::<Vec<_>>().join("\n");
    let parse = |text: String| PreparedDocs::parse(text.as_bytes(), DocFormat::Ndjson, "id").unwrap();
    let first = wait(|done| db.insert_each("t", parse(ndjson(0..64)), done, WriteOptions::default())).unwrap();
    assert_eq!(first.len(), 64);

    let before = db.stats();
    let (tx, rx) = std::sync::mpsc::channel();
    for part in 0..4u64 {
        let tx = tx.clone();
        let first_key = 1000 + part * 16;
        db.insert_each(
            "t",
            parse(ndjson(first_key..first_key + 16)),
            Box::new(move |r| tx.send(r).unwrap()),
            WriteOptions::default(),
        );
        if part < 3 {
            // Each part is visible before the next is sent, the group still open (well within the
            // gap): the first as the group's start, the others as the committer gathers them.
            let visible = || db.get("t", &Key::Num(first_key as f64)).unwrap().is_some();
            let deadline = std::time::Instant::now() + std::time::Duration::from_millis(60);
            while !visible() && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            assert!(visible(), "part {part} is applied while the rest is awaited");
            assert!(rx.try_recv().is_err(), "and not answered before its group's fdatasync");
        }
    }
    let results: Vec<_> = (0..4).flat_map(|_| rx.recv().unwrap().unwrap()).collect();
    assert!(results.iter().all(|r| r.inserted == 1), "{results:?}");
    let after = db.stats();
    assert_eq!((after.groups - before.groups, after.fdatasyncs - before.fdatasyncs), (1, 1));
    db.close().unwrap();
}

#[test]
fn soft_writes_reach_disk_within_the_flush_interval_without_sync() {
    let dir = tempfile::tempdir().unwrap();
    let options = Options { flush_interval: std::time::Duration::from_millis(20), ..Options::default() };
    let db = Database::open(dir.path(), options).unwrap();
    create(&db, "t");
    let docs = PreparedDocs::parse(doc(1, 10).as_bytes(), DocFormat::Ndjson, "id").unwrap();
    let opts = WriteOptions { durability: Durability::Soft, ..Default::default() };
    wait(|done| db.insert("t", docs, opts, done)).unwrap();
    // Poll (no timing assertion): the background flush must make it durable on its own.
    let target = db.stats().applied_seq;
    while db.stats().durable_seq < target {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    db.close().unwrap();
}

/// The acknowledgement listener is told before and after the answers of a batch: a poller that
/// sees `acknowledged` finds every answer of the group sent, none still to come, and none is sent
/// outside the two calls.
#[test]
fn the_ack_listener_brackets_a_groups_answers() {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::sync::Mutex;
    /// Answers sent so far, at each call: `(acknowledging, n)`.
    struct Recorder {
        answered: Arc<AtomicUsize>,
        calls: Arc<Mutex<Vec<(bool, usize)>>>,
    }
    impl wharf_engine::AckListener for Recorder {
        fn acknowledging(&self) {
            self.calls.lock().unwrap().push((true, self.answered.load(SeqCst)));
        }
        fn acknowledged(&self) {
            self.calls.lock().unwrap().push((false, self.answered.load(SeqCst)));
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), Options::default()).unwrap();
    create(&db, "t");
    let answered = Arc::new(AtomicUsize::new(0));
    let calls = Arc::new(Mutex::new(Vec::new()));
    db.set_ack_listener(Box::new(Recorder { answered: answered.clone(), calls: calls.clone() })).unwrap();
    let again = Recorder { answered: answered.clone(), calls: calls.clone() };
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
    rx.recv().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !calls.lock().unwrap().contains(&(false, 32)) && std::time::Instant::now() < deadline {
        std::thread::yield_now();
    }
    let calls = calls.lock().unwrap().clone();
    assert_eq!(calls, [(true, 0), (false, 32)], "one batch, its 32 answers between the two calls");
    db.close().unwrap();
}

/// A write after its table was dropped fails, even when both are in one group (the committer
/// reuses the previous write's table within a group).
#[test]
fn a_write_after_its_table_was_dropped_fails_in_the_same_group_too() {
    use std::sync::mpsc;
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), Options::default()).unwrap();
    create(&db, "t");
    create(&db, "big");
    // A large write first: the committer applies it for a while, so the three requests after it
    // queue up and are taken together.
    let big: String = (0..200_000u64).map(|k| doc(k, 50) + "\n").collect();
    let big = PreparedDocs::parse(big.as_bytes(), DocFormat::Ndjson, "id").unwrap();
    let one = |k: u64| PreparedDocs::parse(doc(k, 50).as_bytes(), DocFormat::Ndjson, "id").unwrap();
    let soft = WriteOptions { durability: Durability::Soft, ..WriteOptions::default() };
    let insert = |table: &str, docs: PreparedDocs| {
        let (tx, rx) = mpsc::channel();
        db.insert(table, docs, soft, Box::new(move |r| tx.send(r).unwrap()));
        rx
    };
    let big = insert("big", big);
    let before = insert("t", one(1));
    let (tx, dropped) = mpsc::channel();
    db.drop_table("t", Box::new(move |r| tx.send(r).unwrap()));
    let after = insert("t", one(2));
    assert_eq!(big.recv().unwrap().unwrap().inserted, 200_000);
    assert_eq!(before.recv().unwrap().unwrap().inserted, 1);
    dropped.recv().unwrap().unwrap();
    let after = after.recv().unwrap().map(|r| r.inserted).map_err(|e| e.code);
    assert_eq!(after, Err(wharf_engine::ErrorCode::TableNotFound));
    db.close().unwrap();
}
