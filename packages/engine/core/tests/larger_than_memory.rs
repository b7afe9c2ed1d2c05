//! Tables many times the memory budget: every read matches a model after random writes, memory
//! stays inside the budget, runs merge, and pacing slows writes instead of stopping them.

mod support;

use std::collections::BTreeMap;
use std::ops::Bound;
use std::time::Duration;

use rand::{rngs::StdRng, Rng, SeedableRng};
use support::*;
use wharf_engine::{
    wait, Conflict, Database, DocFormat, Durability, Key, KeyRange, Options, PreparedDocs, WriteOptions,
};

fn put(db: &Database, docs: &str, conflict: Conflict) {
    let docs = PreparedDocs::parse(docs.as_bytes(), DocFormat::Ndjson, "id").unwrap();
    let r = wait(|done| {
        db.insert("t", docs, WriteOptions { durability: Durability::Soft, conflict, ..Default::default() }, done)
    })
    .unwrap();
    assert_eq!(r.errors, 0, "{:?}", r.first_error);
}

fn check(db: &Database, model: &BTreeMap<u64, String>, rng: &mut StdRng) {
    assert_eq!(db.count("t").unwrap(), model.len() as u64);
    for _ in 0..300 {
        let k = rng.gen_range(0..30_000u64);
        assert_eq!(get(db, "t", k), model.get(&k).cloned(), "get {k}");
    }
    for _ in 0..30 {
        let (a, b) = (rng.gen_range(0..30_000u64), rng.gen_range(0..30_000u64));
        let (lo, hi) = (a.min(b), a.max(b));
        let reverse = rng.gen_bool(0.5);
        let range =
            KeyRange { lower: Bound::Excluded(Key::from(lo as f64)), upper: Bound::Included(Key::from(hi as f64)) };
        let got: Vec<String> =
            db.scan("t", &range, Some(50), reverse).unwrap().into_iter().map(|(_, d)| d.to_string()).collect();
        let want: Vec<String> = if reverse {
            model.range(lo + 1..=hi).rev().take(50).map(|(_, d)| d.clone()).collect()
        } else {
            model.range(lo + 1..=hi).take(50).map(|(_, d)| d.clone()).collect()
        };
        assert_eq!(got, want, "scan ({lo}, {hi}] reverse={reverse}");
    }
    let all = db.scan("t", &KeyRange::default(), None, false).unwrap();
    assert_eq!(all.len(), model.len());
}

#[test]
fn a_table_ten_times_the_memory_budget_reads_back_exactly_after_random_writes() {
    let dir = tempfile::tempdir().unwrap();
    let options = Options { memory_budget: 4 << 20, merge_fan_in: 3, checkpoint_bytes: 8 << 20, ..Options::default() };
    let db = Database::open(dir.path(), options.clone()).unwrap();
    create(&db, "t");
    let mut rng = StdRng::seed_from_u64(7);
    let mut model = BTreeMap::new();
    let mut peak_memtables = 0;
    // ~45 MB of documents written (inserts, replaces and deletes over 30 000 keys).
    for round in 0..150 {
        let mut batch = String::new();
        let mut deletes = Vec::new();
        let mut in_batch = std::collections::HashSet::new();
        for _ in 0..200 {
            let k = rng.gen_range(0..30_000u64);
            // Deletes run after the batch: touch each key once per round so the order is moot.
            if !in_batch.insert(k) {
                continue;
            }
            if rng.gen_bool(0.1) {
                if model.remove(&k).is_some() {
                    deletes.push(Key::from(k as f64));
                }
            } else {
                let d = doc(k, 1400 + (round % 7) * 20);
                model.insert(k, d.clone());
                batch.push_str(&d);
                batch.push('\n');
            }
        }
        put(&db, &batch, Conflict::Replace);
        wait(|done| db.delete("t", deletes, Durability::Soft, done)).unwrap();
        let s = db.stats();
        peak_memtables = peak_memtables.max(s.memtable_bytes + s.frozen_memtable_bytes);
        assert!(s.cache_bytes <= options.memory_budget / 4 + (1 << 20), "cache {} bytes", s.cache_bytes);
    }
    assert!(peak_memtables <= options.memory_budget * 3 / 4, "memtables peaked at {peak_memtables} bytes");
    let s = db.stats();
    assert!(s.checkpoints >= 5 && s.merges >= 1 && s.runs >= 1, "{s:?}");
    // Runs are compressed, so the documents' own size, not the files', says it.
    let table_bytes: u64 = model.values().map(|d| d.len() as u64).sum();
    assert!(table_bytes > options.memory_budget * 3, "the table holds {table_bytes} bytes");
    check(&db, &model, &mut rng);
    db.close().unwrap();
    let run_files = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "wrun"))
        .count();

    let db = Database::open(dir.path(), options).unwrap();
    // Merges deleted the files of the runs they replaced: none was left for open to clean up.
    assert_eq!(run_files as u64, db.stats().runs);
    check(&db, &model, &mut rng);
    db.close().unwrap();
}

