//! The one seam between the engine and the disk.
//!
//! Every byte the engine reads or writes goes through [`Storage`] (one file) and [`Vfs`] (one
//! directory). [`FileVfs`] is the real thing; [`SimVfs`] keeps every file's *live* and *durable*
//! images apart so tests can crash it at any point, tear unsynced writes and fail fsyncs.

mod file;
mod sim;

pub use file::FileVfs;
pub use sim::{CrashMode, SimVfs};

use std::io;
use std::sync::Arc;

/// One file. Offsets are absolute; there is no cursor.
// A file's length is an I/O result, and nothing asks whether a file is empty.
#[allow(clippy::len_without_is_empty)]
pub trait Storage: Send + Sync {
    /// Current length in bytes.
    fn len(&self) -> io::Result<u64>;
    /// Fills `buf` from `offset`; an error if the file ends first.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Like `read_at`, but only if no disk wait is needed (the bytes are in the OS page cache):
    /// `Ok(false)` when it would have to wait, or cannot tell. Lets a point read be answered
    /// on the caller's thread. The default never reads.
    fn read_at_if_cached(&self, _buf: &mut [u8], _offset: u64) -> io::Result<bool> {
        Ok(false)
    }
    /// Writes all of `buf` at `offset`, growing the file if needed (not durable until `sync_data`).
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// Truncates or zero-extends the file.
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// Makes every completed write durable (`fdatasync`). After an error nothing is promised:
    /// the caller must stop, never retry and claim durability.
    fn sync_data(&self) -> io::Result<()>;
    /// Starts writing `len` bytes from `offset` back to disk without waiting or promising
    /// anything (`sync_file_range(SYNC_FILE_RANGE_WRITE)`), so that a later `sync_data` has
    /// little left to do. A hint: the default does nothing.
    fn start_writeback(&self, _offset: u64, _len: u64) {}
    /// Tells the OS not to read ahead of this file's reads (`posix_fadvise(RANDOM)` on this
    /// handle): the engine chooses its read sizes itself. A hint: the default does nothing.
    fn no_readahead(&self) {}
}

/// One directory of files.
pub trait Vfs: Send + Sync {
    /// Opens a file, creating it (empty) when `create` is set and it does not exist.
    /// A created file's name is durable only after [`Vfs::sync_dir`].
    fn open(&self, name: &str, create: bool) -> io::Result<Arc<dyn Storage>>;
    /// Names of the files in the directory.
    fn list(&self) -> io::Result<Vec<String>>;
    fn remove(&self, name: &str) -> io::Result<()>;
    /// Makes creations and removals durable (fsync on the directory).
    fn sync_dir(&self) -> io::Result<()>;
    /// Takes the directory for this process; an error if another one holds it.
    fn lock(&self) -> io::Result<()> {
        Ok(())
    }
    /// Releases what [`Vfs::lock`] took (at close).
    fn unlock(&self) {}
}
