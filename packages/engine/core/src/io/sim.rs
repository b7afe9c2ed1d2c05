//! A simulated directory for crash tests (after redb's crash-consistency backend).
//!
//! Each file has a *live* image (what reads see) and a *durable* image (what survives a crash),
//! plus the list of writes made since its last `sync_data`. [`SimVfs::crash`] returns the
//! directory as a power cut would leave it: durable images, plus — depending on [`CrashMode`] —
//! none, all, or a random torn subset of the unsynced writes (whole 512-byte sectors each).
//! Files whose creation was not made durable by `sync_dir` may vanish. Faults: fail the n-th
//! `sync_data` or the n-th `write_at` from now, or the n-th call of any kind that changes the
//! disk with a chosen OS error (ENOSPC, EIO), once or from then on.

use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use super::{Storage, Vfs};

const SECTOR: usize = 512;

#[derive(Default)]
struct SimFile {
    live: Vec<u8>,
    durable: Vec<u8>,
    /// Writes (and length changes, as `None` data) since the last sync, in order.
    unsynced: Vec<(u64, Option<Vec<u8>>, u64)>,
    name_durable: bool,
}

#[derive(Default)]
struct Dir {
    files: BTreeMap<String, Arc<Mutex<SimFile>>>,
    removed_unsynced: Vec<(String, Arc<Mutex<SimFile>>)>,
}

/// How unsynced writes fare in a crash.
#[derive(Debug, Clone, Copy)]
pub enum CrashMode {
    /// Only synced bytes survive.
    DropUnsynced,
    /// Every completed write survives (a process crash: the page cache lives on).
    KeepUnsynced,
    /// Each unsynced write survives whole, torn at a sector boundary, or not at all,
    /// chosen by this seed; a torn write keeps a random subset of its sectors.
    Torn(u64),
}

#[derive(Default)]
pub struct SimVfs {
    dir: Mutex<Dir>,
    /// Countdowns: the call that brings one to zero fails; negative means disarmed.
    fail_sync_in: AtomicI64,
    fail_write_in: AtomicI64,
    /// Countdown over every call that changes the disk (file writes, length changes, fdatasyncs,
    /// directory syncs, file creations); the call that brings it to zero fails with `fail_errno`,
    /// and with `fail_sticky` every later one too (a disk that stays full or broken).
    fail_io_in: AtomicI64,
    fail_errno: std::sync::atomic::AtomicI32,
    fail_sticky: AtomicBool,
    failing: AtomicBool,
    /// Calls that changed the disk so far (or tried to).
    io_calls: std::sync::atomic::AtomicU64,
    /// The calls a fault struck, as "fdatasync journal", "write run", "sync directory"…
    struck: Mutex<Vec<String>>,
    /// Like `flock`: one open database per directory.
    locked: AtomicBool,
}

struct SimStorage {
    name: String,
    file: Arc<Mutex<SimFile>>,
    vfs: Arc<SimVfs>,
}

fn tick(counter: &AtomicI64) -> bool {
    counter.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| if n > 0 { Some(n - 1) } else { None }) == Ok(1)
}

fn injected(what: &str) -> io::Error {
    io::Error::other(format!("injected {what} failure"))
}

impl SimVfs {
    /// Counts one call that changes the disk; an error if a fault armed with
    /// [`SimVfs::fail_io_after`] strikes it.
    fn disk_call(&self, call: &str, name: &str) -> io::Result<()> {
        let result = self.disk_call_result();
        if result.is_err() {
            let class = match name {
                n if n.starts_with("journal-") => "journal",
                n if n.starts_with("run-") => "run",
                n if n.starts_with("MANIFEST") => "manifest",
                "" => "directory",
                _ => "other",
            };
            self.struck.lock().unwrap().push(format!("{call} {class}"));
        }
        result
    }

    fn disk_call_result(&self) -> io::Result<()> {
        self.io_calls.fetch_add(1, Ordering::SeqCst);
        if tick(&self.fail_io_in) {
            self.failing.store(true, Ordering::SeqCst);
        } else if !(self.failing.load(Ordering::SeqCst) && self.fail_sticky.load(Ordering::SeqCst)) {
            return Ok(());
        }
        if !self.fail_sticky.load(Ordering::SeqCst) {
            self.failing.store(false, Ordering::SeqCst);
        }
        Err(io::Error::from_raw_os_error(self.fail_errno.load(Ordering::SeqCst)))
    }
}

