//! Run files: a table's documents (and deletes) in key order, immutable once written.
//!
//! A checkpoint writes a table's frozen memtable as one run; a merge streams several runs into
//! one. A point read goes to the few runs whose key range and Bloom filter admit the key, then
//! binary-searches the run's block index (kept in memory) and reads one block, through the
//! block cache. Every block carries its own CRC32C, so a read never trusts damaged bytes.
//!
//! ```text
//! header   0  8  magic "WHARFRUN"
//!          8  4  format 3 (2 is read too: its blocks have no codec byte)
//!         12  4  table_id
//!         16  8  reserved (0)
//! blocks      codec u8 | payload, then CRC32C u32 of both. The payload is the block's entries
//!             (codec 0) or them LZ4-compressed, their length first as u32 (codec 1). A block
//!             ends after the entry that passes 16 KiB of entries.
//!             entry: 1 | key | doc_len u32 | doc   (put)    or    2 | key   (delete)
//! index       blocks u32, then per block: offset u64 | length u32 (as stored) | first key
//!             then the run's last key
//! bloom       see bloom.rs
//! footer  64  magic "WHARFEND" | index_offset u64 | index_length u64 | bloom_offset u64 |
//!             bloom_length u64 | entries u64 | deletes u64 | CRC32C u32 of index, bloom and the
//!             footer before it | 4 zero bytes
//! ```

use std::sync::Arc;

use crate::bloom::{Bloom, BloomBuilder};
use crate::cache::BlockCache;
use crate::checksum::crc32c;
use crate::doc::Doc;
use crate::error::{Error, Result};
use crate::io::{Storage, Vfs};
use crate::key::{cmp_encoded, encoded_len, Key};

const MAGIC: &[u8; 8] = b"WHARFRUN";
const END_MAGIC: &[u8; 8] = b"WHARFEND";
const FORMAT: u32 = 3;
/// The format before blocks had a codec byte; still read.
const FORMAT_UNCOMPRESSED: u32 = 2;
const RAW: u8 = 0;
const LZ4: u8 = 1;
const HEADER: usize = 24;
const FOOTER: usize = 64;
const BLOCK_TARGET: usize = 16 << 10;
/// The most a block's entries can take: up to `BLOCK_TARGET`, then one more entry, which holds
/// a document from one journal record.
const MAX_BLOCK: usize = BLOCK_TARGET + crate::record::MAX_RECORD_PAYLOAD;
/// The fewest bytes a block's index entry takes: offset, length and the shortest key.
const MIN_INDEX_ENTRY: usize = 12 + 3;
/// Bytes a run writer writes (and starts writing back) at once.
const WRITE_CHUNK: usize = 256 << 10;
/// Bytes of a block's index entry to reserve per block: offset, length and a short key.
const INDEX_ENTRY_GUESS: usize = 12 + 32;
const PUT: u8 = 1;
const DELETE: u8 = 2;

pub(crate) fn run_file_name(run_id: u64) -> String {
    format!("run-{run_id:08}.wrun")
}

pub(crate) fn is_run_file(name: &str) -> bool {
    name.starts_with("run-") && name.ends_with(".wrun")
}

fn run_id_of(name: &str) -> u64 {
    name.trim_start_matches("run-").trim_end_matches(".wrun").parse().unwrap_or(0)
}

/// Streams entries, in strictly increasing key order, into a new run file.
pub(crate) struct RunWriter {
    name: String,
    file: Arc<dyn Storage>,
    written: u64,
    out: Vec<u8>,
    block: Vec<u8>,
    block_first: Option<Key>,
    /// LZ4 blocks (see `create`); the compressed block is built in `packed`.
    compress: bool,
    packed: Vec<u8>,
    index: Vec<u8>,
    blocks: u32,
    last: Option<Key>,
    bloom: BloomBuilder,
    key_buf: Vec<u8>,
    entries: u64,
    entry_bytes: u64,
    deletes: u64,
}

