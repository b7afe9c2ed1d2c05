//! Lazy, paged reads (`read_page`): pages of a key range or of index ranges, resumed where the
//! last one stopped, give exactly the one-call read; a limit reads about that many documents;
//! a pushed-down filter keeps what the predicate keeps and counts natively.

use std::time::Duration;

use serde_json::{json, Value};
use wharf_engine::predicate::{Filter, Verdict};
use wharf_engine::{
    wait, Conflict, Database, DocFormat, Durability, Key, KeyRange, Options, Page, PageOptions, PreparedDocs, ReadFrom,
    Resume, ValueBound, WriteOptions,
};

const DOCS: u64 = 5000;

fn open() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), Options::default()).unwrap();
    wait(|done| db.create_table("t", "id", done)).unwrap();
    let ndjson: String = (0..DOCS)
        .map(|i| {
            let mut d = json!({ "id": i, "group": i % 7, "n": (i * 7919) % 1000, "name": format!("doc{i}") });
            if i % 11 == 0 {
                d.as_object_mut().unwrap().remove("n"); // a missing field for filters
            }
            if i % 13 == 0 {
                d["n"] = json!([1, 2]); // a value filters defer on when walked into
            }
            d.to_string() + "\n"
        })
        .collect();
    let docs = PreparedDocs::parse(ndjson.as_bytes(), DocFormat::Ndjson, "id").unwrap();
    let options = WriteOptions { durability: Durability::Soft, conflict: Conflict::Error, wait_for_indexes: false };
    assert_eq!(wait(|done| db.insert("t", docs, options, done)).unwrap().inserted, DOCS);
    wait(|done| db.create_index("t", "group", "group", false, done)).unwrap();
    db.index_wait("t", &[], Duration::from_secs(60)).unwrap();
    (dir, db)
}

fn options(limit: usize, reverse: bool, filter: Option<Filter>, count_only: bool) -> PageOptions {
    PageOptions { limit, examine: 100_000, reverse, filter, count_only, fresh: true }
}

fn id(doc: &str) -> u64 {
    serde_json::from_str::<Value>(doc).unwrap()["id"].as_u64().unwrap()
}

/// Every page until the read is exhausted: the ids returned, the count, the pages taken.
fn read_all(db: &Database, from: &ReadFrom, opts: &PageOptions) -> (Vec<u64>, u64, usize) {
    let (mut ids, mut counted, mut pages) = (Vec::new(), 0, 0);
    let mut after: Option<Resume> = None;
    loop {
        let page: Page = db.read_page("t", from, after.clone(), opts).unwrap();
        pages += 1;
        ids.extend(page.rows.iter().map(|r| id(&r.doc)));
        counted += page.counted;
        match page.resume {
            Some(r) => after = Some(r),
            None => return (ids, counted, pages),
        }
        assert!(pages < 10_000, "the read does not end");
    }
}

#[test]
fn pages_of_a_key_range_resume_where_the_last_stopped_both_ways() {
    let (_dir, db) = open();
    let range = KeyRange {
        lower: std::ops::Bound::Included(Key::from(100.0)),
        upper: std::ops::Bound::Excluded(Key::from(4321.0)),
    };
    let whole: Vec<u64> = db.scan("t", &range, None, false).unwrap().iter().map(|(_, d)| id(d)).collect();
    for limit in [1, 7, 1000, 10_000] {
        let (ids, _, pages) = read_all(&db, &ReadFrom::Keys(range.clone()), &options(limit, false, None, false));
        assert_eq!(ids, whole, "limit {limit}");
        assert!(pages >= whole.len() / limit, "limit {limit}: {pages} pages");
        let (mut back, _, _) = read_all(&db, &ReadFrom::Keys(range.clone()), &options(limit, true, None, false));
        back.reverse();
        assert_eq!(back, whole, "reverse, limit {limit}");
    }
}

