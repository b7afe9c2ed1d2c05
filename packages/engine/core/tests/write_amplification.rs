//! Bytes written per byte loaded, on a real disk: the engine's counters of what it writes (by
//! kind) add up to what the process wrote (`/proc/self/io`), and a bulk load into an empty table
//! in key order writes each loaded byte at most twice (journal, runs and merges together).

mod support;

use std::sync::Mutex;

use rand::{rngs::StdRng, seq::SliceRandom, Rng, SeedableRng};
use support::*;
use wharf_engine::{wait, Database, DocFormat, Durability, Options, PreparedDocs, Stats, WriteOptions};

/// The tests here compare the process's write counter with the engine's: one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const CITIES: [&str; 6] = ["Tallinn", "Kyoto", "Lagos", "Lima", "Oslo", "Perth"];
const TAGS: [&str; 6] = ["alpha", "delta", "kappa", "omega", "sigma", "theta"];

/// A document like the bench's (~150 bytes), key `k` + 9 digits.
fn bench_doc(i: u64, rng: &mut StdRng) -> String {
    format!(
        r#"{{"id":"k{i:09}","name":"user {i}","email":"user{i}@example.com","age":{},"city":"{}","score":{:.4},"tags":["{}","{}"],"active":{}}}"#,
        rng.gen_range(18..90),
        CITIES[rng.gen_range(0..CITIES.len())],
        rng.gen_range(0.0..100.0),
        TAGS[rng.gen_range(0..TAGS.len())],
        TAGS[rng.gen_range(0..TAGS.len())],
        rng.gen_bool(0.5),
    )
}

/// Bytes this process has passed to write calls so far (`wchar`: what reaches the page cache,
/// which the kernel then writes to disk).
fn process_wchar() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").expect("reading /proc/self/io");
    let line = io.lines().find(|l| l.starts_with("wchar:")).expect("wchar in /proc/self/io");
    line["wchar:".len()..].trim().parse().unwrap()
}

/// Small memtables (a 4 MiB budget: checkpoints every ~1 MiB), so a few MB make many runs.
fn options() -> Options {
    Options { memory_budget: 4 << 20, merge_fan_in: 4, ..Options::default() }
}

/// Documents per insert: each batch is one group under 64 KiB, which the journal never
/// compresses, so the journal takes its full size (as it does wherever compressing costs more
/// than the write it saves) and the bound holds without help from it.
const BATCH: usize = 300;

/// Loads `docs` into an empty table in batches of [`BATCH`] (soft, then one `sync`, as an
/// import does), waits for `settled`, closes (the final checkpoint), and returns the stats after
/// close with the bytes the process wrote meanwhile.
fn load(docs: &[String], settled: impl Fn(&Stats) -> bool) -> (Stats, u64) {
    let dir = tempfile::tempdir().unwrap();
    let before = process_wchar();
    let db = Database::open(dir.path(), options()).unwrap();
    create(&db, "t");
    insert_all(&db, docs);
    wait_until("the background work the test waits for", || settled(&db.stats()));
    db.close().unwrap();
    let stats = db.stats();
    (stats, process_wchar() - before)
}

fn insert_all(db: &Database, docs: &[String]) {
    for batch in docs.chunks(BATCH) {
        let docs = PreparedDocs::parse(batch.join("\n").as_bytes(), DocFormat::Ndjson, "id").unwrap();
        let r = wait(|done| {
            db.insert("t", docs, WriteOptions { durability: Durability::Soft, ..Default::default() }, done)
        })
        .unwrap();
        assert_eq!(r.errors, 0, "{:?}", r.first_error);
    }
    wait(|done| db.sync(done)).unwrap();
}

fn documents(n: u64) -> Vec<String> {
    let mut rng = StdRng::seed_from_u64(31);
    (0..n).map(|i| bench_doc(i, &mut rng)).collect()
}

/// The counters by kind add up to the total, and the total to what the process wrote, within
/// 1 % (the test harness's own output is in the process's figure too).
fn check_against_the_process(s: &Stats, wchar: u64) {
    let kinds = s.bytes_written_journal + s.bytes_written_flushes + s.bytes_written_merges + s.bytes_written_other;
    assert_eq!(s.bytes_written, kinds, "{s:?}");
    let margin = wchar / 100;
    assert!(
        s.bytes_written <= wchar && wchar - s.bytes_written <= margin,
        "the engine counted {} bytes written, the process wrote {wchar}",
        s.bytes_written
    );
}

#[test]
fn a_bulk_load_in_key_order_into_an_empty_table_writes_each_byte_at_most_twice() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let docs = documents(60_000);
    let loaded: u64 = docs.iter().map(|d| d.len() as u64).sum();
    let (s, wchar) = load(&docs, |_| true);
    eprintln!(
        "in key order: {loaded} bytes loaded; journal {} flushes {} merges {} other {}: {:.3} per byte loaded",
        s.bytes_written_journal,
        s.bytes_written_flushes,
        s.bytes_written_merges,
        s.bytes_written_other,
        s.bytes_written_per_byte_loaded
    );
    assert_eq!(s.bytes_loaded, loaded);
    assert_eq!(s.groups_compressed, 0, "the journal is written uncompressed here: {s:?}");
    check_against_the_process(&s, wchar);
    // Enough checkpoints that a merge would have been due several times over.
    assert!(s.checkpoints >= 8 && s.runs >= 8, "{s:?}");
    // Runs in ascending, disjoint key ranges are one sorted run: nothing to merge.
    assert_eq!((s.merges, s.bytes_written_merges), (0, 0), "{s:?}");
    let per_byte = (s.bytes_written_journal + s.bytes_written_flushes + s.bytes_written_merges) as f64 / loaded as f64;
    assert!((per_byte - s.bytes_written_per_byte_loaded).abs() < 1e-9, "{s:?}");
    assert!(per_byte <= 2.0, "{per_byte:.3} bytes written per byte loaded: {s:?}");
}

#[test]
fn runs_in_key_order_stay_unmerged_after_a_reopen() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let docs = documents(40_000);
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), options()).unwrap();
    create(&db, "t");
    insert_all(&db, &docs[..30_000]);
    db.close().unwrap();
    let first = db.stats();
    assert!(first.runs >= 4 && first.merges == 0, "{first:?}");
    // The open reads each run's key range from its file: the runs are still one sorted run, and
    // the load goes on in key order without a merge.
    let db = Database::open(dir.path(), options()).unwrap();
    insert_all(&db, &docs[30_000..]);
    db.close().unwrap();
    let s = db.stats();
    assert!(s.checkpoints >= 1, "{s:?}");
    assert_eq!((s.merges, s.bytes_written_merges), (0, 0), "{s:?}");
}

#[test]
fn a_load_in_random_key_order_merges_and_its_counters_match_the_process() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut docs = documents(60_000);
    docs.shuffle(&mut StdRng::seed_from_u64(32));
    let loaded: u64 = docs.iter().map(|d| d.len() as u64).sum();
    // Overlapping runs do merge: wait for one before closing.
    let (s, wchar) = load(&docs, |s| s.merges >= 1);
    eprintln!(
        "random order: {loaded} bytes loaded; journal {} flushes {} merges {} other {}: {:.3} per byte loaded",
        s.bytes_written_journal,
        s.bytes_written_flushes,
        s.bytes_written_merges,
        s.bytes_written_other,
        s.bytes_written_per_byte_loaded
    );
    assert_eq!(s.bytes_loaded, loaded);
    check_against_the_process(&s, wchar);
    assert!(s.merges >= 1 && s.bytes_written_merges > 0, "{s:?}");
}
