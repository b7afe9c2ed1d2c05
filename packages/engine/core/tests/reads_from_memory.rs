//! Point reads without a disk wait: `get_many_from_memory` answers from the memtables, the block
//! cache and the OS page cache, and gives up (rather than wait) when a block is only on disk.

mod support;

use std::fs::File;
use std::os::unix::io::AsRawFd;
use std::path::Path;

use support::*;
use wharf_engine::{Database, Durability, Key, Options};

fn load(dir: &Path, n: u64) {
    let db = Database::open(dir, Options::default()).unwrap();
    create(&db, "t");
    let lines: String = (0..n).map(|k| doc(k, 100) + "\n").collect();
    assert_eq!(insert(&db, "t", &lines, Durability::Hard).unwrap().inserted, n);
    // A clean close checkpoints: after reopening, every document is in a run file.
    db.close().unwrap();
}

/// Drops the run files' pages from the OS page cache (they are clean: written and synced).
fn evict_runs(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "wrun") {
            let file = File::open(&path).unwrap();
            // SAFETY: an fd we own; advice only.
            let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
            assert_eq!(rc, 0, "posix_fadvise on {}", path.display());
        }
    }
}

fn key(k: u64) -> Key {
    Key::from(k as f64)
}

#[test]
fn reads_from_memory_answer_cached_documents_and_refuse_to_wait_for_the_disk() {
    // On the real disk (not a tmpfs): the page cache must be able to drop the runs.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    load(dir.path(), 50_000);
    let db = Database::open(dir.path(), Options::default()).unwrap();
    assert!(db.stats().runs > 0, "the documents are in run files");

    // Just written, so in the page cache: answered without waiting, absent keys too.
    let got = db.get_many_from_memory("t", &[key(10), key(999_999)]).unwrap();
    let got = got.expect("run blocks in the page cache are read without waiting");
    assert!(got[0].as_deref().is_some_and(|d| d.contains("\"id\":10,")));
    assert_eq!(got[1], None);
    assert_eq!(db.stats().reads_from_memory, 1);

    // Out of the page cache: a block not in the block cache either is refused, not waited for…
    // (The page cache may keep a page the advice did not reach yet, e.g. on a machine busy
    // writing back other files, as a fresh CI clone just built is: try again a little later
    // with a key of another block, since a read that succeeds puts its block in the block cache.)
    let refused = (0..48u64).map(|i| 49_000 - i * 1000).find(|&k| {
        evict_runs(dir.path());
        let refused_now = db.get_many_from_memory("t", &[key(k)]).unwrap().is_none();
        if !refused_now {
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        refused_now
    });
    let k = refused.expect("a block out of every cache is not read without waiting");
    assert!(db.stats().reads_from_memory < 48, "refused reads are not counted");
    // … and the waiting read gets it (and puts its block in the block cache).
    assert!(db.get("t", &key(k)).unwrap().is_some_and(|d| d.contains(&format!("\"id\":{k},"))));
    let again = db.get_many_from_memory("t", &[key(k)]).unwrap();
    assert!(again.is_some_and(|d| d[0].is_some()), "now a block-cache hit");

    // A memtable hit needs no run at all.
    insert(&db, "t", &doc(7_000_000, 10), Durability::Soft).unwrap();
    evict_runs(dir.path());
    let fresh = db.get_many_from_memory("t", &[key(7_000_000)]).unwrap();
    assert!(fresh.is_some_and(|d| d[0].is_some()));
    db.close().unwrap();
}
