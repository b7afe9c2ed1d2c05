//! One table's documents as a log-structured merge tree: the *active* memtable takes writes;
//! at a checkpoint it is *frozen* and written out as a run file; runs are merged in the
//! background (see `merge.rs`). A read looks newest first: active, frozen, then runs newest to
//! oldest, and the first entry found for a key (a document or a delete) is the answer.

use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use crate::cache::BlockCache;
use crate::doc::Doc;
use crate::error::Result;
use crate::key::{Key, KeyRange};
pub(crate) use crate::memtable::Memtable;
use crate::run::{Fetch, Probe, Run};

/// Rough memory one memtable entry costs beyond its document (B-tree slot, key, `Arc`).
pub(crate) const ENTRY_OVERHEAD: u64 = 64;

pub(crate) fn entry_size(doc: &Option<Doc>) -> u64 {
    ENTRY_OVERHEAD + doc.as_ref().map_or(0, |d| d.len() as u64)
}

/// A tree's runs as `stats()` counts them, kept outside the tree's lock: `stats()` runs on
/// Node's thread, and checkpoint and merge threads (low CPU priority) take that lock when runs
/// change; preempted there, one would hold up the event loop until it ran again.
#[derive(Default)]
pub(crate) struct RunTotals {
    pub runs: AtomicU64,
    pub bytes: AtomicU64,
    pub index_bytes: AtomicU64,
}

impl RunTotals {
    fn count(&self, run: &Run, added: bool) {
        let change = |c: &AtomicU64, n: u64| if added { c.fetch_add(n, Relaxed) } else { c.fetch_sub(n, Relaxed) };
        change(&self.runs, 1);
        change(&self.bytes, run.bytes);
        change(&self.index_bytes, run.memory() as u64);
    }
}

#[derive(Default)]
pub(crate) struct Tree {
    pub active: Memtable,
    pub active_bytes: u64,
    /// The memtable a checkpoint is writing out, and its size.
    pub frozen: Option<(Arc<Memtable>, u64)>,
    /// Oldest first. Changed only through `add_run` and `replace_runs`, which keep
    /// `runs_last_key` and `run_totals`.
    pub runs: Vec<Arc<Run>>,
    pub run_totals: Arc<RunTotals>,
    /// No run holds a key above this. A write's key above it needs no look at the runs: an
    /// import's ascending ids would otherwise compare with every run's key range, and with a
    /// few hundred runs behind a long merge that cost more than the rest of the write. A merge
    /// keeps it an upper bound (it never adds keys), so only new runs move it.
    runs_last_key: Option<Key>,
    /// Live documents and their bytes (kept exact on every write, so `count` is O(1)).
    pub documents: u64,
    pub bytes: u64,
}

impl Tree {
    /// The current document for `key`.
    pub fn get(&self, key: &Key, cache: &BlockCache) -> Result<Option<Doc>> {
        match self.get_in_memory(key) {
            Some(entry) => Ok(entry),
            None if self.runs_last_key.as_ref().is_none_or(|last| key > last) => Ok(None),
            None => get_in_runs(&self.runs, key, cache, Fetch::Wait).map(Probe::into_doc),
        }
    }

    /// Adds the newest run.
    pub fn add_run(&mut self, run: Arc<Run>) {
        if let Some(last) = run.last_key() {
            if self.runs_last_key.as_ref().is_none_or(|l| last > l) {
                self.runs_last_key = Some(last.clone());
            }
        }
        self.run_totals.count(&run, true);
        self.runs.push(run);
    }

    /// Replaces `count` runs from `at` with `merged` (none when a merge left nothing).
    pub fn replace_runs(&mut self, at: usize, count: usize, merged: Option<Arc<Run>>) {
        if let Some(run) = &merged {
            self.run_totals.count(run, true);
        }
        for run in self.runs.splice(at..at + count, merged) {
            self.run_totals.count(&run, false);
        }
    }

    /// The memtables' entry for `key` (a document or a delete), if they hold one; `None` means
    /// the answer is in the runs.
    pub fn get_in_memory(&self, key: &Key) -> Option<Option<Doc>> {
        if let Some(entry) = self.active.get(key) {
            return Some(entry.clone());
        }
        self.frozen.as_ref().and_then(|(m, _)| m.get(key)).cloned()
    }

