//! The committer's protocol (`docs/design/write-path.md`), driven step by step: a manual clock
//! and sync points decide when it moves, the simulated disk counts its fdatasyncs. No test here
//! depends on how fast anything runs; each wait is bounded only to fail instead of hanging.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use support::driven::*;
use support::*;
use wharf_engine::io::{CrashMode, SimVfs};
use wharf_engine::testing::SyncPoint;
use wharf_engine::{DocFormat, Durability, ErrorCode, Options, PreparedDocs, Stats, WriteOptions, WriteResult};

fn parse(ndjson: &str) -> PreparedDocs {
    PreparedDocs::parse(ndjson.as_bytes(), DocFormat::Ndjson, "id").unwrap()
}

fn docs(keys: std::ops::Range<u64>) -> PreparedDocs {
    parse(&keys.map(|k| doc(k, 10)).collect::<Vec<_>>().join("\n"))
}

fn with(durability: Durability) -> WriteOptions {
    WriteOptions { durability, ..WriteOptions::default() }
}

type Answer = std::sync::mpsc::Receiver<wharf_engine::Result<WriteResult>>;

fn insert_async(d: &Driven, key: u64, durability: Durability) -> Answer {
    let (done, rx) = to_channel();
    d.db.insert("t", parse(&doc(key, 10)), with(durability), done);
    rx
}

/// Creates table `t` through the held committer: one group.
fn create_t(d: &Driven) {
    let (done, rx) = to_channel();
    d.db.create_table("t", "id", done);
    d.gate.pass(SyncPoint::Idle);
    answer(&rx, "create_table").unwrap();
}

/// One group of `n` hard writes (keys from `first`), queued while the committer is held at
/// `Idle`: afterwards the committer expects a cohort of `n`.
fn cohort_of(d: &Driven, first: u64, n: u64) {
    let (done, rx) = to_channel();
    d.db.insert_each("t", docs(first..first + n), done, with(Durability::Hard));
    d.gate.pass(SyncPoint::Idle);
    let results = answer(&rx, "the cohort").unwrap();
    assert!(results.len() == n as usize && results.iter().all(|r| r.inserted == 1), "{results:?}");
}

/// Groups and fdatasyncs since `before`, with the stats now (for the assertion's message).
fn groups_and_fdatasyncs_since(d: &Driven, before: &Stats) -> ((u64, u64), Stats) {
    let after = d.db.stats();
    ((after.groups - before.groups, after.fdatasyncs - before.fdatasyncs), after)
}

fn close(d: Driven) {
    d.gate.release_all();
    d.db.close().unwrap();
}

fn visible(d: &Driven, key: u64) -> bool {
    get(&d.db, "t", key).is_some()
}

#[test]
fn writers_queued_behind_the_committer_share_one_group_and_one_fdatasync() {
    let vfs = SimVfs::new();
    let d = open_driven(&vfs, small_options());
    create_t(&d);
    let before = d.db.stats();
    // 16 threads each queue one hard write while the committer is held between groups.
    let answers: Vec<Answer> = (0..16u64)
        .map(|w| {
            let db = d.db.clone();
            std::thread::spawn(move || {
                let (done, rx) = to_channel();
                db.insert("t", parse(&doc(w, 10)), with(Durability::Hard), done);
                rx
            })
        })
        .map(|t| t.join().unwrap())
        .collect();
    d.gate.pass(SyncPoint::Idle);
    for rx in &answers {
        assert_eq!(answer(rx, "a hard insert").unwrap().inserted, 1);
    }
    let (counts, after) = groups_and_fdatasyncs_since(&d, &before);
    assert_eq!(counts, (1, 1), "{after:?}");
    assert_eq!(after.max_group_ops, 16);
    close(d);
}