#[test]
fn pacing_lowers_the_write_rate_when_background_work_is_slow_without_stopping_writes() {
    let dir = tempfile::tempdir().unwrap();
    // Checkpoints and merges write at about 20 MiB/s: far slower than the writer below.
    let options =
        Options { memory_budget: 16 << 20, background_delay_per_mib: Duration::from_millis(50), ..Options::default() };
    let db = Database::open(dir.path(), options).unwrap();
    create(&db, "t");
    let mut limited = 0;
    for i in 0..400u64 {
        let batch: String = (0..100).map(|j| doc(i * 100 + j, 900) + "\n").collect();
        put(&db, &batch, Conflict::Error);
        if db.stats().write_rate_limit_bps > 0 {
            limited += 1;
        }
    }
    let s = db.stats();
    assert!(limited > 0 && s.paced_groups > 0 && s.pacing_delay_ms > 0.0, "pacing never engaged: {s:?}");
    assert!(s.flush_rate_bps > 0, "{s:?}");
    assert_eq!(s.write_stops, 0, "writes were stopped: {s:?}");
    assert_eq!(db.count("t").unwrap(), 40_000);
    db.close().unwrap();
}

#[test]
fn a_write_finds_keys_that_only_runs_hold_after_an_ascending_load_and_after_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let options = Options { memory_budget: 4 << 20, checkpoint_bytes: 1 << 20, ..Options::default() };
    let last = 100 * 200 - 1;
    // The first key, a middle one and the largest are duplicates, whichever run holds them; a
    // key above them all is new.
    let check_conflicts = |db: &Database, new_key: u64| {
        let batch: String = [0, 7_777, last, new_key].iter().map(|&k| doc(k, 100) + "\n").collect();
        let docs = PreparedDocs::parse(batch.as_bytes(), DocFormat::Ndjson, "id").unwrap();
        let options = WriteOptions { durability: Durability::Soft, conflict: Conflict::Error, ..Default::default() };
        let r = wait(|done| db.insert("t", docs, options, done)).unwrap();
        assert_eq!((r.inserted, r.errors), (1, 3), "{:?}", r.first_error);
        assert_eq!(db.count("t").unwrap(), new_key + 1);
    };
    let db = Database::open(dir.path(), options.clone()).unwrap();
    create(&db, "t");
    // Ascending keys, as an import writes them: each batch is above every run.
    for i in 0..100u64 {
        let batch: String = (0..200).map(|j| doc(i * 200 + j, 900) + "\n").collect();
        put(&db, &batch, Conflict::Error);
    }
    assert!(db.stats().runs >= 2, "{:?}", db.stats());
    check_conflicts(&db, last + 1);
    db.close().unwrap();
    // Reopened, the runs come from the manifest.
    let db = Database::open(dir.path(), options).unwrap();
    assert!(db.stats().runs >= 2);
    check_conflicts(&db, last + 2);
    db.close().unwrap();
}