#[test]
fn a_limited_page_reads_about_limit_documents() {
    let (_dir, db) = open();
    for from in [
        ReadFrom::Keys(KeyRange::default()),
        ReadFrom::Index { name: "group".into(), ranges: vec![(ValueBound::Unbounded, ValueBound::Unbounded)] },
    ] {
        let before = db.stats().documents_read;
        let page = db.read_page("t", &from, None, &options(10, false, None, false)).unwrap();
        assert_eq!(page.rows.len(), 10);
        assert_eq!(page.examined, 10);
        assert_eq!(db.stats().documents_read - before, 10, "{from:?}");
        assert!(page.resume.is_some());
    }
}

#[test]
fn pages_of_index_ranges_equal_the_one_call_reads() {
    let (_dir, db) = open();
    let between = |lo: i64, hi: i64, reverse| {
        db.between("t", "group", &ValueBound::Closed(json!(lo)), &ValueBound::Open(json!(hi)), None, reverse, true)
            .unwrap()
            .iter()
            .map(|(_, d)| id(d))
            .collect::<Vec<_>>()
    };
    for limit in [1, 5, 333, 100_000] {
        for reverse in [false, true] {
            let from = ReadFrom::Index {
                name: "group".into(),
                ranges: vec![(ValueBound::Closed(json!(2)), ValueBound::Open(json!(5)))],
            };
            let (ids, _, _) = read_all(&db, &from, &options(limit, reverse, None, false));
            assert_eq!(ids, between(2, 5, reverse), "limit {limit} reverse {reverse}");
        }
        // getAll's ranges: one value after the other, in the order asked.
        let values = [json!(6), json!(0), json!(99), json!(6)];
        let from = ReadFrom::Index {
            name: "group".into(),
            ranges: values.iter().map(|v| (ValueBound::Closed(v.clone()), ValueBound::Closed(v.clone()))).collect(),
        };
        let (ids, _, _) = read_all(&db, &from, &options(limit, false, None, false));
        let want: Vec<u64> = db.get_all("t", "group", &values, true).unwrap().iter().map(|(_, d)| id(d)).collect();
        assert_eq!(ids, want, "getAll, limit {limit}");
    }
}

#[test]
fn a_pushed_down_filter_keeps_counts_and_defers_as_its_verdicts_say() {
    let (_dir, db) = open();
    let all: Vec<String> =
        db.scan("t", &KeyRange::default(), None, false).unwrap().iter().map(|(_, d)| d.to_string()).collect();
    for (spec, missing) in [
        (json!({"cmp": "gt", "path": ["n"], "value": 500}), "skip"),
        (json!({"cmp": "gt", "path": ["n"], "value": 500}), "keep"),
        (
            json!({"or": [{"cmp": "eq", "path": ["group"], "value": 3}, {"cmp": "lt", "path": ["n"], "value": 10}]}),
            "defer",
        ),
        (json!({"match": [["group", 1]]}), "skip"),
    ] {
        let filter = Filter::from_json(&json!({ "predicate": spec, "missing": missing })).unwrap();
        let verdicts: Vec<(u64, Verdict)> = all.iter().map(|d| (id(d), filter.verdict(d))).collect();
        let kept: Vec<u64> = verdicts.iter().filter(|(_, v)| *v != Verdict::NoMatch).map(|(i, _)| *i).collect();
        let matched = verdicts.iter().filter(|(_, v)| *v == Verdict::Match).count() as u64;
        assert!(matched > 0 && matched < DOCS, "{spec}: a filter that keeps everything or nothing tests little");
        for limit in [1, 10, 100_000] {
            let from = ReadFrom::Keys(KeyRange::default());
            let (ids, _, _) = read_all(&db, &from, &options(limit, false, Some(filter.clone()), false));
            assert_eq!(ids, kept, "{spec} {missing}, limit {limit}");
            // Counting: the kept ones counted, the deferred ones returned for the caller.
            let (deferred, counted, _) = read_all(&db, &from, &options(limit, false, Some(filter.clone()), true));
            assert_eq!(counted, matched, "{spec} {missing} count");
            let want_deferred: Vec<u64> =
                verdicts.iter().filter(|(_, v)| *v == Verdict::Defer).map(|(i, _)| *i).collect();
            assert_eq!(deferred, want_deferred);
        }
        // Over an index range, in index order.
        let from =
            ReadFrom::Index { name: "group".into(), ranges: vec![(ValueBound::Unbounded, ValueBound::Unbounded)] };
        let (_, counted, _) = read_all(&db, &from, &options(50, false, Some(filter.clone()), true));
        assert_eq!(counted, matched, "{spec} {missing} count over the index");
    }
    // `filter(...).limit(3)` stops at the third kept document.
    let filter = Filter::from_json(&json!({"predicate": {"cmp": "eq", "path": ["group"], "value": 4}})).unwrap();
    let page =
        db.read_page("t", &ReadFrom::Keys(KeyRange::default()), None, &options(3, false, Some(filter), false)).unwrap();
    assert_eq!(page.rows.iter().map(|r| id(&r.doc)).collect::<Vec<_>>(), vec![4, 11, 18]);
    assert_eq!(page.examined, 19);
}