impl RunWriter {
    /// `expected`: at most how many entries, and about how many bytes of blocks, the run will
    /// hold. The filter is sized for that many keys (more may be added, at a higher
    /// false-positive rate), and it and the block index are allocated once. Grown by doubling, a
    /// buffer of tens of MiB is copied by `realloc` while it holds its malloc arena's lock, so a
    /// merge thread at a low priority would hold up every thread allocating from that arena,
    /// Node's own included.
    ///
    /// `compress`: each block is stored LZ4-compressed when that makes it smaller.
    pub fn create(vfs: &dyn Vfs, name: &str, table_id: u32, expected: (u64, u64), compress: bool) -> Result<RunWriter> {
        let file = vfs.open(name, true).map_err(|e| Error::io(format!("creating run file {name}"), e))?;
        file.set_len(0).map_err(|e| Error::io(format!("creating run file {name}"), e))?;
        let mut out = Vec::with_capacity(WRITE_CHUNK);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT.to_le_bytes());
        out.extend_from_slice(&table_id.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes());
        Ok(RunWriter {
            name: name.to_string(),
            file,
            written: 0,
            out,
            block: Vec::with_capacity(BLOCK_TARGET * 2),
            block_first: None,
            compress,
            packed: Vec::new(),
            index: Vec::with_capacity((expected.1 as usize / BLOCK_TARGET + 1) * INDEX_ENTRY_GUESS),
            blocks: 0,
            last: None,
            bloom: BloomBuilder::with_capacity(expected.0 as usize + 1),
            key_buf: Vec::new(),
            entries: 0,
            entry_bytes: 0,
            deletes: 0,
        })
    }

    pub fn add(&mut self, key: &Key, doc: Option<&str>) -> Result<()> {
        debug_assert!(self.last.as_ref().is_none_or(|l| l < key), "run entries must be in increasing key order");
        self.key_buf.clear();
        key.encode(&mut self.key_buf);
        self.bloom.add(&self.key_buf);
        if self.block_first.is_none() {
            self.block_first = Some(key.clone());
        }
        match doc {
            Some(doc) => {
                self.block.push(PUT);
                self.block.extend_from_slice(&self.key_buf);
                self.block.extend_from_slice(&(doc.len() as u32).to_le_bytes());
                self.block.extend_from_slice(doc.as_bytes());
            }
            None => {
                self.block.push(DELETE);
                self.block.extend_from_slice(&self.key_buf);
                self.deletes += 1;
            }
        }
        self.entries += 1;
        self.entry_bytes += (1 + self.key_buf.len() + doc.map_or(0, |d| 4 + d.len())) as u64;
        self.last = Some(key.clone());
        if self.block.len() >= BLOCK_TARGET {
            self.end_block()?;
        }
        Ok(())
    }

    fn end_block(&mut self) -> Result<()> {
        let Some(first) = self.block_first.take() else { return Ok(()) };
        let offset = self.written + self.out.len() as u64;
        let codec = if self.compress && self.pack() { LZ4 } else { RAW };
        let stored = 1 + if codec == LZ4 { self.packed.len() } else { self.block.len() } + 4;
        if self.out.len() + stored > self.out.capacity() {
            self.flush_out()?; // rather than grow `out`
        }
        let payload = if codec == LZ4 { &self.packed } else { &self.block };
        let crc = crc32c::crc32c_append(crc32c(&[codec]), payload);
        self.out.push(codec);
        self.out.extend_from_slice(payload);
        self.out.extend_from_slice(&crc.to_le_bytes());
        self.index.extend_from_slice(&offset.to_le_bytes());
        self.index.extend_from_slice(&(stored as u32).to_le_bytes());
        first.encode(&mut self.index);
        self.blocks += 1;
        self.block.clear();
        Ok(())
    }

    /// Compresses the block into `packed`; false when that would not make it smaller.
    fn pack(&mut self) -> bool {
        let len = self.block.len();
        self.packed.resize(4 + lz4_flex::block::get_maximum_output_size(len), 0);
        self.packed[..4].copy_from_slice(&(len as u32).to_le_bytes());
        match lz4_flex::block::compress_into(&self.block, &mut self.packed[4..]) {
            Ok(n) if 4 + n < len => {
                self.packed.truncate(4 + n);
                true
            }
            _ => false,
        }
    }

    fn flush_out(&mut self) -> Result<()> {
        self.file
            .write_at(&self.out, self.written)
            .map_err(|e| Error::io(format!("writing run file {}", self.name), e))?;
        // Write back as we go (RocksDB's bytes_per_sync): one large flush at the final fdatasync
        // would make the filesystem's journal commit long, and every other writer wait behind it.
        self.file.start_writeback(self.written, self.out.len() as u64);
        self.written += self.out.len() as u64;
        self.out.clear();
        Ok(())
    }

    fn write_direct(&mut self, bytes: &[u8]) -> Result<()> {
        self.file.write_at(bytes, self.written).map_err(|e| Error::io(format!("writing run file {}", self.name), e))?;
        self.file.start_writeback(self.written, bytes.len() as u64);
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Bytes of entries added so far, as they are before compression: pacing measures how fast
    /// background work goes in the bytes that writes add.
    pub fn bytes(&self) -> u64 {
        self.entry_bytes
    }

    /// Bytes written to the file so far (what a writer dropped unfinished leaves behind).
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Writes the index, filter and footer and syncs the file; returns (entries, bytes).
    pub fn finish(mut self) -> Result<(u64, u64)> {
        self.end_block()?;
        let index_offset = self.written + self.out.len() as u64;
        let mut index = Vec::with_capacity(self.index.len() + 160);
        index.extend_from_slice(&self.blocks.to_le_bytes());
        index.extend_from_slice(&self.index);
        match &self.last {
            Some(last) => last.encode(&mut index),
            None => Key::from("").encode(&mut index),
        }
        let bloom = self.bloom.finish();
        let bloom_offset = index_offset + index.len() as u64;
        let mut footer = Vec::with_capacity(FOOTER);
        footer.extend_from_slice(END_MAGIC);
        for v in [index_offset, index.len() as u64, bloom_offset, bloom.len() as u64, self.entries, self.deletes] {
            footer.extend_from_slice(&v.to_le_bytes());
        }
        let crc = crc32c::crc32c_append(crc32c::crc32c_append(crc32c(&index), &bloom), &footer);
        footer.extend_from_slice(&crc.to_le_bytes());
        footer.resize(FOOTER, 0);
        // Written as they are rather than appended to `out`, which would grow to their size.
        for part in [&index[..], &bloom[..], &footer[..]] {
            if self.out.len() + part.len() > self.out.capacity() {
                self.flush_out()?;
                self.write_direct(part)?;
            } else {
                self.out.extend_from_slice(part);
            }
        }
        self.flush_out()?;
        self.file.sync_data().map_err(|e| Error::io(format!("syncing run file {}", self.name), e))?;
        Ok((self.entries, self.written))
    }
}