    /// Records a change whose previous document was `old`; returns the memtable bytes added.
    pub fn set(&mut self, key: Key, doc: Option<Doc>, old: Option<&Doc>) -> i64 {
        match (&doc, old) {
            (Some(d), None) => {
                self.documents += 1;
                self.bytes += d.len() as u64;
            }
            (Some(d), Some(o)) => self.bytes = self.bytes + d.len() as u64 - o.len() as u64,
            (None, Some(o)) => {
                self.documents -= 1;
                self.bytes -= o.len() as u64;
            }
            (None, None) => {}
        }
        self.write(key, doc)
    }

    /// Puts an entry in the active memtable; returns the memtable bytes added.
    pub fn write(&mut self, key: Key, doc: Option<Doc>) -> i64 {
        let added = entry_size(&doc);
        let removed = self.active.insert(key, doc).map_or(0, |e| entry_size(&e));
        self.active_bytes = self.active_bytes + added - removed;
        added as i64 - removed as i64
    }

    /// Moves the active memtable to `frozen` for a checkpoint; `None` when it is empty.
    pub fn freeze(&mut self) -> Option<Arc<Memtable>> {
        if self.active.is_empty() || self.frozen.is_some() {
            return None;
        }
        let m = Arc::new(std::mem::take(&mut self.active));
        self.frozen = Some((m.clone(), std::mem::take(&mut self.active_bytes)));
        Some(m)
    }

    /// Memtable bytes still frozen (being written out).
    pub fn frozen_bytes(&self) -> u64 {
        self.frozen.as_ref().map_or(0, |(_, b)| *b)
    }

    /// Documents in key order (or reverse) within `range`, at most `limit`.
    pub fn scan(&self, range: &KeyRange, limit: usize, reverse: bool) -> Result<Vec<(Key, Doc)>> {
        fn memtable<'a>(m: &'a Memtable, range: &KeyRange, reverse: bool) -> Source<'a> {
            Box::new(m.range(range, reverse).map(|(k, v)| Ok((k.clone(), v.clone()))))
        }
        let start = match if reverse { &range.upper } else { &range.lower } {
            Bound::Included(k) | Bound::Excluded(k) => Some(k),
            Bound::Unbounded => None,
        };
        let mut sources: Vec<Source<'_>> = vec![memtable(&self.active, range, reverse)];
        if let Some((m, _)) = &self.frozen {
            sources.push(memtable(m, range, reverse));
        }
        for run in self.runs.iter().rev() {
            // A run starts at the block holding the bound: skip what precedes the range.
            let it = run.iter(start, reverse);
            sources
                .push(Box::new(it.skip_while(move |e| e.as_ref().is_ok_and(|(k, _)| before_start(range, k, reverse)))));
        }
        let mut out = Vec::new();
        for entry in MergingIter::new(sources, reverse)? {
            let (key, doc) = entry?;
            if !range_contains(range, &key) || out.len() >= limit {
                break;
            }
            if let Some(doc) = doc {
                out.push((key, doc));
            }
        }
        Ok(out)
    }
}

/// The entry for `key` in `runs` (oldest first), newest run first. Runs are immutable, so a
/// reader may search a snapshot of them without the table's lock.
pub(crate) fn get_in_runs(runs: &[Arc<Run>], key: &Key, cache: &BlockCache, fetch: Fetch) -> Result<Probe> {
    if runs.is_empty() {
        return Ok(Probe::Absent);
    }
    let mut encoded = Vec::new(); // for the bloom filters; not made when no run spans `key`
    for run in runs.iter().rev() {
        if !run.spans(key) {
            continue;
        }
        if encoded.is_empty() {
            key.encode(&mut encoded);
        }
        match run.get(key, &encoded, cache, fetch)? {
            Probe::Absent => continue,
            found => return Ok(found),
        }
    }
    Ok(Probe::Absent)
}

/// True when `k` comes before the range in scan order (so a scan has not reached it yet).
fn before_start(range: &KeyRange, k: &Key, reverse: bool) -> bool {
    match (reverse, &range.lower, &range.upper) {
        (false, Bound::Included(l), _) => k < l,
        (false, Bound::Excluded(l), _) => k <= l,
        (true, _, Bound::Included(u)) => k > u,
        (true, _, Bound::Excluded(u)) => k >= u,
        _ => false,
    }
}

