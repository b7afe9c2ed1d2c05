//! Change feeds (`Database::changes`): every write applied to a table reaches each of its feeds
//! with the document's old and new versions, in commit order; a full feed drops and counts;
//! dropping the table or closing the database ends the feed.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

use wharf_engine::{
    wait, Conflict, Database, DocFormat, Durability, FeedChange, Key, Options, PreparedDocs, WriteOptions,
};

fn docs(text: &str) -> PreparedDocs {
    PreparedDocs::parse(text.as_bytes(), DocFormat::Ndjson, "id").unwrap()
}

fn write(db: &Database, text: &str, conflict: Conflict) {
    let opts = WriteOptions { conflict, ..WriteOptions::default() };
    wait(|done| db.insert("t", docs(text), opts, done)).unwrap();
}

fn shown(c: &FeedChange) -> (String, Option<String>, Option<String>) {
    (c.key.to_json(), c.old.as_deref().map(str::to_string), c.new.as_deref().map(str::to_string))
}

#[test]
fn every_write_reaches_the_feed_with_its_old_and_new_versions() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), Options::default()).unwrap();
    wait(|done| db.create_table("t", "id", done)).unwrap();
    write(&db, r#"{"id":0,"v":"before the feed"}"#, Conflict::Error);
    let rings = Arc::new(AtomicUsize::new(0));
    let r = rings.clone();
    let feed = db.changes("t", 1000, Box::new(move || _ = r.fetch_add(1, SeqCst))).unwrap();

    write(&db, "{\"id\":1,\"v\":\"a\"}\n{\"id\":2,\"v\":\"b\"}", Conflict::Error);
    write(&db, r#"{"id":1,"v":"dup"}"#, Conflict::Error); // refused: no change
    write(&db, r#"{"id":1,"v":"c"}"#, Conflict::Replace);
    write(&db, r#"{"id":2,"w":1}"#, Conflict::Update);
    write(&db, r#"{"id":2,"v":"b","w":1}"#, Conflict::Replace); // unchanged: no change
    wait(|done| db.delete("t", vec![Key::from(1.0), Key::from(9.0)], Durability::Soft, done)).unwrap();
    assert!(rings.load(SeqCst) >= 1);

    let batch = feed.take(100);
    let got: Vec<_> = batch.changes.iter().map(shown).collect();
    let s = |t: &str| Some(t.to_string());
    assert_eq!(
        got,
        vec![
            ("1".into(), None, s(r#"{"id":1,"v":"a"}"#)),
            ("2".into(), None, s(r#"{"id":2,"v":"b"}"#)),
            ("1".into(), s(r#"{"id":1,"v":"a"}"#), s(r#"{"id":1,"v":"c"}"#)),
            ("2".into(), s(r#"{"id":2,"v":"b"}"#), s(r#"{"id":2,"v":"b","w":1}"#)),
            ("1".into(), s(r#"{"id":1,"v":"c"}"#), None),
        ]
    );
    assert_eq!(batch.skipped, 0);
    assert!(!batch.closed);
    assert!(feed.take(100).changes.is_empty());

    // Dropped: unsubscribed, nothing more arrives.
    drop(feed);
    write(&db, r#"{"id":3}"#, Conflict::Error);
    db.close().unwrap();
}

#[test]
fn a_full_feed_drops_and_counts_and_ends_with_its_table() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), Options::default()).unwrap();
    wait(|done| db.create_table("t", "id", done)).unwrap();
    let feed = db.changes("t", 10, Box::new(|| {})).unwrap();
    let bulk: Vec<String> = (0..1000).map(|i| format!("{{\"id\":{i}}}")).collect();
    write(&db, &bulk.join("\n"), Conflict::Error);
    let first = feed.take(1000);
    assert_eq!(first.changes.len(), 10);
    assert_eq!(first.changes[9].key, Key::from(9.0));
    assert_eq!(first.skipped, 990);

    wait(|done| db.drop_table("t", done)).unwrap();
    let last = feed.take(1000);
    assert!(last.changes.is_empty());
    assert!(last.closed);
    db.close().unwrap();
}

#[test]
fn closing_the_database_ends_its_feeds() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), Options::default()).unwrap();
    wait(|done| db.create_table("t", "id", done)).unwrap();
    let rings = Arc::new(AtomicUsize::new(0));
    let r = rings.clone();
    let feed = db.changes("t", 10, Box::new(move || _ = r.fetch_add(1, SeqCst))).unwrap();
    db.close().unwrap();
    assert_eq!(rings.load(SeqCst), 1, "the end rings");
    assert!(feed.take(10).closed);
    assert!(db.changes("t", 10, Box::new(|| {})).is_err());
}