/// How a read gets a block that is not in the block cache.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Fetch {
    /// From the file, waiting on the disk if need be.
    Wait,
    /// Only if the OS page cache holds it: a read that would wait on the disk gives up.
    IfCached,
}

/// What a point read found in one run (or in a table's runs).
#[derive(Debug, PartialEq)]
pub(crate) enum Probe {
    Absent,
    /// The newest entry: a document, or `None` for a delete.
    Entry(Option<Doc>),
    /// Reading on would wait on the disk (only with `Fetch::IfCached`).
    NotInMemory,
}

impl Probe {
    /// The document of a read that was allowed to wait.
    pub fn into_doc(self) -> Option<Doc> {
        match self {
            Probe::Entry(doc) => doc,
            Probe::Absent | Probe::NotInMemory => None,
        }
    }
}

/// An open run: its block index, key range and filter in memory, its blocks on disk.
pub(crate) struct Run {
    pub name: String,
    pub id: u64,
    file: Arc<dyn Storage>,
    /// (offset, length) of each block, and each block's first key.
    blocks: Vec<(u64, u32)>,
    first_keys: Vec<Key>,
    last_key: Key,
    bloom: Bloom,
    /// Blocks start with a codec byte (format 3).
    codecs: bool,
    /// Entries (documents and deletes), from the footer.
    pub entries: u64,
    pub bytes: u64,
}

fn damaged(name: &str, what: impl std::fmt::Display) -> Error {
    Error::corrupt_checkpoint(format!("run file {name} is damaged: {what}"))
}

impl Run {
    pub fn open(vfs: &dyn Vfs, name: &str) -> Result<Run> {
        let io = |e| Error::io(format!("opening run file {name}"), e);
        let file = vfs.open(name, false).map_err(io)?;
        file.no_readahead(); // point reads take one block; iterations read windows (`RunIter`)
        let len = file.len().map_err(io)?;
        if len < (HEADER + FOOTER) as u64 {
            return Err(damaged(name, "too short"));
        }
        let mut header = [0u8; HEADER];
        file.read_at(&mut header, 0).map_err(io)?;
        let format = u32::from_le_bytes(header[8..12].try_into().unwrap());
        if &header[..8] != MAGIC || !(format == FORMAT || format == FORMAT_UNCOMPRESSED) {
            return Err(damaged(name, "bad header (not a format-2 or format-3 run file)"));
        }
        let mut footer = [0u8; FOOTER];
        file.read_at(&mut footer, len - FOOTER as u64).map_err(io)?;
        if &footer[..8] != END_MAGIC {
            return Err(damaged(name, "bad footer"));
        }
        let field = |i: usize| u64::from_le_bytes(footer[8 + 8 * i..16 + 8 * i].try_into().unwrap());
        let (index_offset, index_len, bloom_offset, bloom_len) = (field(0), field(1), field(2), field(3));
        // Checked sums: offsets that wrap around could otherwise add up.
        let adds_up = index_offset >= HEADER as u64
            && index_offset.checked_add(index_len) == Some(bloom_offset)
            && bloom_offset.checked_add(bloom_len).and_then(|e| e.checked_add(FOOTER as u64)) == Some(len);
        if !adds_up {
            return Err(damaged(name, "footer offsets do not add up"));
        }
        let mut meta = vec![0u8; (index_len + bloom_len) as usize];
        file.read_at(&mut meta, index_offset).map_err(io)?;
        let crc = crc32c::crc32c_append(crc32c(&meta), &footer[..56]);
        if crc.to_le_bytes() != footer[56..60] {
            return Err(damaged(name, "index checksum mismatch"));
        }
        let (index, bloom) = meta.split_at(index_len as usize);
        let count = u32::from_le_bytes(index.get(..4).ok_or_else(|| damaged(name, "empty index"))?.try_into().unwrap());
        // Reserve no more than the index can hold: a damaged count must not size an allocation.
        let room = (count as usize).min(index.len() / MIN_INDEX_ENTRY);
        let (mut blocks, mut first_keys) = (Vec::with_capacity(room), Vec::<Key>::with_capacity(room));
        let codecs = format == FORMAT;
        // The smallest block: its CRC32C, after a codec byte in format 3.
        let min_block = 4 + codecs as u32;
        let mut at = 4;
        let mut next_free = HEADER as u64;
        for i in 0..count {
            let offset = u64::from_le_bytes(
                index.get(at..at + 8).ok_or_else(|| damaged(name, "short index"))?.try_into().unwrap(),
            );
            let length = u32::from_le_bytes(
                index.get(at + 8..at + 12).ok_or_else(|| damaged(name, "short index"))?.try_into().unwrap(),
            );
            let (key, used) = Key::decode(&index[at + 12..]).ok_or_else(|| damaged(name, "bad key in index"))?;
            // Reads assume blocks in file order, apart, before the index, and keys ascending.
            if offset < next_free
                || length < min_block
                || offset.checked_add(length as u64).is_none_or(|end| end > index_offset)
            {
                return Err(damaged(name, format!("block {i} (offset {offset}, {length} bytes) is out of place")));
            }
            if first_keys.last().is_some_and(|prev| *prev >= key) {
                return Err(damaged(name, format!("block {i} starts at a key not above the previous block's")));
            }
            next_free = offset + length as u64;
            blocks.push((offset, length));
            first_keys.push(key);
            at += 12 + used;
        }
        let (last_key, _) = Key::decode(&index[at..]).ok_or_else(|| damaged(name, "bad last key"))?;
        if first_keys.last().is_some_and(|first| *first > last_key) {
            return Err(damaged(name, "last key below the last block's first key"));
        }
        Ok(Run {
            name: name.to_string(),
            id: run_id_of(name),
            file,
            blocks,
            first_keys,
            last_key,
            bloom: Bloom::decode(bloom).ok_or_else(|| damaged(name, "bad filter"))?,
            codecs,
            entries: field(4),
            bytes: len,
        })
    }

