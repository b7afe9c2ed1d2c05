//! The physical reference for hard durability on this disk: N × (write 4 KiB + fdatasync).
//!
//! ```text
//! cargo run --release --example fsync_limit -- DIR [N] [--mode overwrite|append|both] [--block BYTES]
//! ```
//!
//! - `overwrite`: a file of N × block bytes is written through first (written, fsynced, its directory
//!   fsynced), so every timed fdatasync has only data to flush — no size or block-allocation
//!   metadata. Then each op overwrites the next block in place (offset i × block) and calls
//!   fdatasync. This is what a journal appending into a preallocated segment can at best achieve,
//!   and it is the reference of `packages/bench` (which has the same loop in Node for installs without cargo).
//! - `append`: a new empty file; each op writes one block at the end and calls fdatasync, which
//!   must also commit the new file size (a filesystem journal commit on ext4/xfs).
//!
//! Prints one JSON object on stdout (times in microseconds unless the name says otherwise). No
//! Node, no engine code: this is the floor the engine is compared with.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn usage() -> ! {
    eprintln!("usage: fsync_limit DIR [N=1000] [--mode overwrite|append|both] [--block BYTES=4096]");
    std::process::exit(2);
}

fn fdatasync(file: &File) {
    // SAFETY: a valid, open file descriptor.
    let rc = unsafe { libc::fdatasync(file.as_raw_fd()) };
    if rc != 0 {
        panic!("fdatasync failed: {}", std::io::Error::last_os_error());
    }
}

fn fsync_dir(dir: &Path) {
    File::open(dir).and_then(|d| d.sync_all()).expect("fsync of the directory");
}

struct OpTimes {
    write: Vec<Duration>,
    sync: Vec<Duration>,
    total: Duration,
    prepare: Duration,
}

fn fill(buf: &mut [u8], i: u64) {
    // Different bytes every op, so no layer can skip an identical write.
    buf[..8].copy_from_slice(&i.to_le_bytes());
    let last = buf.len() - 8;
    buf[last..].copy_from_slice(&(!i).to_le_bytes());
}

fn run_overwrite(dir: &Path, n: u64, block: usize) -> OpTimes {
    let path: PathBuf = dir.join(format!("fsync-limit-overwrite-{}.dat", std::process::id()));
    let prep = Instant::now();
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .expect("create the reference file");
    // Written through: real bytes on every block, then fsync (data + size + extents), then the
    // directory entry. After this an in-place overwrite needs no metadata update.
    let chunk = vec![0x5Au8; 1 << 20];
    let mut left = n as usize * block;
    while left > 0 {
        let len = left.min(chunk.len());
        file.write_all(&chunk[..len]).expect("preallocate");
        left -= len;
    }
    file.sync_all().expect("fsync after preallocation");
    fsync_dir(dir);
    let prepare = prep.elapsed();

    let mut buf = vec![0xA5u8; block];
    let mut write = Vec::with_capacity(n as usize);
    let mut sync = Vec::with_capacity(n as usize);
    let start = Instant::now();
    for i in 0..n {
        fill(&mut buf, i);
        let t0 = Instant::now();
        file.write_all_at(&buf, i * block as u64).expect("pwrite");
        let t1 = Instant::now();
        fdatasync(&file);
        let t2 = Instant::now();
        write.push(t1 - t0);
        sync.push(t2 - t1);
    }
    let total = start.elapsed();
    drop(file);
    let _ = fs::remove_file(&path);
    OpTimes { write, sync, total, prepare }
}

fn run_append(dir: &Path, n: u64, block: usize) -> OpTimes {
    let path: PathBuf = dir.join(format!("fsync-limit-append-{}.dat", std::process::id()));
    let prep = Instant::now();
    let mut file =
        OpenOptions::new().write(true).create(true).truncate(true).open(&path).expect("create the append file");
    file.sync_all().expect("fsync of the new file");
    fsync_dir(dir);
    let prepare = prep.elapsed();

    let mut buf = vec![0xA5u8; block];
    let mut write = Vec::with_capacity(n as usize);
    let mut sync = Vec::with_capacity(n as usize);
    let start = Instant::now();
    for i in 0..n {
        fill(&mut buf, i);
        let t0 = Instant::now();
        file.write_all(&buf).expect("write");
        let t1 = Instant::now();
        fdatasync(&file);
        let t2 = Instant::now();
        write.push(t1 - t0);
        sync.push(t2 - t1);
    }
    let total = start.elapsed();
    drop(file);
    let _ = fs::remove_file(&path);
    OpTimes { write, sync, total, prepare }
}

fn us(d: Duration) -> f64 {
    (d.as_nanos() as f64 / 1000.0 * 10.0).round() / 10.0
}

fn dist(samples: &[Duration]) -> serde_json::Value {
    let mut v: Vec<Duration> = samples.to_vec();
    v.sort();
    let n = v.len();
    let pct = |p: f64| -> f64 {
        if n == 0 {
            return 0.0;
        }
        let idx = ((p / 100.0) * (n as f64 - 1.0)).round() as usize;
        us(v[idx.min(n - 1)])
    };
    let mean = if n == 0 { 0.0 } else { us(v.iter().sum::<Duration>() / n as u32) };
    serde_json::json!({
        "min": pct(0.0), "median": pct(50.0), "mean": mean,
        "p90": pct(90.0), "p99": pct(99.0), "max": pct(100.0),
    })
}

fn report(t: &OpTimes, n: u64) -> serde_json::Value {
    let per_op: Vec<Duration> = t.write.iter().zip(&t.sync).map(|(a, b)| *a + *b).collect();
    let total_ms = t.total.as_secs_f64() * 1000.0;
    serde_json::json!({
        "ops": n,
        "total_ms": (total_ms * 1000.0).round() / 1000.0,
        "ops_per_s": ((n as f64) / t.total.as_secs_f64() * 10.0).round() / 10.0,
        "prepare_ms": (t.prepare.as_secs_f64() * 1e6).round() / 1000.0,
        "op_us": dist(&per_op),
        "write_us": dist(&t.write),
        "fdatasync_us": dist(&t.sync),
        "fdatasyncs": n,
    })
}

fn main() {
    let mut positional = Vec::new();
    let mut mode = String::from("both");
    let mut block: usize = 4096;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--mode" => mode = args.next().unwrap_or_else(|| usage()),
            "--block" => block = args.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| usage()),
            "-h" | "--help" => usage(),
            _ => positional.push(a),
        }
    }
    if positional.is_empty() || positional.len() > 2 || block < 16 {
        usage();
    }
    let dir = PathBuf::from(&positional[0]);
    let n: u64 = positional.get(1).map(|s| s.parse().unwrap_or_else(|_| usage())).unwrap_or(1000);
    fs::create_dir_all(&dir).expect("create DIR");
    let dir = dir.canonicalize().expect("canonicalize DIR");

    let mut results = serde_json::Map::new();
    if mode == "overwrite" || mode == "both" {
        results.insert("overwrite".into(), report(&run_overwrite(&dir, n, block), n));
    }
    if mode == "append" || mode == "both" {
        results.insert("append".into(), report(&run_append(&dir, n, block), n));
    }
    if results.is_empty() {
        usage();
    }
    let out = serde_json::json!({
        "tool": "fsync_limit",
        "dir": dir.display().to_string(),
        "n": n,
        "block": block,
        "results": results,
    });
    let stdout = std::io::stdout();
    let mut lock = stdout.lock();
    writeln!(lock, "{}", out).unwrap();
}