/// After a group of 64 hard writes, their callers come back in four parts: the committer keeps
/// the next group open, applies each part as it arrives (visible, not yet answered) and commits
/// the four as one group with one fdatasync.
#[test]
fn a_cohort_arriving_in_parts_is_applied_as_it_arrives_and_committed_as_one_group() {
    let vfs = SimVfs::new();
    let d = open_driven(&vfs, small_options());
    create_t(&d);
    cohort_of(&d, 0, 64);
    d.gate.hold(SyncPoint::Gathering);
    let before = d.db.stats();
    let mut answers = Vec::new();
    for part in 0..4u64 {
        let first = 1000 + part * 16;
        let (done, rx) = to_channel();
        d.db.insert_each("t", docs(first..first + 16), done, with(Durability::Hard));
        answers.push(rx);
        // The first part opens the group; each later one is taken while it gathers.
        d.gate.pass(if part == 0 { SyncPoint::Idle } else { SyncPoint::Gathering });
        if part < 3 {
            d.gate.wait_held(SyncPoint::Gathering);
            assert!(visible(&d, first) && visible(&d, first + 15), "part {part} is applied while the rest is awaited");
            assert!(answers.iter().all(|rx| rx.try_recv().is_err()), "and not answered before its group's fdatasync");
        }
    }
    // The clock never moved: the group ended because the cohort was in, not by a deadline.
    for rx in &answers {
        let results = answer(rx, "a part").unwrap();
        assert!(results.len() == 16 && results.iter().all(|r| r.inserted == 1), "{results:?}");
    }
    let (counts, after) = groups_and_fdatasyncs_since(&d, &before);
    assert_eq!(counts, (1, 1), "{after:?}");
    close(d);
}

/// The parked committer is woken by the write that completes the cohort, not by each one before.
/// Here the whole rest arrives while it is parked: the group takes it in one more step.
#[test]
fn a_gathering_committer_takes_the_rest_of_the_cohort_when_it_is_all_queued() {
    let vfs = SimVfs::new();
    let d = open_driven(&vfs, small_options());
    create_t(&d);
    cohort_of(&d, 0, 8);
    d.gate.hold(SyncPoint::Gathering);
    let before = d.db.stats();
    let first = insert_async(&d, 100, Durability::Hard);
    d.gate.pass(SyncPoint::Idle);
    // Held with its deadline fixed; let it park, then send the other seven one by one.
    let parked = d.gate.reached(SyncPoint::Parking);
    d.gate.pass(SyncPoint::Gathering);
    d.gate.wait_reached(SyncPoint::Parking, parked);
    let rest: Vec<Answer> = (101..108).map(|k| insert_async(&d, k, Durability::Hard)).collect();
    for rx in std::iter::once(&first).chain(&rest) {
        assert_eq!(answer(rx, "a write of the cohort").unwrap().inserted, 1);
    }
    let (counts, after) = groups_and_fdatasyncs_since(&d, &before);
    assert_eq!(counts, (1, 1), "{after:?}");
    let seen = d.gate.take_seen();
    assert_eq!(seen.iter().filter(|p| **p == SyncPoint::Gathering).count(), 1, "one wait took all seven: {seen:?}");
    close(d);
}

/// A cohort that does not come back: the open group waits for the gap (an eighth of the window
/// here: the manual clock timed the fdatasync as zero), then commits what it has.
#[test]
fn a_gathering_group_commits_what_it_has_once_the_gap_passes() {
    let vfs = SimVfs::new();
    let window = Duration::from_millis(8);
    let d = open_driven(&vfs, Options { group_commit_window: window, ..small_options() });
    create_t(&d);
    cohort_of(&d, 0, 64);
    d.gate.hold(SyncPoint::Gathering);
    let before = d.db.stats();
    let lone = insert_async(&d, 100, Durability::Hard);
    d.gate.pass(SyncPoint::Idle);
    d.gate.pass(SyncPoint::Gathering);
    assert!(visible(&d, 100));
    assert!(lone.try_recv().is_err(), "the clock has not moved: the group is still open");
    d.clock.advance(window / 8);
    assert_eq!(answer(&lone, "the lone write").unwrap().inserted, 1);
    let (counts, after) = groups_and_fdatasyncs_since(&d, &before);
    assert_eq!(counts, (1, 1), "{after:?}");
    close(d);
}

#[test]
fn a_lone_writer_never_gathers() {
    let vfs = SimVfs::new();
    let d = open_driven(&vfs, small_options());
    create_t(&d);
    d.gate.release_all();
    d.gate.take_seen();
    let before = d.db.stats();
    for k in 0..20 {
        insert(&d.db, "t", &doc(k, 10), Durability::Hard).unwrap();
    }
    let (counts, after) = groups_and_fdatasyncs_since(&d, &before);
    assert_eq!(counts, (20, 20), "{after:?}");
    let seen = d.gate.take_seen();
    assert!(!seen.contains(&SyncPoint::Gathering), "{seen:?}");
    close(d);
}