pub(crate) fn range_contains(range: &KeyRange, k: &Key) -> bool {
    let above = match &range.lower {
        Bound::Included(l) => k >= l,
        Bound::Excluded(l) => k > l,
        Bound::Unbounded => true,
    };
    let below = match &range.upper {
        Bound::Included(u) => k <= u,
        Bound::Excluded(u) => k < u,
        Bound::Unbounded => true,
    };
    above && below
}

pub(crate) type Source<'a> = Box<dyn Iterator<Item = Result<(Key, Option<Doc>)>> + 'a>;

/// Merges sorted sources, given newest first, into one sorted stream with one entry per key:
/// the newest source's (deletes included; the caller decides what they mean).
pub(crate) struct MergingIter<'a> {
    sources: Vec<Source<'a>>,
    heads: Vec<Option<(Key, Option<Doc>)>>,
    reverse: bool,
}

impl<'a> MergingIter<'a> {
    pub fn new(mut sources: Vec<Source<'a>>, reverse: bool) -> Result<Self> {
        let heads = sources.iter_mut().map(|s| s.next().transpose()).collect::<Result<_>>()?;
        Ok(MergingIter { sources, heads, reverse })
    }

    fn step(&mut self) -> Result<Option<(Key, Option<Doc>)>> {
        let mut best: Option<usize> = None;
        for (i, h) in self.heads.iter().enumerate() {
            let Some((k, _)) = h else { continue };
            let better = match best.and_then(|b| self.heads[b].as_ref()) {
                None => true,
                Some((bk, _)) => {
                    if self.reverse {
                        k > bk
                    } else {
                        k < bk
                    }
                }
            };
            if better {
                best = Some(i);
            }
        }
        let Some(best) = best else { return Ok(None) };
        let key = self.heads[best].as_ref().unwrap().0.clone();
        let mut winner = None;
        for i in best..self.heads.len() {
            if self.heads[i].as_ref().is_some_and(|(k, _)| *k == key) {
                let next = self.sources[i].next().transpose()?;
                let (_, doc) = std::mem::replace(&mut self.heads[i], next).unwrap();
                winner.get_or_insert(doc);
            }
        }
        Ok(Some((key, winner.unwrap())))
    }
}

impl Iterator for MergingIter<'_> {
    type Item = Result<(Key, Option<Doc>)>;
    fn next(&mut self) -> Option<Self::Item> {
        self.step().transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::SimVfs;
    use crate::run::RunWriter;

    fn run(vfs: &Arc<SimVfs>, name: &str, keys: std::ops::Range<u32>) -> Arc<Run> {
        let mut w = RunWriter::create(vfs, name, 1, (keys.len() as u64, 0), false).unwrap();
        for k in keys {
            w.add(&Key::from(k as f64), Some("{}")).unwrap();
        }
        w.finish().unwrap();
        Arc::new(Run::open(vfs, name).unwrap())
    }

    /// `stats()` reads the totals without the lock: they must follow every change of the runs.
    #[test]
    fn run_totals_and_the_largest_key_follow_added_and_merged_runs() {
        let vfs = SimVfs::new();
        let runs: Vec<_> = (0..3).map(|i| run(&vfs, &format!("run-0000000{i}.wrun"), i * 100..i * 100 + 50)).collect();
        let mut tree = Tree::default();
        for r in &runs {
            tree.add_run(r.clone());
        }
        let check = |tree: &Tree| {
            let t = &tree.run_totals;
            assert_eq!(t.runs.load(Relaxed), tree.runs.len() as u64);
            assert_eq!(t.bytes.load(Relaxed), tree.runs.iter().map(|r| r.bytes).sum::<u64>());
            assert_eq!(t.index_bytes.load(Relaxed), tree.runs.iter().map(|r| r.memory() as u64).sum::<u64>());
        };
        check(&tree);
        assert_eq!(tree.runs_last_key, Some(Key::from(249.0)));
        tree.replace_runs(0, 2, Some(run(&vfs, "run-00000009.wrun", 0..150)));
        assert_eq!(tree.runs.len(), 2);
        check(&tree);
        tree.replace_runs(0, 2, None);
        assert!(tree.runs.is_empty());
        check(&tree);
    }
}
