//! The simulated power-loss campaign, as a model checker. Shared by `tests/power_loss_campaign.rs`
//! (a CI pass) and `examples/crash_campaign.rs` (any number of crashes).
//!
//! One *run* is one database on a [`SimVfs`] through several *lives*. A life opens the database
//! (with options drawn anew: segment size, checkpoint size, fan-in, recycling, memory), writes a
//! random mix — soft and hard upserts, soft and hard deletes, `sync()`, an index build — while
//! checkpoints, merges and segment recycling run in the background, and may have a fault armed:
//! ENOSPC or EIO, once or from then on, at the n-th call that changes the disk (a journal, run or
//! manifest write, an fdatasync, a directory sync, a file creation), database creation and
//! recovery included. The life ends in a power cut at whatever point the background threads
//! reached (unsynced writes dropped, kept, or torn sector by sector). The next open must
//! succeed, and then the model is checked:
//! - every key holds exactly a value it may hold: its value at the last durability point (a
//!   hard write acknowledged, or a `sync()` completed) or one written after it; a key whose
//!   durable value is missing or different is a *lost* acknowledged write;
//! - the table holds no other key, its count matches, and every index answers as the table does.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use wharf_engine::io::{CrashMode, SimVfs, Vfs};
use wharf_engine::{
    wait, Conflict, Database, DocFormat, Durability, ErrorCode, Key, KeyRange, Options, PreparedDocs, WriteOptions,
};

/// What a campaign did, to be quoted.
#[derive(Debug, Default, Clone)]
pub struct Figures {
    pub runs: u64,
    /// Power cuts simulated (each followed by a recovery and a full check).
    pub crashes: u64,
    /// Faults armed (ENOSPC or EIO), and opens they made fail (creation or recovery).
    pub faults_armed: u64,
    pub faults_struck: u64,
    pub failed_opens: u64,
    /// Writes acknowledged (hard, or soft before a completed sync) checked after a crash.
    pub acknowledged_checked: u64,
    /// Acknowledged writes missing or different after a crash. Must stay 0.
    pub lost: u64,
    /// Faults that struck, by call and file ("fdatasync journal", "write run", "sync directory"…).
    pub struck_calls: BTreeMap<String, u64>,
    /// Background work the lives did before their power cut (so the cuts met it).
    pub checkpoints: u64,
    pub merges: u64,
    pub segments_recycled: u64,
}

impl Figures {
    pub fn add(&mut self, o: &Figures) {
        self.runs += o.runs;
        self.crashes += o.crashes;
        self.faults_armed += o.faults_armed;
        self.faults_struck += o.faults_struck;
        self.failed_opens += o.failed_opens;
        self.acknowledged_checked += o.acknowledged_checked;
        self.lost += o.lost;
        self.checkpoints += o.checkpoints;
        self.merges += o.merges;
        self.segments_recycled += o.segments_recycled;
        for (call, n) in &o.struck_calls {
            *self.struck_calls.entry(call.clone()).or_default() += n;
        }
    }

    fn note_struck(&mut self, vfs: &SimVfs) {
        for call in vfs.struck() {
            *self.struck_calls.entry(call).or_default() += 1;
        }
    }
}

impl std::fmt::Display for Figures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "runs: {}, simulated crashes: {}, faults armed: {} (struck: {}, opens failed: {}), checkpoints: {}, merges: {}, \
             segments recycled: {}, acknowledged writes checked: {}, lost: {}",
            self.runs,
            self.crashes,
            self.faults_armed,
            self.faults_struck,
            self.failed_opens,
            self.checkpoints,
            self.merges,
            self.segments_recycled,
            self.acknowledged_checked,
            self.lost
        )?;
        let struck: Vec<String> = self.struck_calls.iter().map(|(call, n)| format!("{call} {n}")).collect();
        write!(f, "\n  faults struck, by call: {}", struck.join(", "))
    }
}

struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn percent(&mut self, p: u64) -> bool {
        self.below(100) < p
    }
}

