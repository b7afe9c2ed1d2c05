//! Voron's figure from seed 001: sequential 8-byte keys with 8-byte values, written in large
//! transactions through the Rust core (no Node). Each transaction is one hard insert of BATCH
//! documents `{"k":"<8 hex>","v":"<8 hex>"}` (primary key `k`), parsed by the core's NDJSON path and
//! awaited before the next one, so every transaction is durable before the next starts.
//!
//! `cargo run --release --example kv -- DIR [N=100000000] [--batch 10000] [--inflight 1]`
//!
//! Prints one JSON line: puts, transactions, seconds, puts/s, fdatasyncs, journal bytes, and the
//! size of DIR at the end (after close).
use std::sync::mpsc;
use std::time::Instant;

use wharf_engine::{wait, Database, DocFormat, Durability, Options, PreparedDocs, WriteOptions};

fn dir_size(p: &std::path::Path) -> u64 {
    let mut total = 0;
    if let Ok(rd) = std::fs::read_dir(p) {
        for e in rd.flatten() {
            let md = match e.metadata() {
                Ok(m) => m,
                Err(_) => continue,
            };
            if md.is_dir() {
                total += dir_size(&e.path());
            } else {
                total += md.len();
            }
        }
    }
    total
}

fn main() {
    let mut dir: Option<String> = None;
    let mut n: u64 = 100_000_000;
    let mut batch: u64 = 10_000;
    let mut inflight: usize = 1;
    let mut args = std::env::args().skip(1);
    let mut positional = 0;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--batch" => batch = args.next().unwrap().parse().unwrap(),
            "--inflight" => inflight = args.next().unwrap().parse().unwrap(),
            _ => {
                if positional == 0 {
                    dir = Some(a);
                } else {
                    n = a.parse().unwrap();
                }
                positional += 1;
            }
        }
    }
    let dir = dir.expect("usage: kv DIR [N] [--batch 10000] [--inflight 1]");
    let _ = std::fs::remove_dir_all(&dir);
    let db = Database::open(&dir, Options::default()).unwrap();
    wait(|done| db.create_table("kv", "k", done)).unwrap();
    let s0 = db.stats();

    let (tx, rx) = mpsc::channel::<u64>();
    let mut in_flight = 0usize;
    let mut build_ns = 0u128;
    let mut line = Vec::with_capacity(32);
    let start = Instant::now();
    let mut i = 0u64;
    let mut txns = 0u64;
    while i < n {
        let end = (i + batch).min(n);
        let t = Instant::now();
        let mut buf = Vec::with_capacity(((end - i) * 30) as usize);
        for k in i..end {
            line.clear();
            // 8-byte key and 8-byte value: 8 hex digits each.
            line.extend_from_slice(
                format!("{{\"k\":\"{:08x}\",\"v\":\"{:08x}\"}}\n", k, k.wrapping_mul(2654435761) & 0xffff_ffff)
                    .as_bytes(),
            );
            buf.extend_from_slice(&line);
        }
        let docs = PreparedDocs::parse(&buf, DocFormat::Ndjson, "k").unwrap();
        build_ns += t.elapsed().as_nanos();
        let tx = tx.clone();
        let opts = WriteOptions { durability: Durability::Hard, ..Default::default() };
        let count = end - i;
        db.insert(
            "kv",
            docs,
            opts,
            Box::new(move |r| {
                let r = r.unwrap();
                assert_eq!(r.inserted, count, "inserted");
                tx.send(r.inserted).unwrap()
            }),
        );
        txns += 1;
        in_flight += 1;
        if in_flight >= inflight {
            rx.recv().unwrap();
            in_flight -= 1;
        }
        i = end;
    }
    for _ in 0..in_flight {
        rx.recv().unwrap();
    }
    let secs = start.elapsed().as_secs_f64();
    let s1 = db.stats();
    let c = Instant::now();
    db.close().unwrap();
    let close_s = c.elapsed().as_secs_f64();
    let size = dir_size(std::path::Path::new(&dir));
    println!(
        "{{\"tool\":\"kv\",\"puts\":{n},\"batch\":{batch},\"transactions\":{txns},\"inflight\":{inflight},\"seconds\":{secs:.4},\"puts_per_s\":{:.0},\"build_and_parse_s\":{:.4},\"fdatasyncs\":{},\"groups\":{},\"bytes_journaled\":{},\"checkpoints\":{},\"close_s\":{close_s:.3},\"dir_bytes\":{size}}}",
        n as f64 / secs,
        build_ns as f64 / 1e9,
        s1.fdatasyncs - s0.fdatasyncs,
        s1.groups - s0.groups,
        s1.bytes_journaled - s0.bytes_journaled,
        s1.checkpoints - s0.checkpoints,
    );
    let _ = std::fs::remove_dir_all(&dir);
}