/// The first failed fdatasync poisons: the group's soft writes were answered (visible) before
/// it, its hard writes get the failure, and every later request WHARF_ERR_POISONED. Every write
/// acknowledged as durable before is there after a power cut.
#[test]
fn a_failed_fdatasync_poisons_and_every_acknowledged_hard_write_survives() {
    let vfs = SimVfs::new();
    let d = open_driven(&vfs, small_options());
    create_t(&d);
    for k in 0..10 {
        let rx = insert_async(&d, k, Durability::Hard);
        d.gate.pass(SyncPoint::Idle);
        answer(&rx, "an acknowledged hard write").unwrap();
    }
    vfs.fail_sync_after(1);
    let hard: Vec<Answer> = (100..108).map(|k| insert_async(&d, k, Durability::Hard)).collect();
    let soft: Vec<Answer> = (200..204).map(|k| insert_async(&d, k, Durability::Soft)).collect();
    d.gate.pass(SyncPoint::Idle);
    for rx in &soft {
        assert_eq!(answer(rx, "a soft write").unwrap().inserted, 1, "answered when applied, before the fdatasync");
    }
    for rx in &hard {
        assert_eq!(answer(rx, "a hard write").unwrap_err().code, ErrorCode::Poisoned);
    }
    assert!(d.db.stats().poisoned);

    let later_hard = insert_async(&d, 300, Durability::Hard);
    let later_soft = insert_async(&d, 301, Durability::Soft);
    let (done, later_sync) = to_channel();
    d.db.sync(done);
    let (done, later_table) = to_channel();
    d.db.create_table("u", "id", done);
    d.gate.pass(SyncPoint::Idle);
    assert_eq!(answer(&later_hard, "a later hard write").unwrap_err().code, ErrorCode::Poisoned);
    assert_eq!(answer(&later_soft, "a later soft write").unwrap_err().code, ErrorCode::Poisoned);
    assert_eq!(answer(&later_sync, "a later sync").unwrap_err().code, ErrorCode::Poisoned);
    assert_eq!(answer(&later_table, "a later create_table").unwrap_err().code, ErrorCode::Poisoned);
    d.gate.release_all();
    assert_eq!(d.db.close().unwrap_err().code, ErrorCode::Poisoned);

    let db = open(&vfs.crash(CrashMode::DropUnsynced), small_options()).unwrap();
    for k in 0..10 {
        assert_eq!(get(&db, "t", k), Some(doc(k, 10)), "acknowledged hard write {k}");
    }
    db.close().unwrap();
}

/// Close while a group is at its fdatasync and more requests wait behind it: each request
/// accepted before the close is answered (the close commits them first), the close returns,
/// and a request after it fails at once with WHARF_ERR_CLOSED.
#[test]
fn close_answers_every_request_in_flight_or_queued() {
    let vfs = SimVfs::new();
    let d = open_driven(&vfs, small_options());
    create_t(&d);
    d.gate.hold(SyncPoint::Syncing);
    let in_flight: Vec<Answer> = (0..4).map(|k| insert_async(&d, k, Durability::Hard)).collect();
    d.gate.pass(SyncPoint::Idle);
    d.gate.wait_held(SyncPoint::Syncing);
    let mut queued: Vec<Answer> = (10..14).map(|k| insert_async(&d, k, Durability::Hard)).collect();
    queued.push(insert_async(&d, 14, Durability::Soft));
    let (done, sync) = to_channel();
    d.db.sync(done);
    let closer = {
        let db = d.db.clone();
        std::thread::spawn(move || db.close())
    };
    // Until the close is under way, a write is accepted (and must be answered like the rest).
    let started = std::time::Instant::now();
    let refused = loop {
        let rx = insert_async(&d, 100 + queued.len() as u64, Durability::Hard);
        match rx.try_recv() {
            Ok(r) => break r,
            Err(_) => queued.push(rx),
        }
        assert!(started.elapsed() < NEVER, "the close never began");
        std::thread::yield_now();
    };
    assert_eq!(refused.unwrap_err().code, ErrorCode::Closed);
    d.gate.release_all();
    for rx in in_flight.iter().chain(&queued) {
        assert_eq!(answer(rx, "a write accepted before the close").unwrap().inserted, 1);
    }
    answer(&sync, "a sync accepted before the close").unwrap();
    closer.join().unwrap().unwrap();
    assert_eq!(d.gate.take_seen().last(), Some(&SyncPoint::Closed));
    // Everything acknowledged is on disk after a clean close.
    let db = open(&vfs.crash(CrashMode::DropUnsynced), small_options()).unwrap();
    assert_eq!(db.count("t").unwrap(), (in_flight.len() + queued.len()) as u64);
    db.close().unwrap();
}