/// One key's history since the last durability point.
#[derive(Default, Clone)]
struct KeyState {
    /// Its value at the last durability point (`None`: absent).
    durable: Option<String>,
    /// Whether `durable` was acknowledged by a write (not just "never written").
    acknowledged: bool,
    /// Values written since (acknowledged soft, or failed): each may or may not have survived.
    since: Vec<Option<String>>,
    /// What reads must show now.
    current: Option<String>,
}

#[derive(Default)]
struct Model {
    keys: BTreeMap<u64, KeyState>,
}

impl Model {
    fn wrote(&mut self, key: u64, value: Option<String>) {
        let k = self.keys.entry(key).or_default();
        k.since.push(value.clone());
        k.current = value;
    }
    /// A write that failed: it may or may not be on disk; reads are not checked after it.
    fn maybe(&mut self, key: u64, value: Option<String>) {
        self.keys.entry(key).or_default().since.push(value);
    }
    /// Everything written so far is durable (a hard write was acknowledged, or a sync completed).
    fn settle(&mut self) {
        for k in self.keys.values_mut() {
            if !k.since.is_empty() {
                k.durable = k.current.clone();
                k.acknowledged = true;
                k.since.clear();
            }
        }
    }
}

const KEYS: u64 = 120;
const INDEX_VALUES: u64 = 5;

fn doc(key: u64, version: u64, pad: usize) -> String {
    format!("{{\"id\":{key},\"n\":{},\"v\":{version},\"pad\":\"{}\"}}", version % INDEX_VALUES, "p".repeat(pad))
}

fn n_of(text: &str) -> u64 {
    let at = text.find("\"n\":").expect("n") + 4;
    text[at..].split(',').next().unwrap().parse().unwrap()
}

fn options(rng: &mut Rng) -> Options {
    Options {
        segment_size: Some([64 << 10, 128 << 10, 256 << 10][rng.below(3) as usize]),
        checkpoint_bytes: [48 << 10, 96 << 10, 256 << 10][rng.below(3) as usize],
        flush_interval: if rng.percent(20) { Duration::from_millis(2) } else { Duration::from_secs(3600) },
        recycle_segments: 1 + rng.below(3) as usize,
        memory_budget: 4 << 20,
        merge_fan_in: 2 + rng.below(2) as usize,
        group_commit_window: Duration::ZERO,
        ..Options::default()
    }
}

fn open(vfs: &Arc<SimVfs>, options: Options) -> wharf_engine::Result<Database> {
    Database::open_with(Arc::new(vfs.clone()) as Arc<dyn Vfs>, options)
}

fn arm_fault(rng: &mut Rng, vfs: &SimVfs, within: u64, figures: &mut Figures) {
    let errno = if rng.percent(50) { libc::ENOSPC } else { libc::EIO };
    vfs.fail_io_after(1 + rng.below(within) as i64, errno, rng.percent(60));
    figures.faults_armed += 1;
}

fn crash_mode(rng: &mut Rng) -> CrashMode {
    match rng.below(3) {
        0 => CrashMode::DropUnsynced,
        1 => CrashMode::KeepUnsynced,
        _ => CrashMode::Torn(rng.next()),
    }
}

/// Opens the database after a crash (a fault may make the open itself fail: then that is one
/// more crash, and the next attempt has no fault). Corruption is never acceptable. The flag
/// returned says a fault armed for the open struck anyway: a background thread the open
/// started (a checkpoint) met it after the open returned, and the database may be poisoned.
fn reopen(seed: u64, rng: &mut Rng, mut vfs: Arc<SimVfs>, figures: &mut Figures) -> (Database, Arc<SimVfs>, bool) {
    loop {
        let faulty = rng.percent(15);
        if faulty {
            arm_fault(rng, &vfs, 30, figures);
        }
        match open(&vfs, options(rng)) {
            Ok(db) => {
                vfs.clear_faults();
                let struck = !vfs.struck().is_empty();
                return (db, vfs, struck);
            }
            Err(e) => {
                assert!(faulty, "seed {seed}: open failed without a fault: {e}");
                assert!(
                    !matches!(e.code, ErrorCode::CorruptJournal | ErrorCode::CorruptCheckpoint),
                    "seed {seed}: a failed open reported corruption: {e}"
                );
                figures.faults_struck += 1;
                figures.failed_opens += 1;
                figures.note_struck(&vfs);
                vfs.clear_faults();
                vfs = vfs.crash(crash_mode(rng));
                figures.crashes += 1;
            }
        }
    }
}

