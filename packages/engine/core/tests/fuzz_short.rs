//! The fuzz targets' short pass, on stable Rust: every target (`wharf_engine::fuzzing`, the
//! same bodies `fuzz/fuzz_targets/` runs under cargo-fuzz) over its seed corpus — the committed
//! `fuzz/corpus/<target>/` files, crash regressions included, and seeds written afresh by the
//! engine — then over a bounded number of mutations of those seeds from a fixed RNG seed.
//!
//! A failure names the target and saves the input under `target/tmp/`; an allocation beyond
//! `ALLOCATION_LIMIT` (what the formats bound, with room) aborts the run naming the target.
//!
//! `WHARF_FUZZ_SHORT_ITERATIONS` sets the mutations per target (default 1500);
//! `WHARF_FUZZ_WRITE_CORPUS=1` (re)writes the engine's seeds into `fuzz/corpus/` first.

use std::alloc::{GlobalAlloc, Layout, System};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering::Relaxed};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use wharf_engine::fuzzing::{seed_files, TARGETS};

/// The largest single allocation a target may make: a journal record's payload is at most
/// 16 MiB; nothing else a reader allocates should come near.
const ALLOCATION_LIMIT: usize = 64 << 20;

/// Which target runs (an index into `TARGETS`, +1; 0 outside targets), for the abort message.
static CURRENT_TARGET: AtomicUsize = AtomicUsize::new(0);
/// The input it runs on, saved to `OVERSIZED_INPUT` by an abort.
static CURRENT_INPUT: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static CURRENT_LEN: AtomicUsize = AtomicUsize::new(0);
const OVERSIZED_INPUT: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/fuzz-short-oversized.bin\0");

struct Limited;

unsafe impl GlobalAlloc for Limited {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > ALLOCATION_LIMIT {
            oversized(layout.size());
        }
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() > ALLOCATION_LIMIT {
            oversized(layout.size());
        }
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > ALLOCATION_LIMIT {
            oversized(new_size);
        }
        System.realloc(ptr, layout, new_size)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

/// Says which target asked for how much, without allocating, and aborts (an allocator must not
/// unwind).
fn oversized(size: usize) -> ! {
    let target = match CURRENT_TARGET.load(Relaxed) {
        0 => "outside any target",
        i => TARGETS[i - 1].0,
    };
    let mut msg = [0u8; 160];
    let mut w = &mut msg[..];
    let _ =
        std::io::Write::write_fmt(&mut w, format_args!("fuzz_short: target {target} allocated {size} bytes at once\n"));
    let len = 160 - w.len();
    unsafe {
        libc_write(2, msg.as_ptr(), len);
        let input = CURRENT_INPUT.load(Relaxed);
        if !input.is_null() {
            let fd = libc_open(OVERSIZED_INPUT.as_ptr(), 0o1101 /* O_WRONLY | O_CREAT | O_TRUNC */, 0o644);
            if fd >= 0 {
                libc_write(fd, input, CURRENT_LEN.load(Relaxed));
            }
            let saved = b"fuzz_short: the input is saved in target/tmp/fuzz-short-oversized.bin\n";
            libc_write(2, saved.as_ptr(), saved.len());
        }
    }
    std::process::abort();
}

extern "C" {
    #[link_name = "write"]
    fn libc_write(fd: i32, buf: *const u8, count: usize) -> isize;
    #[link_name = "open"]
    fn libc_open(path: *const u8, flags: i32, mode: u32) -> i32;
}

#[global_allocator]
static ALLOCATOR: Limited = Limited;

fn corpus_dir(target: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus").join(target)
}

/// The committed corpus of `target`, sorted by name.
fn committed(target: &str) -> Vec<(String, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir(corpus_dir(target)) else { return Vec::new() };
    let mut files: Vec<_> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
        .collect();
    files.sort();
    files
}

/// One mutation of the kinds cargo-fuzz makes: bit flips, interesting values, integers
/// overwritten, ranges cut, repeated or spliced in from another seed, a cut end.
fn mutate(rng: &mut StdRng, input: &mut Vec<u8>, other: &[u8]) {
    let len = input.len();
    match rng.gen_range(0..8) {
        0 if len > 0 => {
            let at = rng.gen_range(0..len);
            input[at] ^= 1 << rng.gen_range(0..8);
        }
        1 if len > 0 => {
            let at = rng.gen_range(0..len);
            input[at] = [0, 1, 0x7f, 0x80, 0xff, b'{', b'"', b'\n'][rng.gen_range(0..8)];
        }
        2 if len >= 8 => {
            let at = rng.gen_range(0..=len - 8);
            let v: u64 = [0, 1, u32::MAX as u64, u64::MAX, len as u64, rng.gen(), 1 << 31, 4096][rng.gen_range(0..8)];
            if rng.gen() {
                input[at..at + 8].copy_from_slice(&v.to_le_bytes());
            } else {
                input[at..at + 4].copy_from_slice(&(v as u32).to_le_bytes());
            }
        }
        3 if len > 0 => {
            let at = rng.gen_range(0..len);
            let n = rng.gen_range(1..=(len - at).min(64));
            input.drain(at..at + n);
        }
        4 if len > 0 => {
            let at = rng.gen_range(0..len);
            let n = rng.gen_range(1..=(len - at).min(64));
            let chunk = input[at..at + n].to_vec();
            let to = rng.gen_range(0..=len);
            input.splice(to..to, chunk);
        }
        5 if !other.is_empty() => {
            let at = rng.gen_range(0..other.len());
            let n = rng.gen_range(1..=(other.len() - at).min(256));
            let to = rng.gen_range(0..=len);
            input.splice(to..to, other[at..at + n].iter().copied());
        }
        6 if len > 0 => input.truncate(rng.gen_range(0..len)),
        _ => {
            let to = rng.gen_range(0..=len);
            let bytes: Vec<u8> = (0..rng.gen_range(1..16)).map(|_| rng.gen()).collect();
            input.splice(to..to, bytes);
        }
    }
}

/// Runs `body` on `input`; on a panic, saves the input and fails naming it.
fn check(target_index: usize, body: fn(&[u8]), input: &[u8], what: &str) {
    let (target, _) = TARGETS[target_index];
    CURRENT_TARGET.store(target_index + 1, Relaxed);
    CURRENT_INPUT.store(input.as_ptr() as *mut u8, Relaxed);
    CURRENT_LEN.store(input.len(), Relaxed);
    let result = catch_unwind(AssertUnwindSafe(|| body(input)));
    CURRENT_TARGET.store(0, Relaxed);
    CURRENT_INPUT.store(std::ptr::null_mut(), Relaxed);
    if let Err(panic) = result {
        let saved = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("fuzz-short-{target}.bin"));
        std::fs::write(&saved, input).unwrap();
        let message =
            panic.downcast_ref::<String>().cloned().or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()));
        panic!("target {target} panicked on {what} (saved as {}): {}", saved.display(), message.unwrap_or_default());
    }
}