/// Acknowledgements follow submission order per caller, across groups; within a group the soft
/// ones come first (visible) and the hard ones after the fdatasync. While the committer is about
/// to write the group, every write of it is visible and no hard one is answered.
#[test]
fn acknowledgements_keep_each_callers_order_and_a_group_is_visible_before_it_is_written() {
    let vfs = SimVfs::new();
    // No gathering: the second group is smaller than the first.
    let d = open_driven(&vfs, Options { group_commit_window: Duration::ZERO, ..small_options() });
    create_t(&d);
    d.gate.hold(SyncPoint::Writing);
    let log = Arc::new(Mutex::new(Vec::new()));
    let submit = |caller: &'static str, key: u64, durability: Durability| {
        let log = log.clone();
        d.db.insert(
            "t",
            parse(&doc(key, 10)),
            with(durability),
            Box::new(move |r| {
                r.unwrap();
                log.lock().unwrap().push((caller, key));
            }),
        );
    };
    // Two callers interleave in one group: `hard` sends hard writes, `soft` soft ones.
    for i in 0..10 {
        submit("hard", i, Durability::Hard);
        submit("soft", 100 + i, Durability::Soft);
    }
    d.gate.pass(SyncPoint::Idle);
    d.gate.wait_held(SyncPoint::Writing);
    assert!((0..10).chain(100..110).all(|k| visible(&d, k)), "the whole group is visible");
    let soft_first: Vec<_> = (100..110).map(|k| ("soft", k)).collect();
    assert_eq!(*log.lock().unwrap(), soft_first, "soft answers, in order; no hard answer yet");
    d.gate.pass(SyncPoint::Writing);
    // A second group from the hard caller: its answers follow the first group's.
    for i in 10..15 {
        submit("hard", i, Durability::Hard);
    }
    d.gate.pass(SyncPoint::Idle);
    d.gate.pass(SyncPoint::Writing);
    let (done, synced) = to_channel();
    d.db.sync(done);
    d.gate.pass(SyncPoint::Idle);
    d.gate.pass(SyncPoint::Writing);
    answer(&synced, "sync").unwrap();
    let hard: Vec<u64> = log.lock().unwrap().iter().filter(|(c, _)| *c == "hard").map(|(_, k)| *k).collect();
    assert_eq!(hard, (0..15).collect::<Vec<_>>());
    close(d);
}

/// Soft writes are synced in the background once `flush_interval` has passed on the clock, and
/// not before: the manual clock stands still until the test moves it.
#[test]
fn soft_writes_are_flushed_once_the_flush_interval_passes() {
    let vfs = SimVfs::new();
    let interval = Duration::from_millis(200);
    let d = open_driven(&vfs, Options { flush_interval: interval, ..small_options() });
    create_t(&d);
    let rx = insert_async(&d, 1, Durability::Soft);
    d.gate.pass(SyncPoint::Idle);
    answer(&rx, "a soft write").unwrap();
    d.gate.wait_held(SyncPoint::Idle);
    let stats = d.db.stats();
    assert!(stats.durable_seq < stats.applied_seq, "not synced while the clock stands still: {stats:?}");
    d.gate.release_all();
    d.clock.advance(interval);
    wait_until("the background flush", || d.db.stats().durable_seq >= stats.applied_seq);
    assert_eq!(d.db.stats().fdatasyncs - stats.fdatasyncs, 1);
    close(d);
}