fn upsert(db: &Database, docs: &[String], durability: Durability) -> wharf_engine::Result<()> {
    let parsed = PreparedDocs::parse(docs.join("\n").as_bytes(), DocFormat::Ndjson, "id").unwrap();
    let options = WriteOptions { durability, conflict: Conflict::Replace, wait_for_indexes: false };
    let r = wait(|done| db.insert("t", parsed, options, done))?;
    assert_eq!(r.errors, 0, "{r:?}");
    Ok(())
}

/// Checks the recovered database against the model; then the model starts from what is there.
fn check(seed: u64, life: usize, db: &Database, model: &mut Model, indexed: bool, figures: &mut Figures) {
    let rows = db
        .scan("t", &KeyRange::default(), None, false)
        .unwrap_or_else(|e| panic!("seed {seed} life {life}: scan: {e}"));
    let mut present = BTreeMap::new();
    for (key, text) in &rows {
        let Key::Num(k) = key else { panic!("seed {seed}: a key that was never written: {key:?}") };
        present.insert(*k as u64, text.to_string());
    }
    assert_eq!(db.count("t").unwrap(), rows.len() as u64, "seed {seed} life {life}: count ≠ scan");
    for k in present.keys() {
        assert!(model.keys.contains_key(k), "seed {seed} life {life}: key {k} was never written");
    }
    for (k, state) in model.keys.iter_mut() {
        let got = db.get("t", &Key::from(*k as f64)).unwrap();
        let got = got.map(|d| d.to_string());
        assert_eq!(got, present.get(k).cloned(), "seed {seed} life {life}: get and scan disagree on key {k}");
        if state.acknowledged {
            figures.acknowledged_checked += 1;
        }
        let allowed = got == state.durable || state.since.contains(&got);
        if !allowed {
            figures.lost += 1;
            panic!(
                "seed {seed} life {life}: key {k} holds {got:?}; durable value {:?}, later writes {:?}",
                state.durable, state.since
            );
        }
        *state = KeyState { durable: got.clone(), acknowledged: state.acknowledged, since: Vec::new(), current: got };
    }
    if indexed {
        db.index_wait("t", &[], Duration::from_secs(60)).unwrap_or_else(|e| panic!("seed {seed} life {life}: {e}"));
        for n in 0..INDEX_VALUES {
            let found: BTreeSet<String> = db
                .get_all("t", "n", &[serde_json::json!(n)], false)
                .unwrap()
                .into_iter()
                .map(|(_, d)| d.to_string())
                .collect();
            let expected: BTreeSet<String> = present.values().filter(|t| n_of(t) == n).cloned().collect();
            assert_eq!(found, expected, "seed {seed} life {life}: index n = {n} disagrees with the table");
        }
    }
}

