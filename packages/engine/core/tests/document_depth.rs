//! One nesting-depth limit for documents, enforced where the engine parses them: a document
//! deeper than MAX_DOCUMENT_DEPTH is refused alone with an error naming the limit and its line,
//! and everything accepted — up to the limit — reads back exactly, through every read path, also
//! after recovery. Real engine on a temporary directory.

use std::time::Duration;
use wharf_engine::{
    wait, Conflict, Database, DocFormat, Durability, Key, KeyRange, Options, PreparedDocs, WriteOptions,
    MAX_DOCUMENT_DEPTH,
};

/// `{"id":key,"n":key,"a":{"a":…[key]…}}` with `depth` levels, the document itself being level 1.
fn nested(key: u64, depth: usize) -> String {
    let inner = depth - 2;
    format!("{{\"id\":{key},\"n\":{key},\"a\":{}[{key}]{}}}", "{\"a\":".repeat(inner), "}".repeat(inner))
}

/// Parses like a reader with no recursion limit of its own (the accepted depth is bounded).
fn parse(text: &str) -> serde_json::Value {
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    serde::Deserialize::deserialize(&mut de).unwrap()
}

fn write(db: &Database, ndjson: &str, conflict: Conflict) -> wharf_engine::WriteResult {
    let docs = PreparedDocs::parse(ndjson.as_bytes(), DocFormat::Ndjson, "id").unwrap();
    let options = WriteOptions { durability: Durability::Hard, conflict, ..Default::default() };
    wait(|done| db.insert("t", docs, options, done)).unwrap()
}

fn check_readable(db: &Database, expected: &[(u64, String)]) {
    for (key, text) in expected {
        assert_eq!(db.get("t", &Key::from(*key as f64)).unwrap().as_deref(), Some(text.as_str()), "key {key}");
    }
    let rows = db.scan("t", &KeyRange::default(), None, false).unwrap();
    assert_eq!(rows.len(), expected.len());
    for (row, (_, text)) in rows.iter().zip(expected) {
        assert_eq!(&*row.1, text.as_str());
        assert!(parse(&row.1).is_object());
    }
    let found = db.get_all("t", "n", &[serde_json::json!(2)], true).unwrap();
    assert_eq!(found.len(), 1, "the index holds the deepest accepted document");
}

#[test]
fn a_document_deeper_than_the_limit_is_refused_alone_and_the_table_stays_readable() {
    assert_eq!(MAX_DOCUMENT_DEPTH, 128);
    let dir = tempfile::tempdir().unwrap();
    let options = Options { flush_interval: Duration::from_millis(10), ..Options::default() };
    let db = Database::open(dir.path(), options.clone()).unwrap();
    wait(|done| db.create_table("t", "id", done)).unwrap();
    wait(|done| db.create_index("t", "n", "n", false, done)).unwrap();

    // Line 1 at depth 64, line 2 exactly at the limit, line 3 one past it, line 4 at 10,000.
    let batch = [nested(1, 64), nested(2, MAX_DOCUMENT_DEPTH), nested(3, MAX_DOCUMENT_DEPTH + 1), nested(4, 10_000)];
    let r = write(&db, &batch.join("\n"), Conflict::Error);
    assert_eq!((r.inserted, r.errors), (2, 2), "{r:?}");
    assert_eq!(r.document_errors.iter().map(|e| e.index).collect::<Vec<_>>(), vec![2, 3]);
    for e in &r.document_errors {
        assert!(
            e.message.contains("nested deeper than the limit of 128 levels of objects and arrays"),
            "{}",
            e.message
        );
        assert!(e.message.contains("at column"), "{}", e.message);
    }
    // The single-document path refuses it the same way.
    let docs = PreparedDocs::parse(nested(5, 300).as_bytes(), DocFormat::Ndjson, "id").unwrap();
    let each = wait(|done| db.insert_each("t", docs, done, WriteOptions::default())).unwrap();
    assert_eq!(each[0].errors, 1);
    assert!(each[0].first_error.as_deref().unwrap_or("").contains("128 levels"), "{:?}", each[0]);

    let expected = vec![(1, batch[0].clone()), (2, batch[1].clone())];
    db.index_wait("t", &[], Duration::from_secs(30)).unwrap();
    check_readable(&db, &expected);

    // A merge (conflict: update) into the deepest document keeps it exact and readable.
    let update = "{\"id\":2,\"extra\":true}";
    assert_eq!(write(&db, update, Conflict::Update).replaced, 1);
    let merged = parse(&db.get("t", &Key::from(2.0)).unwrap().unwrap());
    let mut original = parse(&batch[1]);
    original["extra"] = serde_json::json!(true);
    assert_eq!(merged, original);
    let expected = vec![(1, batch[0].clone()), (2, db.get("t", &Key::from(2.0)).unwrap().unwrap().to_string())];

    // After a clean close, the checkpoint's run files hold them.
    db.close().unwrap();
    let db = Database::open(dir.path(), options).unwrap();
    db.index_wait("t", &[], Duration::from_secs(30)).unwrap();
    check_readable(&db, &expected);
    db.close().unwrap();
}

#[test]
fn a_document_at_the_limit_is_replayed_exactly_after_a_power_cut() {
    use wharf_engine::io::{CrashMode, SimVfs, Vfs};
    let vfs = SimVfs::new();
    let open = |v: &std::sync::Arc<SimVfs>| {
        Database::open_with(std::sync::Arc::new(v.clone()) as std::sync::Arc<dyn Vfs>, Options::default()).unwrap()
    };
    let db = open(&vfs);
    wait(|done| db.create_table("t", "id", done)).unwrap();
    let text = nested(2, MAX_DOCUMENT_DEPTH);
    assert_eq!(write(&db, &text, Conflict::Error).inserted, 1);
    std::mem::forget(db);
    let db = open(&vfs.crash(CrashMode::DropUnsynced));
    assert_eq!(db.get("t", &Key::from(2.0)).unwrap().as_deref(), Some(text.as_str()));
    db.close().unwrap();
}
