//! The simulated power-loss campaign (`tests/support/campaign.rs`) at any size:
//!
//! ```sh
//! cargo run --release --example crash_campaign -- [CRASHES=1000000] [THREADS=cores] [FIRST_SEED=10000000]
//! ```
//!
//! Each run is one database through 10 power cuts; runs are spread over the threads. Prints the
//! figures every 10% and at the end; exits 1 (naming the seed) at the first violation.

#[path = "../tests/support/campaign.rs"]
mod campaign;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

const LIVES: u64 = 10;

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.replace('_', "").parse().expect("numbers: CRASHES THREADS FIRST_SEED"))
        .collect();
    let crashes = args.first().copied().unwrap_or(1_000_000);
    let threads =
        args.get(1).copied().unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get() as u64));
    let first_seed = args.get(2).copied().unwrap_or(10_000_000);
    let runs = crashes.div_ceil(LIVES);
    let next = Arc::new(AtomicU64::new(0));
    let total = Arc::new(Mutex::new(campaign::Figures::default()));
    let started = Instant::now();
    println!("crash campaign: {runs} runs of {LIVES} power cuts, seeds {first_seed}.., {threads} threads");
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (next, total) = (next.clone(), total.clone());
            std::thread::spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= runs {
                    return;
                }
                let mut figures = campaign::Figures::default();
                campaign::run(first_seed + i, LIVES as usize, &mut figures);
                let mut t = total.lock().unwrap();
                t.add(&figures);
                if (i + 1) % (runs / 10).max(1) == 0 {
                    println!("{:>5.0} s  {t}", started.elapsed().as_secs_f64());
                }
            })
        })
        .collect();
    let mut failed = false;
    for w in workers {
        failed |= w.join().is_err();
    }
    let t = total.lock().unwrap().clone();
    println!("crash campaign done in {:.0} s: {t}", started.elapsed().as_secs_f64());
    if failed || t.lost > 0 {
        eprintln!("crash campaign FAILED (the seed is in the panic message above)");
        std::process::exit(1);
    }
}