    /// Memory this run keeps resident (index and filter).
    pub fn memory(&self) -> usize {
        self.bloom.memory() + self.blocks.len() * (12 + 32)
    }

    /// The entries of block `i`, checked and decompressed; `None` when `fetch` is `IfCached`
    /// and reading it would wait on the disk.
    fn read_block(&self, i: usize, fetch: Fetch) -> Result<Option<Arc<[u8]>>> {
        let (offset, length) = self.blocks[i];
        let mut buf = vec![0u8; length as usize];
        let io = |e| Error::io(format!("reading run file {}", self.name), e);
        match fetch {
            Fetch::Wait => self.file.read_at(&mut buf, offset).map_err(io)?,
            Fetch::IfCached => {
                if !self.file.read_at_if_cached(&mut buf, offset).map_err(io)? {
                    return Ok(None);
                }
            }
        }
        Ok(Some(self.checked(i, &buf)?))
    }

    /// The entries of blocks `range` (consecutive in the file) with one read, checked.
    fn read_blocks(&self, range: std::ops::Range<usize>) -> Result<Vec<Arc<[u8]>>> {
        let start = self.blocks[range.start].0;
        let (last_offset, last_length) = self.blocks[range.end - 1];
        let mut buf = vec![0u8; (last_offset + last_length as u64 - start) as usize];
        self.file.read_at(&mut buf, start).map_err(|e| Error::io(format!("reading run file {}", self.name), e))?;
        range
            .map(|i| {
                let (offset, length) = self.blocks[i];
                let at = (offset - start) as usize;
                self.checked(i, &buf[at..at + length as usize])
            })
            .collect()
    }

    /// The entries of block `i` read as `stored` (codec, payload, CRC32C), or an error if the
    /// checksum fails or the payload does not decompress.
    fn checked(&self, i: usize, stored: &[u8]) -> Result<Arc<[u8]>> {
        let bad = |what: &str| damaged(&self.name, format!("block {i} at offset {}: {what}", self.blocks[i].0));
        let (body, crc) = stored.split_at(stored.len() - 4);
        if crc32c(body).to_le_bytes() != crc {
            return Err(bad("checksum mismatch"));
        }
        if !self.codecs {
            return Ok(body.into());
        }
        match body.split_first() {
            Some((&RAW, entries)) => Ok(entries.into()),
            Some((&LZ4, packed)) => {
                // The size is stored first; a damaged one must not size an allocation.
                let size = packed.get(..4).map_or(0, |b| u32::from_le_bytes(b.try_into().unwrap()) as usize);
                if size > MAX_BLOCK {
                    return Err(bad(&format!("LZ4 block claims {size} bytes, more than a block holds ({MAX_BLOCK})")));
                }
                lz4_flex::block::decompress_size_prepended(packed)
                    .map(Into::into)
                    .map_err(|e| bad(&format!("LZ4: {e}")))
            }
            _ => Err(bad("unknown codec")),
        }
    }

    /// The run's largest key; `None` when it is empty.
    pub fn last_key(&self) -> Option<&Key> {
        (!self.blocks.is_empty()).then_some(&self.last_key)
    }

    /// The run's first and last keys; `None` for a run with no entries.
    pub fn key_range(&self) -> Option<(Key, Key)> {
        self.first_keys.first().map(|first| (first.clone(), self.last_key.clone()))
    }

    /// True when `key` lies between the run's first and last keys.
    pub fn spans(&self, key: &Key) -> bool {
        !self.blocks.is_empty() && *key >= self.first_keys[0] && *key <= self.last_key
    }

    /// The newest entry for `key` in this run.
    pub fn get(&self, key: &Key, encoded: &[u8], cache: &BlockCache, fetch: Fetch) -> Result<Probe> {
        if !self.spans(key) || !self.bloom.may_contain(encoded) {
            return Ok(Probe::Absent);
        }
        let i = self.first_keys.partition_point(|k| k <= key) - 1;
        let Some(block) = cache.get_or_read(self.id, i as u32, || self.read_block(i, fetch))? else {
            return Ok(Probe::NotInMemory);
        };
        // Compare keys in place: decoding every entry would allocate each key and document.
        for entry in RawEntries::new(&block, &self.name) {
            let (k, doc) = entry?;
            let (order, _) = cmp_encoded(k, key).ok_or_else(|| bad_entry(&self.name))?;
            match order {
                std::cmp::Ordering::Less => continue,
                std::cmp::Ordering::Greater => break,
                std::cmp::Ordering::Equal => return Ok(Probe::Entry(doc.map(|d| to_doc(d, &self.name)).transpose()?)),
            }
        }
        Ok(Probe::Absent)
    }

