//! Point-get latency while a bulk load runs, without Node: one thread loads ~150-byte documents
//! in soft batches of 500 (four in flight) at full speed for N seconds, with a memory budget far
//! below the data; another makes 200 gets per second of keys already acknowledged. Prints the
//! percentiles of both, and the pacing counters.
//! `cargo run --release --example read_during_load -- DIR [SECONDS] [BUDGET_MB]`

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use wharf_engine::{wait, Database, DocFormat, Durability, Key, Options, PreparedDocs, WriteOptions};

fn percentiles(mut v: Vec<Duration>) -> String {
    v.sort();
    let at = |q: f64| v[((v.len() as f64 * q) as usize).min(v.len() - 1)].as_secs_f64() * 1e3;
    format!("n={} p50={:.3} p99={:.3} p99.9={:.3} max={:.3} ms", v.len(), at(0.5), at(0.99), at(0.999), at(1.0))
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args.next().expect("usage: read_during_load DIR [SECONDS] [BUDGET_MB]");
    let seconds: u64 = args.next().map(|s| s.parse().unwrap()).unwrap_or(30);
    let budget: u64 = args.next().map(|s| s.parse().unwrap()).unwrap_or(64);
    let _ = std::fs::remove_dir_all(&dir);
    let db = Database::open(&dir, Options { memory_budget: budget << 20, ..Options::default() }).unwrap();
    wait(|done| db.create_table("t", "id", done)).unwrap();
    let acked = Arc::new(AtomicU64::new(0));

    let reader = {
        let (db, acked) = (db.clone(), acked.clone());
        std::thread::spawn(move || {
            let (mut lat, mut x) = (Vec::new(), 88172645463325252u64);
            let end = Instant::now() + Duration::from_secs(seconds);
            while Instant::now() < end {
                std::thread::sleep(Duration::from_millis(5));
                let n = acked.load(Relaxed);
                if n == 0 {
                    continue;
                }
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let started = Instant::now();
                let doc = db.get("t", &Key::from((x % n) as f64)).unwrap();
                lat.push(started.elapsed());
                assert!(doc.is_some());
            }
            lat
        })
    };

    let (tx, rx) = mpsc::channel::<(u64, Instant)>();
    let (mut next, mut inflight, mut lat) = (0u64, 0, Vec::new());
    let end = Instant::now() + Duration::from_secs(seconds);
    let mut done_upto = Vec::new();
    while Instant::now() < end {
        while inflight < 4 {
            let mut batch = Vec::with_capacity(500 * 160);
            for i in next..next + 500 {
                batch.extend_from_slice(format!("{{\"id\":{i},\"name\":\"user{i}\",\"email\":\"user{i}@example.com\",\"age\":{},\"city\":\"Springfield\",\"score\":{}.5}}\n", i % 90, i % 1000).as_bytes());
            }
            let docs = PreparedDocs::parse(&batch, DocFormat::Ndjson, "id").unwrap();
            let (tx, started, upto) = (tx.clone(), Instant::now(), next + 500);
            db.insert(
                "t",
                docs,
                WriteOptions { durability: Durability::Soft, ..Default::default() },
                Box::new(move |r| {
                    r.unwrap();
                    let _ = tx.send((upto, started));
                }),
            );
            next += 500;
            inflight += 1;
        }
        let (upto, started) = rx.recv().unwrap();
        lat.push(started.elapsed());
        inflight -= 1;
        done_upto.push(upto);
        // Keys below every batch still in flight are acknowledged.
        acked.store(done_upto.iter().copied().max().unwrap_or(0).saturating_sub(4 * 500), Relaxed);
    }
    let gets = reader.join().unwrap();
    wait(|done| db.sync(done)).unwrap();
    let s = db.stats();
    println!("{next} docs in {seconds} s = {:.0} docs/s", next as f64 / seconds as f64);
    println!("insert (batch of 500, sent → acknowledged): {}", percentiles(lat));
    println!("get during the load:                        {}", percentiles(gets));
    println!(
        "pacing: limit {} B/s, paced groups {} ({:.0} ms), write stops {}, stalls avoided {}; runs {}, merges {}, checkpoints {}",
        s.write_rate_limit_bps, s.paced_groups, s.pacing_delay_ms, s.write_stops, s.stalls_avoided, s.runs, s.merges, s.checkpoints
    );
    db.close().unwrap();
}