/// One run: a database through `lives` power cuts. Panics, naming the seed, on any violation.
pub fn run(seed: u64, lives: usize, figures: &mut Figures) {
    let mut rng = Rng::new(seed);
    let mut model = Model::default();
    let mut version = 0u64;
    let mut vfs = SimVfs::new();
    // Creation, perhaps under a fault (then cut, and created again).
    let (mut db, v, mut struck_at_open) = reopen(seed, &mut rng, vfs, figures);
    vfs = v;
    let mut have_table = false;
    let mut indexed = false;
    figures.runs += 1;
    for life in 0..lives {
        if !have_table {
            wait(|done| db.create_table("t", "id", done)).unwrap_or_else(|e| panic!("seed {seed}: create_table: {e}"));
        }
        let fault = rng.percent(35);
        if fault {
            arm_fault(&mut rng, &vfs, 80, figures);
        }
        let ops = 10 + rng.below(60);
        let mut failed = false;
        for _ in 0..ops {
            let roll = rng.below(100);
            let result = if roll < 60 {
                // Upserts: a batch of 1–4 documents, soft or hard.
                let hard = rng.percent(30);
                let n = 1 + rng.below(4);
                let mut batch = Vec::new();
                let mut keys = BTreeSet::new();
                for _ in 0..n {
                    let k = rng.below(KEYS);
                    if keys.insert(k) {
                        version += 1;
                        batch.push((k, doc(k, version, rng.below(900) as usize)));
                    }
                }
                let texts: Vec<String> = batch.iter().map(|(_, t)| t.clone()).collect();
                let r = upsert(&db, &texts, if hard { Durability::Hard } else { Durability::Soft });
                for (k, t) in batch {
                    if r.is_ok() {
                        model.wrote(k, Some(t))
                    } else {
                        model.maybe(k, Some(t))
                    }
                }
                r.map(|()| {
                    if hard {
                        model.settle()
                    }
                })
            } else if roll < 75 {
                let hard = rng.percent(30);
                let k = rng.below(KEYS);
                let r = wait(|done| {
                    db.delete(
                        "t",
                        vec![Key::from(k as f64)],
                        if hard { Durability::Hard } else { Durability::Soft },
                        done,
                    )
                });
                if r.is_ok() {
                    model.wrote(k, None)
                } else {
                    model.maybe(k, None)
                }
                r.map(|_| {
                    if hard {
                        model.settle()
                    }
                })
            } else if roll < 85 {
                wait(|done| db.sync(done)).map(|()| model.settle())
            } else if roll < 88 && !indexed {
                let r = wait(|done| db.create_index("t", "n", "n", false, done));
                indexed |= r.is_ok();
                r
            } else {
                // A read sees the latest write.
                let k = rng.below(KEYS);
                let expected = model.keys.get(&k).and_then(|s| s.current.clone());
                let got = db.get("t", &Key::from(k as f64)).unwrap().map(|d| d.to_string());
                assert_eq!(got, expected, "seed {seed} life {life}: a read missed an acknowledged write to key {k}");
                Ok(())
            };
            if let Err(e) = result {
                assert!(fault || struck_at_open, "seed {seed} life {life}: a write failed without a fault: {e}");
                assert!(
                    matches!(e.code, ErrorCode::Io | ErrorCode::Poisoned),
                    "seed {seed} life {life}: a fault surfaced as {e}"
                );
                failed = true;
                break;
            }
        }
        if failed {
            figures.faults_struck += 1;
        }
        // The power cut, wherever the background threads are; then stop this life's threads
        // (what they do to the old directory no longer matters).
        let stats = db.stats();
        figures.checkpoints += stats.checkpoints;
        figures.merges += stats.merges;
        figures.segments_recycled += stats.segments_recycled;
        let image = vfs.crash(crash_mode(&mut rng));
        figures.note_struck(&vfs);
        vfs.clear_faults();
        let _ = db.close();
        figures.crashes += 1;
        let (next, v, struck) = reopen(seed, &mut rng, image, figures);
        db = next;
        vfs = v;
        struck_at_open = struck;
        // An index is rebuilt after a crash; one whose creation failed under a fault may be
        // there or not, like any write that failed.
        indexed = db.list_indexes("t").is_ok_and(|l| !l.is_empty());
        have_table = db.list_tables().iter().any(|t| t.name == "t");
        if have_table {
            check(seed, life, &db, &mut model, indexed, figures);
        } else {
            assert!(
                model.keys.values().all(|s| !s.acknowledged),
                "seed {seed} life {life}: the table is gone, with acknowledged writes in it"
            );
        }
    }
    let _ = db.close();
}