    /// Entries from the first key `>= from` (or `<= from` in reverse), a window of blocks at a
    /// time (`RunIter`). Not through the block cache, which is for point reads.
    pub fn iter(self: &Arc<Self>, from: Option<&Key>, reverse: bool) -> RunIter {
        let block = match (from, reverse) {
            (None, false) => 0,
            (None, true) => self.blocks.len() as isize - 1,
            (Some(k), false) => (self.first_keys.partition_point(|f| f <= k) as isize - 1).max(0),
            (Some(k), true) => self.first_keys.partition_point(|f| f <= k) as isize - 1,
        };
        RunIter {
            run: self.clone(),
            next_block: block,
            reverse,
            ahead: Vec::new(),
            window: BLOCK_TARGET,
            buffered: Vec::new(),
            from: from.cloned(),
        }
    }
}

fn bad_entry(name: &str) -> Error {
    damaged(name, "bad entry in a block whose checksum matched (a bug)")
}

fn to_doc(bytes: &[u8], name: &str) -> Result<Doc> {
    Ok(std::str::from_utf8(bytes).map_err(|_| bad_entry(name))?.into())
}

/// The entries of one block as they are stored: the encoded key, and the document (`None`
/// for a delete).
struct RawEntries<'a> {
    buf: &'a [u8],
    at: usize,
    name: &'a str,
}

impl<'a> RawEntries<'a> {
    fn new(buf: &'a [u8], name: &'a str) -> Self {
        RawEntries { buf, at: 0, name }
    }

    fn entry(&mut self) -> Option<(&'a [u8], Option<&'a [u8]>)> {
        let kind = self.buf[self.at];
        let key_at = self.at + 1;
        let key = self.buf.get(key_at..key_at + encoded_len(&self.buf[key_at..])?)?;
        self.at = key_at + key.len();
        if kind == DELETE {
            return Some((key, None));
        }
        let len = u32::from_le_bytes(self.buf.get(self.at..self.at + 4)?.try_into().ok()?) as usize;
        let doc = self.buf.get(self.at + 4..self.at + 4 + len)?;
        self.at += 4 + len;
        Some((key, Some(doc)))
    }
}

impl<'a> Iterator for RawEntries<'a> {
    type Item = Result<(&'a [u8], Option<&'a [u8]>)>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.buf.len() {
            return None;
        }
        Some(self.entry().ok_or_else(|| {
            self.at = self.buf.len();
            bad_entry(self.name)
        }))
    }
}

/// Decodes the entries of one block.
fn entries(block: &[u8], name: &str) -> Result<Vec<(Key, Option<Doc>)>> {
    RawEntries::new(block, name)
        .map(|e| {
            let (k, doc) = e?;
            let (key, _) = Key::decode(k).ok_or_else(|| bad_entry(name))?;
            Ok((key, doc.map(|d| to_doc(d, name)).transpose()?))
        })
        .collect()
}

/// The most one read of an iteration (a merge's input, a scan) takes. The kernel's readahead is
/// off for run files (`Storage::no_readahead`), which would read merge inputs several MiB per
/// request, and point reads queue behind a merge's reads: a bounded window keeps that wait short.
pub(crate) const READ_WINDOW_MAX: usize = 256 << 10;

/// Iterates over a run in key order (or reverse), reading a window of blocks at a time and
/// decoding one block at a time.
pub(crate) struct RunIter {
    run: Arc<Run>,
    /// The next block to read from the file.
    next_block: isize,
    reverse: bool,
    /// Blocks read, not decoded yet; `pop` gives the next.
    ahead: Vec<Arc<[u8]>>,
    /// Bytes the next read takes: it doubles from one block up to `READ_WINDOW_MAX`, so that a
    /// scan that stops early reads little.
    window: usize,
    /// The current block's remaining entries, in the order they will be yielded (reversed
    /// storage so `pop` yields the next one).
    buffered: Vec<(Key, Option<Doc>)>,
    from: Option<Key>,
}

impl RunIter {
    fn fill(&mut self) -> Result<bool> {
        while self.buffered.is_empty() {
            let Some(block) = self.ahead.pop() else {
                if !self.read_window()? {
                    return Ok(false);
                }
                continue;
            };
            let mut entries = entries(&block, &self.run.name)?;
            if let Some(from) = self.from.take() {
                entries.retain(|(k, _)| if self.reverse { *k <= from } else { *k >= from });
            }
            if !self.reverse {
                entries.reverse();
            }
            self.buffered = entries;
        }
        Ok(true)
    }

    /// Reads the next blocks that fit the window (at least one) with one read.
    fn read_window(&mut self) -> Result<bool> {
        let count = self.run.blocks.len();
        if self.next_block < 0 || self.next_block >= count as isize {
            return Ok(false);
        }
        let (mut lo, mut hi) = (self.next_block as usize, self.next_block as usize + 1);
        let mut bytes = self.run.blocks[lo].1 as usize;
        loop {
            let next = if self.reverse { lo.checked_sub(1) } else { Some(hi).filter(|&j| j < count) };
            let Some(j) = next else { break };
            bytes += self.run.blocks[j].1 as usize;
            if bytes > self.window {
                break;
            }
            if self.reverse {
                lo = j
            } else {
                hi = j + 1
            }
        }
        self.ahead = self.run.read_blocks(lo..hi)?;
        if !self.reverse {
            self.ahead.reverse();
        }
        self.next_block = if self.reverse { lo as isize - 1 } else { hi as isize };
        self.window = (self.window * 2).min(READ_WINDOW_MAX);
        Ok(true)
    }
}

