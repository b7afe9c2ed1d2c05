//! The engine's bulk ceiling without Node: N documents of ~150 bytes as NDJSON batches, soft,
//! several batches in flight, then one sync. `cargo run --release --example bulk_load -- DIR [N]`

use std::sync::mpsc;
use std::time::Instant;

use wharf_engine::{wait, Database, DocFormat, Durability, Options, PreparedDocs, WriteOptions};

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args.next().expect("usage: bulk_load DIR [N]");
    let n: u64 = args.next().map(|s| s.parse().unwrap()).unwrap_or(1_000_000);
    let batch = 10_000u64;
    let _ = std::fs::remove_dir_all(&dir);
    let db = Database::open(&dir, Options::default()).unwrap();
    wait(|done| db.create_table("bulk", "id", done)).unwrap();

    let batches: Vec<Vec<u8>> = (0..n / batch)
        .map(|b| {
            let mut out = Vec::new();
            for i in b * batch..(b + 1) * batch {
                out.extend_from_slice(
                    format!("{{\"id\":{i},\"name\":\"user{i}\",\"email\":\"user{i}@example.com\",\"age\":{},\"city\":\"Springfield\",\"score\":{}.5}}\n", i % 90, i % 1000)
                        .as_bytes(),
                );
            }
            out
        })
        .collect();
    let bytes: usize = batches.iter().map(|b| b.len()).sum();

    let start = Instant::now();
    let mut parse_ns = 0u128;
    let (tx, rx) = mpsc::channel();
    let mut in_flight = 0;
    for b in &batches {
        let t = Instant::now();
        let docs = PreparedDocs::parse(b, DocFormat::Ndjson, "id").unwrap();
        parse_ns += t.elapsed().as_nanos();
        let tx = tx.clone();
        let opts = WriteOptions { durability: Durability::Soft, ..Default::default() };
        db.insert("bulk", docs, opts, Box::new(move |r| tx.send(r.unwrap().inserted).unwrap()));
        in_flight += 1;
        if in_flight >= 4 {
            rx.recv().unwrap();
            in_flight -= 1;
        }
    }
    for _ in 0..in_flight {
        rx.recv().unwrap();
    }
    let applied = start.elapsed();
    wait(|done| db.sync(done)).unwrap();
    let total = start.elapsed();
    println!(
        "{n} docs, {:.1} MB: applied in {:.3}s, synced at {:.3}s => {:.0} docs/s (parse on caller: {:.3}s)",
        bytes as f64 / 1e6,
        applied.as_secs_f64(),
        total.as_secs_f64(),
        n as f64 / total.as_secs_f64(),
        parse_ns as f64 / 1e9
    );
    println!("{:?}", db.stats());
    db.close().unwrap();
}
