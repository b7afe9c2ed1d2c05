//! Secondary indexes: results equal a full scan after random writes (while building, once
//! built, after a clean reopen and after a crash), and `wait_for_indexes` sees the write.

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use rand::{rngs::StdRng, Rng, SeedableRng};
use serde_json::{json, Value};
use support::*;
use wharf_engine::io::{CrashMode, SimVfs};
use wharf_engine::{
    wait, Conflict, Database, DocFormat, Durability, ErrorCode, KeyRange, Options, PreparedDocs, ValueBound,
    WriteOptions,
};

fn write(db: &Database, ndjson: &str, wait_for_indexes: bool) {
    let docs = PreparedDocs::parse(ndjson.as_bytes(), DocFormat::Ndjson, "id").unwrap();
    let options = WriteOptions { durability: Durability::Soft, conflict: Conflict::Replace, wait_for_indexes };
    let r = wait(|done| db.insert("t", docs, options, done)).unwrap();
    assert_eq!(r.errors, 0, "{:?}", r.first_error);
}

fn random_doc(rng: &mut StdRng, id: u64) -> String {
    let city = ["Oslo", "Lima", "Pune", "Kyiv", "Baku"][rng.gen_range(0..5)];
    let tags: Vec<&str> = ["a", "b", "c", "d"].into_iter().filter(|_| rng.gen_bool(0.4)).collect();
    let mut d = json!({ "id": id, "address": { "city": city }, "tags": tags, "n": rng.gen_range(0..50) });
    if rng.gen_bool(0.1) {
        d.as_object_mut().unwrap().remove("address"); // not indexed by city
    }
    d.to_string()
}

fn random_writes(db: &Database, rng: &mut StdRng, rounds: usize) {
    for _ in 0..rounds {
        let batch: String = (0..50)
            .map(|_| {
                let id = rng.gen_range(0..3000);
                random_doc(rng, id) + "\n"
            })
            .collect();
        write(db, &batch, false);
        let keys = (0..5).map(|_| wharf_engine::Key::from(rng.gen_range(0..3000u64) as f64)).collect();
        wait(|done| db.delete("t", keys, Durability::Soft, done)).unwrap();
    }
}

/// Ids of documents, by a full scan, whose field (per `pick`) matches.
fn scan_ids(db: &Database, pick: impl Fn(&Value) -> bool) -> Vec<u64> {
    let mut ids: Vec<u64> = db
        .scan("t", &KeyRange::default(), None, false)
        .unwrap()
        .into_iter()
        .map(|(_, d)| serde_json::from_str::<Value>(&d).unwrap())
        .filter(|d| pick(d))
        .map(|d| d["id"].as_u64().unwrap())
        .collect();
    ids.sort();
    ids
}

fn ids(rows: Vec<(wharf_engine::Key, std::sync::Arc<str>)>) -> Vec<u64> {
    let mut ids: Vec<u64> =
        rows.into_iter().map(|(_, d)| serde_json::from_str::<Value>(&d).unwrap()["id"].as_u64().unwrap()).collect();
    ids.sort();
    ids
}

fn check(db: &Database) {
    for city in ["Oslo", "Lima", "Nowhere"] {
        let got = ids(db.get_all("t", "city", &[json!(city)], true).unwrap());
        assert_eq!(got, scan_ids(db, |d| d["address"]["city"] == city), "city {city}");
    }
    for tag in ["a", "d"] {
        let got = ids(db.get_all("t", "tags", &[json!(tag)], true).unwrap());
        assert_eq!(got, scan_ids(db, |d| d["tags"].as_array().unwrap().contains(&json!(tag))), "tag {tag}");
    }
    let got = ids(db
        .between("t", "n", &ValueBound::Closed(json!(10)), &ValueBound::Open(json!(20)), None, false, true)
        .unwrap());
    assert_eq!(got, scan_ids(db, |d| (10..20).contains(&d["n"].as_u64().unwrap())));
    // In index order, limited.
    let rows = db.between("t", "n", &ValueBound::Open(json!(40)), &ValueBound::Unbounded, Some(7), true, true).unwrap();
    let ns: Vec<u64> =
        rows.iter().map(|(_, d)| serde_json::from_str::<Value>(d).unwrap()["n"].as_u64().unwrap()).collect();
    assert!(
        ns.len() == 7.min(scan_ids(db, |d| d["n"].as_u64().unwrap() > 40).len())
            && ns.windows(2).all(|w| w[0] >= w[1])
            && ns.iter().all(|n| *n > 40),
        "{ns:?}"
    );
}