impl Iterator for RunIter {
    type Item = Result<(Key, Option<Doc>)>;
    fn next(&mut self) -> Option<Self::Item> {
        match self.fill() {
            Ok(true) => self.buffered.pop().map(Ok),
            Ok(false) => None,
            Err(e) => {
                self.next_block = -1;
                self.ahead.clear();
                self.buffered.clear();
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{SimVfs, Storage, Vfs};
    use std::sync::Mutex;

    fn write(vfs: &Arc<SimVfs>, n: u32, compress: bool) -> Arc<Run> {
        let mut w = RunWriter::create(vfs, "run-00000001.wrun", 3, (n as u64, 0), compress).unwrap();
        for i in 0..n {
            let doc = format!("{{\"id\":{i},\"pad\":\"{}\"}}", "x".repeat(200));
            w.add(&Key::from(i as f64), (i % 7 != 3).then_some(doc.as_str())).unwrap();
        }
        w.finish().unwrap();
        Arc::new(Run::open(vfs, "run-00000001.wrun").unwrap())
    }

    #[test]
    fn point_reads_and_scans_in_both_directions_compressed_or_not() {
        for compress in [false, true] {
            point_reads_and_scans(compress);
        }
        let sizes = [false, true].map(|compress| write(&SimVfs::new(), 2000, compress).bytes);
        assert!(sizes[1] * 4 < sizes[0], "LZ4 blocks: {sizes:?} bytes");
    }

    fn point_reads_and_scans(compress: bool) {
        let vfs = SimVfs::new();
        let run = write(&vfs, 2000, compress);
        assert!(run.blocks.len() > 10, "several blocks");
        let cache = BlockCache::new(1 << 20);
        let mut enc = Vec::new();
        for i in [0u32, 1, 3, 500, 1999] {
            enc.clear();
            Key::from(i as f64).encode(&mut enc);
            let got = run.get(&Key::from(i as f64), &enc, &cache, Fetch::Wait).unwrap();
            assert!(matches!(got, Probe::Entry(ref d) if d.is_some() == (i % 7 != 3)), "key {i}");
        }
        enc.clear();
        Key::from(5000.0).encode(&mut enc);
        assert_eq!(run.get(&Key::from(5000.0), &enc, &cache, Fetch::Wait).unwrap(), Probe::Absent);
        let keys: Vec<f64> = run
            .iter(Some(&Key::from(1500.5)), false)
            .map(|e| match e.unwrap().0 {
                Key::Num(n) => n,
                _ => panic!(),
            })
            .collect();
        assert_eq!(keys, (1501..2000).map(|i| i as f64).collect::<Vec<_>>());
        let back: Vec<f64> = run
            .iter(Some(&Key::from(10.0)), true)
            .map(|e| match e.unwrap().0 {
                Key::Num(n) => n,
                _ => panic!(),
            })
            .collect();
        assert_eq!(back, (0..=10).rev().map(|i| i as f64).collect::<Vec<_>>());
        assert_eq!(run.iter(None, true).count(), 2000);
    }

    /// Readers search a snapshot of a table's runs without its lock, so a merge may delete a
    /// run file while one of them still reads it: the open handle must keep serving.
    #[test]
    fn a_removed_run_file_stays_readable_through_its_handle() {
        let vfs = SimVfs::new();
        let run = write(&vfs, 2000, false);
        vfs.remove(&run.name).unwrap();
        let cache = BlockCache::new(0);
        let mut enc = Vec::new();
        Key::from(1999.0).encode(&mut enc);
        let got = run.get(&Key::from(1999.0), &enc, &cache, Fetch::Wait).unwrap();
        assert!(matches!(got, Probe::Entry(Some(doc)) if doc.contains("\"id\":1999")));

        let dir = tempfile::tempdir().unwrap();
        let disk: Arc<dyn Vfs> = Arc::new(crate::io::FileVfs::new(dir.path()).unwrap());
        let mut w = RunWriter::create(&*disk, "run-00000002.wrun", 3, (1, 0), false).unwrap();
        w.add(&Key::from(7.0), Some("{\"id\":7}")).unwrap();
        w.finish().unwrap();
        let run = Run::open(&*disk, "run-00000002.wrun").unwrap();
        disk.remove("run-00000002.wrun").unwrap();
        enc.clear();
        Key::from(7.0).encode(&mut enc);
        assert_eq!(
            run.get(&Key::from(7.0), &enc, &BlockCache::new(0), Fetch::Wait).unwrap(),
            Probe::Entry(Some("{\"id\":7}".into()))
        );
    }

    /// The index and filter are written after the blocks, past the writer's output buffer when
    /// larger than it; the entry count comes back from the footer.
    #[test]
    fn a_filter_larger_than_the_write_buffer_reads_back() {
        let vfs = SimVfs::new();
        let n = 900_000u32; // a 1.1 MiB filter
        let mut w = RunWriter::create(&vfs, "run-00000003.wrun", 3, (n as u64, 0), true).unwrap();
        for i in 0..n {
            w.add(&Key::from(i as f64), (i % 100_000 == 0).then_some("{}")).unwrap();
        }
        w.finish().unwrap();
        let run = Run::open(&vfs, "run-00000003.wrun").unwrap();
        assert!(run.bloom.memory() > 1 << 20);
        assert_eq!(run.entries, n as u64);
        let mut enc = Vec::new();
        for (i, doc) in [(0u32, Some("{}")), (899_999, None), (500_000, Some("{}"))] {
            enc.clear();
            Key::from(i as f64).encode(&mut enc);
            assert_eq!(
                run.get(&Key::from(i as f64), &enc, &BlockCache::new(0), Fetch::Wait).unwrap(),
                Probe::Entry(doc.map(Into::into)),
                "key {i}"
            );
        }
    }

    /// A run written by format 2 (blocks without a codec byte; `tests/fixtures`, from the code
    /// of that format): keys 0..300, every tenth a delete.
    #[test]
    fn a_format_2_run_still_reads() {
        let vfs = SimVfs::new();
        vfs.write_file("run-00000004.wrun", include_bytes!("../tests/fixtures/run-format-2.wrun").to_vec());
        let run = Arc::new(Run::open(&vfs, "run-00000004.wrun").unwrap());
        assert!(!run.codecs);
        let all: Vec<_> = run.iter(None, false).map(|e| e.unwrap()).collect();
        assert_eq!(all.len(), 300);
        for (i, (key, doc)) in all.into_iter().enumerate() {
            assert_eq!(key, Key::from(i as f64));
            assert_eq!(
                doc.as_deref(),
                (i % 10 != 9).then(|| format!("{{\"id\":{i},\"name\":\"person {i}\"}}")).as_deref()
            );
        }
        let mut enc = Vec::new();
        Key::from(123.0).encode(&mut enc);
        let got = run.get(&Key::from(123.0), &enc, &BlockCache::new(0), Fetch::Wait).unwrap();
        assert_eq!(got, Probe::Entry(Some("{\"id\":123,\"name\":\"person 123\"}".into())));
    }

    #[test]
    fn a_damaged_block_is_an_error_not_wrong_data() {
        let vfs = SimVfs::new();
        write(&vfs, 2000, true);
        let mut bytes = vfs.read_file("run-00000001.wrun").unwrap();
        bytes[HEADER + 100] ^= 1;
        vfs.write_file("run-00000001.wrun", bytes.clone());
        let run = Arc::new(Run::open(&vfs, "run-00000001.wrun").unwrap());
        let err = run.iter(None, false).find_map(|e| e.err()).unwrap();
        assert_eq!(err.code, crate::ErrorCode::CorruptCheckpoint);
        let n = bytes.len();
        bytes[n - 20] ^= 1;
        vfs.write_file("run-00000001.wrun", bytes);
        assert!(Run::open(&vfs, "run-00000001.wrun").is_err());
    }

    /// Writes a 2000-entry run, lets `damage` change its bytes, recomputes its checksums (as the
    /// `run` fuzz target does, so that only the reader's own checks stand) and opens it.
    fn damaged_run(compress: bool, damage: impl FnOnce(&mut Vec<u8>, &Run)) -> Result<Arc<Run>> {
        let vfs = SimVfs::new();
        let run = write(&vfs, 2000, compress);
        let mut bytes = vfs.read_file(&run.name).unwrap();
        damage(&mut bytes, &run);
        crate::fuzzing::reseal_run(&mut bytes);
        vfs.write_file(&run.name, bytes);
        Run::open(&vfs, &run.name).map(Arc::new)
    }

    /// Where block `i`'s index entry starts in the file.
    fn index_entry_at(bytes: &[u8], run: &Run, i: usize) -> usize {
        let index_offset =
            u64::from_le_bytes(bytes[bytes.len() - FOOTER + 8..bytes.len() - FOOTER + 16].try_into().unwrap()) as usize;
        4 + index_offset + (0..i).map(|j| 12 + encoded_len_of(&run.first_keys[j])).sum::<usize>()
    }

    fn encoded_len_of(key: &Key) -> usize {
        let mut out = Vec::new();
        key.encode(&mut out);
        out.len()
    }

    fn assert_damaged(result: Result<Arc<Run>>, says: &str) {
        let err = result.err().expect("the damaged run must not open");
        assert_eq!(err.code, crate::ErrorCode::CorruptCheckpoint, "{}", err.message);
        assert!(err.message.contains(says), "{}", err.message);
    }

    /// Seen reading the code for the `run` fuzz target (the checksums then let nothing reach
    /// it; a resealed file does): a block listed as shorter than its checksum made the first
    /// read of it panic (`stored.len() - 4`), and blocks out of file order made a scan's window
    /// read underflow. Every block must lie after the previous one, before the index.
    #[test]
    fn blocks_out_of_place_are_refused_at_open() {
        assert_damaged(
            damaged_run(false, |b, run| {
                let at = index_entry_at(b, run, 3);
                b[at + 8..at + 12].copy_from_slice(&2u32.to_le_bytes());
            }),
            "block 3 (offset",
        );
        assert_damaged(
            damaged_run(false, |b, run| {
                let at = index_entry_at(b, run, 1);
                b[at..at + 8].copy_from_slice(&(HEADER as u64).to_le_bytes());
            }),
            "block 1 (offset 24",
        );
        assert_damaged(
            damaged_run(false, |b, run| {
                let at = index_entry_at(b, run, 5);
                b[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
            }),
            "block 5 (offset 18446744073709551615",
        );
        // Block keys out of order (the second block listed under the first one's key).
        assert_damaged(
            damaged_run(false, |b, run| {
                let (first, second) = (index_entry_at(b, run, 0), index_entry_at(b, run, 1));
                let key = b[first + 12..first + 21].to_vec();
                b[second + 12..second + 21].copy_from_slice(&key);
            }),
            "block 1 starts at a key not above",
        );
        // Footer offsets that only add up by wrapping around.
        assert_damaged(
            damaged_run(false, |b, _| {
                let f = b.len() - FOOTER;
                let field =
                    |b: &[u8], i: usize| u64::from_le_bytes(b[f + 8 + 8 * i..f + 16 + 8 * i].try_into().unwrap());
                let (offset, len) = (field(b, 0), field(b, 1));
                b[f + 8..f + 16].copy_from_slice(&offset.wrapping_add(1 << 63).to_le_bytes());
                b[f + 16..f + 24].copy_from_slice(&len.wrapping_sub(1 << 63).to_le_bytes());
            }),
            "footer offsets do not add up",
        );
    }

    /// Found by the `checkpoint` fuzz target's short pass (an allocation of 4 GiB): an LZ4
    /// block's stored size sized the buffer it decompressed into, so a damaged one could ask for
    /// any amount of memory. It is refused, before any allocation, past what a block holds.
    #[test]
    fn an_lz4_block_claiming_more_than_a_block_holds_is_refused() {
        let run = damaged_run(true, |b, run| {
            let block = run.blocks[0].0 as usize;
            assert_eq!(b[block], LZ4);
            b[block + 1..block + 5].copy_from_slice(&u32::MAX.to_le_bytes());
        })
        .unwrap();
        let err = run.iter(None, false).find_map(|e| e.err()).expect("reading the block fails");
        assert_eq!(err.code, crate::ErrorCode::CorruptCheckpoint);
        assert!(err.message.contains("claims 4294967295 bytes"), "{}", err.message);
        // Every other block still reads.
        assert!(run.iter(Some(&Key::from(1999.0)), false).all(|e| e.is_ok()));
    }

    /// Records the size of every read of the files it opens.
    struct ReadSizes(Arc<SimVfs>, Arc<Mutex<Vec<usize>>>);
    struct SizedStorage(Arc<dyn Storage>, Arc<Mutex<Vec<usize>>>);
    impl Storage for SizedStorage {
        fn len(&self) -> std::io::Result<u64> {
            self.0.len()
        }
        fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
            self.1.lock().unwrap().push(buf.len());
            self.0.read_at(buf, offset)
        }
        fn write_at(&self, buf: &[u8], offset: u64) -> std::io::Result<()> {
            self.0.write_at(buf, offset)
        }
        fn set_len(&self, len: u64) -> std::io::Result<()> {
            self.0.set_len(len)
        }
        fn sync_data(&self) -> std::io::Result<()> {
            self.0.sync_data()
        }
    }
    impl Vfs for ReadSizes {
        fn open(&self, name: &str, create: bool) -> std::io::Result<Arc<dyn Storage>> {
            Ok(Arc::new(SizedStorage(self.0.open(name, create)?, self.1.clone())))
        }
        fn list(&self) -> std::io::Result<Vec<String>> {
            self.0.list()
        }
        fn remove(&self, name: &str) -> std::io::Result<()> {
            self.0.remove(name)
        }
        fn sync_dir(&self) -> std::io::Result<()> {
            self.0.sync_dir()
        }
    }

    /// A merge reads its inputs in windows of up to `READ_WINDOW_MAX`, not a block per read
    /// (and, with the kernel's readahead off, not in the kernel's multi-MiB requests either);
    /// a scan that stops after a few entries reads one block.
    #[test]
    fn iterations_read_windows_of_blocks_growing_from_one() {
        let vfs = SimVfs::new();
        write(&vfs, 20_000, false);
        let sizes = Arc::new(Mutex::new(Vec::new()));
        let run = Arc::new(Run::open(&ReadSizes(vfs, sizes.clone()), "run-00000001.wrun").unwrap());
        let blocks = run.blocks.len();
        assert!(blocks > 200, "{blocks} blocks");
        let data: usize = run.blocks.iter().map(|b| b.1 as usize).sum();
        for reverse in [false, true] {
            sizes.lock().unwrap().clear();
            assert_eq!(run.iter(None, reverse).take(3).count(), 3);
            assert_eq!(*sizes.lock().unwrap(), vec![run.blocks[if reverse { blocks - 1 } else { 0 }].1 as usize]);

            sizes.lock().unwrap().clear();
            let keys: Vec<Key> = run.iter(None, reverse).map(|e| e.unwrap().0).collect();
            assert_eq!(keys.len(), 20_000);
            assert!(keys.windows(2).all(|w| (w[0] < w[1]) != reverse), "in order");
            let sizes = sizes.lock().unwrap();
            assert_eq!(sizes.iter().sum::<usize>(), data, "each block read once");
            assert!(sizes.iter().all(|&s| s <= READ_WINDOW_MAX), "{sizes:?}");
            assert!(
                sizes.len() <= data / (READ_WINDOW_MAX - 2 * BLOCK_TARGET) + 6,
                "{} reads for {blocks} blocks",
                sizes.len()
            );
        }
    }
}
