//! Creating a database is atomic: a creation that fails (a full disk, an I/O error) or is cut by
//! a crash leaves a directory the next open finishes cleanly, never one that can't be opened.
//! A damaged manifest of a database that was created is still refused, never wiped.

mod support;

use std::sync::Arc;
use support::*;
use wharf_engine::io::{CrashMode, SimVfs};
use wharf_engine::{Durability, ErrorCode};

/// Calls that change the disk while a database is created (until `open` returns).
fn creation_calls() -> i64 {
    let vfs = SimVfs::new();
    let db = open(&vfs, small_options()).unwrap();
    let n = vfs.io_calls() as i64;
    db.close().unwrap();
    assert!(n >= 6, "a creation makes {n} disk calls");
    n
}

fn no_empty_journal_files(vfs: &SimVfs, context: &str) {
    for (name, len) in vfs.files() {
        assert!(!(name.starts_with("journal-") && len == 0), "{context}: {name} is empty: {:?}", vfs.files());
    }
}

/// After the failed creation, the disk frees up (and maybe the power goes): the next open creates
/// the database, and it holds what is written to it.
fn reopen_and_use(vfs: &Arc<SimVfs>, context: &str) {
    let db = open(vfs, small_options()).unwrap_or_else(|e| panic!("{context}: reopen failed: {e}"));
    no_empty_journal_files(vfs, context);
    create(&db, "t");
    insert(&db, "t", &doc(7, 100), Durability::Hard).unwrap();
    std::mem::forget(db);
    let db = open(&vfs.crash(CrashMode::DropUnsynced), small_options()).unwrap();
    assert_eq!(get(&db, "t", 7), Some(doc(7, 100)), "{context}");
    db.close().unwrap();
}

#[test]
fn enospc_or_eio_at_every_disk_call_of_creation_leaves_a_database_that_opens() {
    let calls = creation_calls();
    let mut cases = 0;
    for errno in [libc::ENOSPC, libc::EIO] {
        for sticky in [true, false] {
            for n in 1..=calls {
                let context = format!("errno {errno}, sticky {sticky}, disk call {n} of {calls}");
                let vfs = SimVfs::new();
                vfs.fail_io_after(n, errno, sticky);
                let err = match open(&vfs, small_options()) {
                    Ok(db) => {
                        // A non-sticky fault in a call whose failure creation survives (none
                        // today), or past creation: still a working database.
                        db.close().ok();
                        continue;
                    }
                    Err(e) => e,
                };
                let expected = std::io::Error::from_raw_os_error(errno).to_string();
                assert!(err.message.contains(&expected), "{context}: {err}");
                no_empty_journal_files(&vfs, &context);
                vfs.clear_faults();
                // The same directory, the disk free again; or a power cut first, in three ways.
                reopen_and_use(&vfs, &context);
                for (i, mode) in [CrashMode::DropUnsynced, CrashMode::KeepUnsynced, CrashMode::Torn(n as u64)]
                    .into_iter()
                    .enumerate()
                {
                    let vfs2 = SimVfs::new();
                    vfs2.fail_io_after(n, errno, sticky);
                    assert!(open(&vfs2, small_options()).is_err());
                    reopen_and_use(&vfs2.crash(mode), &format!("{context}, crash mode {i}"));
                }
                cases += 1;
            }
        }
    }
    // Every disk call of a creation matters: a failure in any one fails the open.
    assert_eq!(cases as i64, 4 * calls, "failing creations, for {calls} calls each");
}

#[test]
fn a_power_cut_at_any_point_of_creation_leaves_a_database_that_opens() {
    // Crash images of every prefix of a creation: fail the n-th call (nothing after it runs),
    // then cut the power.
    let calls = creation_calls();
    for n in 1..=calls + 1 {
        for seed in 0..8 {
            let vfs = SimVfs::new();
            vfs.fail_io_after(n, libc::EIO, true);
            let _ = open(&vfs, small_options()).map(std::mem::forget);
            reopen_and_use(&vfs.crash(CrashMode::Torn(seed * 7 + n as u64)), &format!("cut at call {n}, seed {seed}"));
        }
    }
}

#[test]
fn a_created_database_whose_manifest_is_damaged_is_refused_and_kept() {
    let vfs = SimVfs::new();
    let db = one_hard_write(&vfs);
    std::mem::forget(db);
    let vfs = vfs.crash(CrashMode::DropUnsynced);
    assert!(vfs.read_file("MANIFEST-0").is_none(), "only the creation's manifest so far");
    vfs.write_file("MANIFEST-1", Vec::new());
    let before = vfs.files();
    let err = open(&vfs, small_options()).err().expect("must be refused");
    assert_eq!(err.code, ErrorCode::CorruptCheckpoint, "{err}");
    assert!(err.message.contains("no manifest slot validates"), "{err}");
    assert_eq!(vfs.files(), before, "nothing removed or added");
}

#[test]
fn journal_files_without_a_manifest_or_a_creation_marker_are_refused_and_kept() {
    let vfs = SimVfs::new();
    let db = one_hard_write(&vfs);
    db.close().unwrap();
    for slot in ["MANIFEST-0", "MANIFEST-1"] {
        let _ = wharf_engine::io::Vfs::remove(&vfs, slot);
    }
    let before = vfs.files();
    let err = open(&vfs, small_options()).err().expect("must be refused");
    assert_eq!(err.code, ErrorCode::CorruptCheckpoint, "{err}");
    assert!(err.message.contains("but no manifest"), "{err}");
    assert_eq!(vfs.files(), before);
}
