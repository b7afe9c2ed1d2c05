//! Shared helpers for the integration tests: databases on a simulated disk, small segments.
#![allow(dead_code)]

pub mod campaign;

use std::sync::Arc;
use std::time::Duration;

use wharf_engine::io::{SimVfs, Vfs};
use wharf_engine::{
    wait, Conflict, Database, DocFormat, Durability, Key, Options, PreparedDocs, WriteOptions, WriteResult,
};

/// Small segments and checkpoints so a few hundred writes rotate, checkpoint and recycle.
pub fn small_options() -> Options {
    Options {
        segment_size: Some(64 << 10),
        checkpoint_bytes: 96 << 10,
        flush_interval: Duration::from_secs(3600),
        recycle_segments: 2,
        merge_fan_in: 2,
        memory_budget: 4 << 20,
        ..Options::default()
    }
}

pub fn open(vfs: &Arc<SimVfs>, options: Options) -> wharf_engine::Result<Database> {
    let dir: Arc<dyn Vfs> = Arc::new(vfs.clone());
    Database::open_with(dir, options)
}

pub fn create(db: &Database, table: &str) {
    wait(|done| db.create_table(table, "id", done)).unwrap();
}

pub fn doc(key: u64, size: usize) -> String {
    format!("{{\"id\":{key},\"pad\":\"{}\"}}", "x".repeat(size))
}

pub fn insert(db: &Database, table: &str, ndjson: &str, durability: Durability) -> wharf_engine::Result<WriteResult> {
    let docs = PreparedDocs::parse(ndjson.as_bytes(), DocFormat::Ndjson, "id").unwrap();
    wait(|done| {
        db.insert(table, docs, WriteOptions { durability, conflict: Conflict::Error, ..Default::default() }, done)
    })
}

/// A database on `vfs` with table `t` and one acknowledged hard write (key 1).
pub fn one_hard_write(vfs: &Arc<SimVfs>) -> Database {
    let db = open(vfs, small_options()).unwrap();
    create(&db, "t");
    insert(&db, "t", &doc(1, 10), Durability::Hard).unwrap();
    db
}

/// The bound of every wait for something that must happen: far above any normal wait, reached
/// only when it never comes (a bug). Tests assert no timing; this only ends an endless wait.
pub const NEVER: Duration = Duration::from_secs(30);

/// Polls `condition` until it holds; fails naming `what` if it still does not after [`NEVER`].
#[track_caller]
pub fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + NEVER;
    while !condition() {
        assert!(std::time::Instant::now() < deadline, "still waiting after {NEVER:?} for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

pub fn get(db: &Database, table: &str, key: u64) -> Option<String> {
    db.get(table, &Key::from(key as f64)).unwrap().map(|d| d.to_string())
}