#[test]
fn every_fuzz_target_survives_its_seeds_and_their_mutations() {
    let iterations: usize =
        std::env::var("WHARF_FUZZ_SHORT_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(1500);
    let fresh = seed_files();
    if std::env::var_os("WHARF_FUZZ_WRITE_CORPUS").is_some() {
        for (target, name, bytes) in &fresh {
            std::fs::create_dir_all(corpus_dir(target)).unwrap();
            std::fs::write(corpus_dir(target).join(format!("seed-{name}")), bytes).unwrap();
        }
    }
    for (i, (target, body)) in TARGETS.iter().enumerate() {
        let started = std::time::Instant::now();
        let mut seeds = committed(target);
        assert!(!seeds.is_empty(), "no committed corpus for target {target} in {}", corpus_dir(target).display());
        seeds.extend(
            fresh
                .iter()
                .filter(|(t, _, _)| t == target)
                .map(|(_, name, bytes)| (format!("fresh {name}"), bytes.clone())),
        );
        for (name, bytes) in &seeds {
            check(i, *body, bytes, &format!("seed {name}"));
        }
        let mut rng = StdRng::seed_from_u64(29 + i as u64);
        for n in 0..iterations {
            let (_, base) = &seeds[rng.gen_range(0..seeds.len())];
            let (_, other) = &seeds[rng.gen_range(0..seeds.len())];
            let mut input = base.clone();
            for _ in 0..rng.gen_range(1..=4) {
                mutate(&mut rng, &mut input, other);
            }
            check(i, *body, &input, &format!("mutation {n}"));
        }
        eprintln!("{target}: {} seeds, {iterations} mutations, {:.1} s", seeds.len(), started.elapsed().as_secs_f64());
    }
}