impl Storage for SimStorage {
    fn len(&self) -> io::Result<u64> {
        Ok(self.file.lock().unwrap().live.len() as u64)
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let f = self.file.lock().unwrap();
        let start = offset as usize;
        let src = f
            .live
            .get(start..start + buf.len())
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "read past end of file"))?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn read_at_if_cached(&self, buf: &mut [u8], offset: u64) -> io::Result<bool> {
        self.read_at(buf, offset).map(|()| true)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        if tick(&self.vfs.fail_write_in) {
            return Err(injected("write"));
        }
        self.vfs.disk_call("write", &self.name)?;
        let mut f = self.file.lock().unwrap();
        let end = offset as usize + buf.len();
        if f.live.len() < end {
            f.live.resize(end, 0);
        }
        f.live[offset as usize..end].copy_from_slice(buf);
        let len = f.live.len() as u64;
        f.unsynced.push((offset, Some(buf.to_vec()), len));
        Ok(())
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.vfs.disk_call("set_len", &self.name)?;
        let mut f = self.file.lock().unwrap();
        f.live.resize(len as usize, 0);
        f.unsynced.push((0, None, len));
        Ok(())
    }
    fn sync_data(&self) -> io::Result<()> {
        if tick(&self.vfs.fail_sync_in) {
            return Err(injected("fdatasync"));
        }
        self.vfs.disk_call("fdatasync", &self.name)?;
        let mut f = self.file.lock().unwrap();
        f.durable = f.live.clone();
        f.unsynced.clear();
        Ok(())
    }
}

/// A tiny deterministic generator (xorshift), so crash images are reproducible from a seed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

impl SimVfs {
    pub fn new() -> Arc<SimVfs> {
        let vfs = SimVfs::default();
        vfs.fail_sync_in.store(-1, Ordering::SeqCst);
        vfs.fail_write_in.store(-1, Ordering::SeqCst);
        vfs.fail_io_in.store(-1, Ordering::SeqCst);
        Arc::new(vfs)
    }

    /// The `n`-th call from now (1 = the next) that changes the disk — a file write, length
    /// change, fdatasync, directory sync or file creation — fails with OS error `errno` (say
    /// `libc::ENOSPC` or `libc::EIO`); when `sticky`, every such call after it fails too, as on
    /// a disk that stays full, until [`SimVfs::clear_faults`].
    pub fn fail_io_after(&self, n: i64, errno: i32, sticky: bool) {
        self.fail_errno.store(errno, Ordering::SeqCst);
        self.fail_sticky.store(sticky, Ordering::SeqCst);
        self.failing.store(false, Ordering::SeqCst);
        self.fail_io_in.store(n, Ordering::SeqCst);
    }

    /// Disarms every fault (the disk has room again).
    pub fn clear_faults(&self) {
        self.fail_io_in.store(-1, Ordering::SeqCst);
        self.fail_sync_in.store(-1, Ordering::SeqCst);
        self.fail_write_in.store(-1, Ordering::SeqCst);
        self.failing.store(false, Ordering::SeqCst);
    }

    /// The calls faults struck so far, as "fdatasync journal", "write run", "sync directory"…
    pub fn struck(&self) -> Vec<String> {
        self.struck.lock().unwrap().clone()
    }

    /// Calls that changed the disk (or tried to) so far: to aim [`SimVfs::fail_io_after`].
    pub fn io_calls(&self) -> u64 {
        self.io_calls.load(Ordering::SeqCst)
    }

    /// Names and live lengths of every file, for tests that check what a failure left behind.
    pub fn files(&self) -> Vec<(String, u64)> {
        let dir = self.dir.lock().unwrap();
        dir.files.iter().map(|(n, f)| (n.clone(), f.lock().unwrap().live.len() as u64)).collect()
    }

    /// The `n`-th `sync_data` from now (1 = the next) fails.
    pub fn fail_sync_after(&self, n: i64) {
        self.fail_sync_in.store(n, Ordering::SeqCst);
    }

    /// The `n`-th `write_at` from now (1 = the next) fails.
    pub fn fail_write_after(&self, n: i64) {
        self.fail_write_in.store(n, Ordering::SeqCst);
    }

