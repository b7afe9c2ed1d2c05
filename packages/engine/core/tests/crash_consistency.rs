//! Power cuts at random points of a random workload, on the simulated disk.
//!
//! Guards against: losing an acknowledged hard write or anything before a completed `sync()`,
//! replaying a torn or stale record, and recovering anything but a prefix of the applied writes
//! (the journal is sequential, so the recovered state must be the first K writes for some K).

mod support;

use support::*;
use wharf_engine::io::CrashMode;
use wharf_engine::{wait, Durability};

/// Runs one workload; crashes after `steps`; returns (applied keys in order, keys durable).
fn workload(seed: u64, steps: usize, vfs: &std::sync::Arc<wharf_engine::io::SimVfs>) -> (Vec<u64>, usize) {
    let db = open(vfs, small_options()).unwrap();
    create(&db, "t");
    let mut rng = seed;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let (mut applied, mut durable) = (Vec::new(), 0);
    let mut key = seed * 1_000_000;
    for _ in 0..steps {
        let n = 1 + next() % 8;
        let batch: Vec<String> = (0..n).map(|i| doc(key + i, (next() % 700) as usize)).collect();
        let hard = next() % 3 == 0;
        let r = insert(&db, "t", &batch.join("\n"), if hard { Durability::Hard } else { Durability::Soft }).unwrap();
        assert_eq!(r.inserted, n);
        applied.extend(key..key + n);
        key += n;
        if hard {
            durable = applied.len();
        } else if next() % 10 == 0 {
            wait(|done| db.sync(done)).unwrap();
            durable = applied.len();
        }
    }
    // The crash: no close, the threads just stop mattering.
    std::mem::forget(db);
    (applied, durable)
}

#[test]
fn every_acknowledged_write_survives_power_cuts() {
    for seed in 1..=40u64 {
        let vfs = wharf_engine::io::SimVfs::new();
        let steps = 20 + (seed as usize * 37) % 200;
        let (applied, durable) = workload(seed, steps, &vfs);
        let mode = match seed % 3 {
            0 => CrashMode::DropUnsynced,
            1 => CrashMode::KeepUnsynced,
            _ => CrashMode::Torn(seed),
        };
        let after = vfs.crash(mode);
        let db = open(&after, small_options()).unwrap_or_else(|e| panic!("seed {seed}: reopen failed: {e}"));
        let present = db.count("t").unwrap() as usize;
        assert!(present >= durable, "seed {seed}: {present} documents recovered, {durable} were durable");
        for (i, key) in applied.iter().enumerate() {
            let got = get(&db, "t", *key);
            // A prefix: the first `present` writes, and none after.
            assert_eq!(got.is_some(), i < present, "seed {seed}: key {key} (write #{i}), {present} recovered");
            if let Some(text) = got {
                let v: serde_json::Value = serde_json::from_str(&text).unwrap();
                assert_eq!(v["id"], *key, "seed {seed}");
            }
        }
        db.close().unwrap();
    }
}

#[test]
fn reopening_repeatedly_keeps_everything_and_recycles_segments() {
    let mut vfs = wharf_engine::io::SimVfs::new();
    let mut written = 0u64;
    for round in 0..12 {
        let db = open(&vfs, small_options()).unwrap();
        if round == 0 {
            create(&db, "t");
        }
        let batch: Vec<String> = (written..written + 50).map(|k| doc(k, 900)).collect();
        insert(&db, "t", &batch.join("\n"), Durability::Soft).unwrap();
        written += 50;
        assert_eq!(db.count("t").unwrap(), written);
        if round % 2 == 0 {
            db.close().unwrap();
            vfs = vfs.crash(CrashMode::DropUnsynced); // a power cut after a clean close
        } else {
            wait(|done| db.sync(done)).unwrap();
            std::mem::forget(db); // a process crash after a sync
            vfs = vfs.crash(CrashMode::KeepUnsynced);
        }
    }
    let db = open(&vfs, small_options()).unwrap();
    assert_eq!(db.count("t").unwrap(), written);
    let files = vfs.read_file("MANIFEST-0").is_some() as usize + vfs.read_file("MANIFEST-1").is_some() as usize;
    assert_eq!(files, 2);
    db.close().unwrap();
}