fn create_indexes(db: &Database) {
    wait(|done| db.create_index("t", "city", "address.city", false, done)).unwrap();
    wait(|done| db.create_index("t", "tags", "tags", true, done)).unwrap();
    wait(|done| db.create_index("t", "n", "n", false, done)).unwrap();
}

#[test]
fn index_results_equal_a_full_scan_after_random_writes_reopens_and_crashes() {
    let vfs = SimVfs::new();
    let options = Options { memory_budget: 4 << 20, checkpoint_bytes: 1 << 20, ..Options::default() };
    let db = open(&vfs, options.clone()).unwrap();
    create(&db, "t");
    let mut rng = StdRng::seed_from_u64(3);
    random_writes(&db, &mut rng, 40);
    create_indexes(&db); // built from existing documents, while writes go on
    random_writes(&db, &mut rng, 40);
    check(&db);
    let err = wait(|done| db.create_index("t", "city", "x", false, done)).unwrap_err();
    assert_eq!(err.code, ErrorCode::IndexExists);
    let listed: Vec<(String, bool)> = db.list_indexes("t").unwrap().into_iter().map(|i| (i.name, i.multi)).collect();
    assert_eq!(listed, vec![("city".into(), false), ("n".into(), false), ("tags".into(), true)]);
    db.close().unwrap();

    // A clean close leaves exact indexes: ready at once.
    let db = open(&vfs, options.clone()).unwrap();
    assert!(db.list_indexes("t").unwrap().iter().all(|i| i.ready));
    check(&db);
    random_writes(&db, &mut rng, 20);
    // A process crash after a sync: no checkpoint, the engine's threads just stop.
    wait(|done| db.sync(done)).unwrap();
    std::mem::forget(db);
    let vfs = vfs.crash(CrashMode::KeepUnsynced);

    // After a crash they are rebuilt from the table.
    let db = open(&vfs, options).unwrap();
    db.index_wait("t", &[], Duration::from_secs(60)).unwrap();
    check(&db);
    wait(|done| db.drop_index("t", "n", done)).unwrap();
    assert_eq!(db.get_all("t", "n", &[json!(1)], true).unwrap_err().code, ErrorCode::IndexNotFound);
    db.close().unwrap();
}

#[test]
fn a_write_that_waits_for_indexes_is_in_them_when_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), Options::default()).unwrap();
    create(&db, "t");
    wait(|done| db.create_index("t", "city", "address.city", false, done)).unwrap();
    db.index_wait("t", &[], Duration::from_secs(60)).unwrap();
    for i in 0..200u64 {
        write(&db, &json!({"id": i, "address": {"city": format!("c{i}")}}).to_string(), true);
        // Not fresh: no waiting at query time, so only the write's own wait can explain a hit.
        let got = db.get_all("t", "city", &[json!(format!("c{i}"))], false).unwrap();
        assert_eq!(got.len(), 1, "write {i} was acknowledged before its index entry existed");
    }
    db.close().unwrap();
}

#[test]
fn an_index_still_building_refuses_stale_queries_unless_asked_to_wait() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), Options::default()).unwrap();
    create(&db, "t");
    let batch: String = (0..50_000u64).map(|i| json!({"id": i, "n": i % 10}).to_string() + "\n").collect();
    write(&db, &batch, false);
    wait(|done| db.create_index("t", "n", "n", false, done)).unwrap();
    match db.get_all("t", "n", &[json!(3)], false) {
        Err(e) => assert_eq!(e.code, ErrorCode::IndexNotReady),
        Ok(rows) => assert_eq!(rows.len(), 5000, "built already: then it must be complete"),
    }
    assert_eq!(db.get_all("t", "n", &[json!(3)], true).unwrap().len(), 5000);
    let names: BTreeSet<String> =
        db.index_wait("t", &[], Duration::from_secs(60)).unwrap().into_iter().map(|i| i.name).collect();
    assert!(names.contains("n"));
    db.close().unwrap();
}