    /// The directory as a crash would leave it, as a new, fault-free `SimVfs`.
    pub fn crash(&self, mode: CrashMode) -> Arc<SimVfs> {
        let dir = self.dir.lock().unwrap();
        let mut rng = Rng(match mode {
            CrashMode::Torn(seed) => seed | 1,
            _ => 1,
        });
        let after = SimVfs::new();
        let mut out = after.dir.lock().unwrap();
        let resurrected = dir.removed_unsynced.iter().filter(|(n, _)| !dir.files.contains_key(n));
        let survivors = dir.files.iter().chain(resurrected.map(|(n, f)| (n, f)));
        for (name, file) in survivors {
            let f = file.lock().unwrap();
            let removed = !dir.files.contains_key(name);
            if !f.name_durable && !removed && !matches!(mode, CrashMode::KeepUnsynced) {
                // The directory entry never reached disk: the file may be gone.
                if matches!(mode, CrashMode::DropUnsynced) || rng.next().is_multiple_of(2) {
                    continue;
                }
            }
            let mut image = f.durable.clone();
            for (offset, data, len) in &f.unsynced {
                let keep = match mode {
                    CrashMode::DropUnsynced => 0,
                    CrashMode::KeepUnsynced => 2,
                    CrashMode::Torn(_) => rng.next() % 3,
                };
                match data {
                    None if keep > 0 => image.resize(*len as usize, 0),
                    None => {}
                    Some(bytes) => {
                        for (i, sector) in bytes.chunks(SECTOR).enumerate() {
                            if keep == 2 || (keep == 1 && rng.next().is_multiple_of(2)) {
                                let at = *offset as usize + i * SECTOR;
                                if image.len() < at + sector.len() {
                                    image.resize(at + sector.len(), 0);
                                }
                                image[at..at + sector.len()].copy_from_slice(sector);
                            }
                        }
                    }
                }
            }
            let restored = SimFile { live: image.clone(), durable: image, unsynced: Vec::new(), name_durable: true };
            out.files.insert(name.clone(), Arc::new(Mutex::new(restored)));
        }
        drop(out);
        after
    }

    /// Live bytes of a file, for tests that damage or inspect the journal.
    pub fn read_file(&self, name: &str) -> Option<Vec<u8>> {
        let dir = self.dir.lock().unwrap();
        dir.files.get(name).map(|f| f.lock().unwrap().live.clone())
    }

    /// Replaces a file's bytes (live and durable), for corruption tests.
    pub fn write_file(&self, name: &str, bytes: Vec<u8>) {
        let mut dir = self.dir.lock().unwrap();
        let file = SimFile { live: bytes.clone(), durable: bytes, unsynced: Vec::new(), name_durable: true };
        dir.files.insert(name.to_string(), Arc::new(Mutex::new(file)));
    }
}

impl Vfs for Arc<SimVfs> {
    fn open(&self, name: &str, create: bool) -> io::Result<Arc<dyn Storage>> {
        if create && !self.dir.lock().unwrap().files.contains_key(name) {
            self.disk_call("create", name)?;
        }
        let mut dir = self.dir.lock().unwrap();
        let file = match dir.files.get(name) {
            Some(f) => f.clone(),
            None if create => {
                let f = Arc::new(Mutex::new(SimFile::default()));
                dir.files.insert(name.to_string(), f.clone());
                f
            }
            None => return Err(io::Error::new(io::ErrorKind::NotFound, format!("{name}: no such file"))),
        };
        Ok(Arc::new(SimStorage { name: name.to_string(), file, vfs: self.clone() }))
    }
    fn list(&self) -> io::Result<Vec<String>> {
        Ok(self.dir.lock().unwrap().files.keys().cloned().collect())
    }
    fn remove(&self, name: &str) -> io::Result<()> {
        let mut dir = self.dir.lock().unwrap();
        let file = dir
            .files
            .remove(name)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("{name}: no such file")))?;
        if file.lock().unwrap().name_durable {
            dir.removed_unsynced.push((name.to_string(), file));
        }
        Ok(())
    }
    fn lock(&self) -> io::Result<()> {
        if self.locked.swap(true, Ordering::SeqCst) {
            return Err(io::Error::new(io::ErrorKind::WouldBlock, "the simulated directory is already open"));
        }
        Ok(())
    }
    fn unlock(&self) {
        self.locked.store(false, Ordering::SeqCst);
    }
    fn sync_dir(&self) -> io::Result<()> {
        self.disk_call("sync", "")?;
        let mut dir = self.dir.lock().unwrap();
        for f in dir.files.values() {
            f.lock().unwrap().name_durable = true;
        }
        dir.removed_unsynced.clear();
        Ok(())
    }
}