#[test]
fn examine_bounds_one_page_and_resuming_the_wrong_kind_of_point_is_refused() {
    let (_dir, db) = open();
    let filter = Filter::from_json(&json!({"predicate": {"cmp": "eq", "path": ["name"], "value": "none"}})).unwrap();
    let opts = PageOptions { examine: 100, ..options(10, false, Some(filter), false) };
    let page = db.read_page("t", &ReadFrom::Keys(KeyRange::default()), None, &opts).unwrap();
    assert!(page.rows.is_empty());
    assert_eq!(page.examined, 100);
    assert_eq!(page.resume, Some(Resume::Key(Key::from(99.0))));
    let index = ReadFrom::Index { name: "group".into(), ranges: vec![(ValueBound::Unbounded, ValueBound::Unbounded)] };
    let err = db.read_page("t", &index, Some(Resume::Key(Key::from(1.0))), &opts).unwrap_err();
    assert!(err.to_string().contains("resumes after an index entry"), "{err}");
}

#[test]
fn counting_a_fresh_index_range_reads_documents_only_for_cut_values() {
    let (_dir, db) = open();
    // Long names: cut in their entries, so those are checked against their documents.
    let long = |i: u64| format!("{}{i:04}", "x".repeat(600));
    let ndjson: String =
        (0..40).map(|i| json!({ "id": 10_000 + i, "group": 3, "name": long(i) }).to_string() + "\n").collect();
    let docs = PreparedDocs::parse(ndjson.as_bytes(), DocFormat::Ndjson, "id").unwrap();
    let options = WriteOptions { durability: Durability::Soft, conflict: Conflict::Error, wait_for_indexes: false };
    wait(|done| db.insert("t", docs, options, done)).unwrap();
    wait(|done| db.create_index("t", "name", "name", false, done)).unwrap();
    db.index_wait("t", &[], Duration::from_secs(60)).unwrap();
    let count = |name: &str, lo: Value, hi: Value, fresh: bool| {
        let from = ReadFrom::Index { name: name.into(), ranges: vec![(ValueBound::Closed(lo), ValueBound::Open(hi))] };
        let before = db.stats().documents_read;
        let opts = PageOptions { fresh, ..options_count() };
        let (_, counted, _) = read_all(&db, &from, &opts);
        (counted, db.stats().documents_read - before)
    };
    fn options_count() -> PageOptions {
        PageOptions { limit: 100, examine: 100_000, reverse: false, filter: None, count_only: true, fresh: true }
    }
    let want = db
        .between("t", "group", &ValueBound::Closed(json!(2)), &ValueBound::Open(json!(5)), None, false, true)
        .unwrap()
        .len() as u64;
    assert_eq!(count("group", json!(2), json!(5), true), (want, 0));
    // Not fresh: every document is read.
    assert_eq!(count("group", json!(2), json!(5), false), (want, want));
    // Cut values: their documents are read; whole ones are not.
    let short = db
        .between("t", "name", &ValueBound::Closed(json!("a")), &ValueBound::Open(json!("x")), None, false, true)
        .unwrap()
        .len() as u64;
    assert_eq!(count("name", json!("a"), json!("x"), true), (short, 0));
    assert_eq!(count("name", json!("x"), json!("y"), true), (40, 40));
}
