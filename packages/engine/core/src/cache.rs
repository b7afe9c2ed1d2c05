//! The block cache: decoded-and-verified run blocks, bounded in bytes by the memory budget.
//! `quick_cache` does the eviction (S3-FIFO, which keeps one-off scan blocks from pushing out
//! the blocks point reads keep coming back to).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use quick_cache::sync::Cache;
use quick_cache::Weighter;

use crate::error::Result;

#[derive(Clone)]
struct BlockWeight;

impl Weighter<(u64, u32), Arc<[u8]>> for BlockWeight {
    fn weight(&self, _: &(u64, u32), block: &Arc<[u8]>) -> u64 {
        block.len() as u64 + 64
    }
}

pub(crate) struct BlockCache {
    cache: Cache<(u64, u32), Arc<[u8]>, BlockWeight>,
    pub hits: AtomicU64,
    pub misses: AtomicU64,
}

impl BlockCache {
    pub fn new(capacity_bytes: u64) -> Self {
        let capacity_bytes = capacity_bytes.max(1 << 20);
        BlockCache {
            cache: Cache::with_weighter((capacity_bytes / (16 << 10)) as usize + 16, capacity_bytes, BlockWeight),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// Block `block` of run `run`, read with `read` on a miss; `read` may give up (`None`:
    /// the block is not in memory and the caller will not wait for the disk).
    pub fn get_or_read(
        &self,
        run: u64,
        block: u32,
        read: impl FnOnce() -> Result<Option<Arc<[u8]>>>,
    ) -> Result<Option<Arc<[u8]>>> {
        if let Some(b) = self.cache.get(&(run, block)) {
            self.hits.fetch_add(1, Relaxed);
            return Ok(Some(b));
        }
        let Some(b) = read()? else { return Ok(None) };
        self.misses.fetch_add(1, Relaxed);
        self.cache.insert((run, block), b.clone());
        Ok(Some(b))
    }

    /// Bytes held now.
    pub fn bytes(&self) -> u64 {
        self.cache.weight()
    }
}
