//! The real file system: positioned reads and writes, `fdatasync`, directory fsync, `flock`.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::{Storage, Vfs};

pub struct FileVfs {
    dir: PathBuf,
    lock_file: Mutex<Option<File>>,
}

impl FileVfs {
    /// Uses `dir`, creating it if needed.
    pub fn new(dir: impl Into<PathBuf>) -> io::Result<FileVfs> {
        let dir = dir.into();
        fs::create_dir_all(&dir)?;
        Ok(FileVfs { dir, lock_file: Mutex::new(None) })
    }
}

struct FileStorage(File);

impl Storage for FileStorage {
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.0.read_exact_at(buf, offset)
    }
    /// `preadv2(RWF_NOWAIT)` (Linux 4.14+): EAGAIN, or a short read, when the page cache does
    /// not hold it all; EOPNOTSUPP on file systems without it. Either way: not read here.
    #[cfg(target_os = "linux")]
    fn read_at_if_cached(&self, buf: &mut [u8], offset: u64) -> io::Result<bool> {
        let iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
        // SAFETY: one iovec over `buf`, valid and writable for its length; an fd we own.
        let n = unsafe { libc::preadv2(self.0.as_raw_fd(), &iov, 1, offset as i64, libc::RWF_NOWAIT) };
        if n >= 0 {
            return Ok(n as usize == buf.len());
        }
        match io::Error::last_os_error() {
            e if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EOPNOTSUPP | libc::EINVAL)) => Ok(false),
            e => Err(e),
        }
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.0.write_all_at(buf, offset)
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
    #[cfg(target_os = "linux")]
    fn start_writeback(&self, offset: u64, len: u64) {
        use std::os::fd::AsRawFd;
        unsafe {
            libc::sync_file_range(self.0.as_raw_fd(), offset as i64, len as i64, libc::SYNC_FILE_RANGE_WRITE);
        }
    }
    #[cfg(target_os = "linux")]
    fn no_readahead(&self) {
        // SAFETY: an fd we own; advice has no memory effects.
        unsafe {
            libc::posix_fadvise(self.0.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM);
        }
    }

    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }
}

impl Vfs for FileVfs {
    fn open(&self, name: &str, create: bool) -> io::Result<Arc<dyn Storage>> {
        let file = OpenOptions::new().read(true).write(true).create(create).open(self.dir.join(name))?;
        Ok(Arc::new(FileStorage(file)))
    }
    fn list(&self) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(&self.dir)? {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                names.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        Ok(names)
    }
    fn remove(&self, name: &str) -> io::Result<()> {
        fs::remove_file(self.dir.join(name))
    }
    fn sync_dir(&self) -> io::Result<()> {
        File::open(&self.dir)?.sync_all()
    }
    fn lock(&self) -> io::Result<()> {
        let file =
            OpenOptions::new().read(true).write(true).create(true).truncate(false).open(self.dir.join("LOCK"))?;
        // SAFETY: flock on a file descriptor we own; released when the file is dropped.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("{} is in use by another process", self.dir.display()),
            ));
        }
        *self.lock_file.lock().unwrap() = Some(file);
        Ok(())
    }
    fn unlock(&self) {
        self.lock_file.lock().unwrap().take();
    }
}
