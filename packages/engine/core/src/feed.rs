//! Change feeds: a bounded queue of a table's changes for one subscriber.
//!
//! The committer pushes every change it applies to a table into each of that table's feeds, as it
//! applies it (so in commit order, and never before the change is visible to reads); the
//! subscriber takes them in batches. A feed holds at most `capacity` changes: past that, changes
//! are counted as skipped and dropped, never buffered, so a slow subscriber costs bounded memory
//! whatever the write rate (RethinkDB's `changefeed_queue_size`, whose overflow it reports the
//! same way). The first change after a take rings `ready` once, so the subscriber is woken once
//! per batch, not once per change.

use std::collections::VecDeque;
use std::sync::Mutex;

use crate::doc::Doc;
use crate::key::Key;

/// One change: the document's key, its version before (None: it did not exist) and after
/// (None: deleted).
#[derive(Clone, Debug)]
pub struct FeedChange {
    pub key: Key,
    pub old: Option<Doc>,
    pub new: Option<Doc>,
}

/// What a take returns: the changes in commit order, how many were dropped before the first of
/// them because the queue was full, and whether the feed ended (its table was dropped, or the
/// database closed).
#[derive(Debug, Default)]
pub struct FeedBatch {
    pub changes: Vec<FeedChange>,
    pub skipped: u64,
    pub closed: bool,
}

pub(crate) struct Feed {
    capacity: usize,
    ready: Box<dyn Fn() + Send + Sync>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    queue: VecDeque<FeedChange>,
    /// Dropped since the last take.
    skipped: u64,
    /// `ready` was called and no take followed yet.
    rung: bool,
    closed: bool,
}

impl Feed {
    pub fn new(capacity: usize, ready: Box<dyn Fn() + Send + Sync>) -> Feed {
        Feed { capacity: capacity.max(1), ready, state: Mutex::default() }
    }

    /// Queues a change (or counts it skipped when the queue is full); rings once per batch.
    pub fn push(&self, change: FeedChange) {
        let ring = {
            let mut s = self.state.lock().unwrap();
            if s.closed {
                return;
            }
            if s.queue.len() < self.capacity {
                s.queue.push_back(change);
            } else {
                s.skipped += 1;
            }
            !std::mem::replace(&mut s.rung, true)
        };
        if ring {
            (self.ready)();
        }
    }

    /// Takes up to `max` changes; the next push rings again. After a ring, take until a batch
    /// comes back empty.
    pub fn take(&self, max: usize) -> FeedBatch {
        let mut s = self.state.lock().unwrap();
        let n = max.min(s.queue.len());
        let changes: Vec<FeedChange> = s.queue.drain(..n).collect();
        // Skipped changes came after those still queued: report them once the queue is empty.
        let skipped = if s.queue.is_empty() { std::mem::take(&mut s.skipped) } else { 0 };
        s.rung = false;
        FeedBatch { changes, skipped, closed: s.closed && s.queue.is_empty() }
    }

    /// Ends the feed: what is queued can still be taken, nothing more is queued.
    pub fn close(&self) {
        let ring = {
            let mut s = self.state.lock().unwrap();
            s.closed = true;
            !std::mem::replace(&mut s.rung, true)
        };
        if ring {
            (self.ready)();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::sync::Arc;

    fn change(i: u32) -> FeedChange {
        FeedChange { key: Key::from(i as f64), old: None, new: Some(Doc::from(format!("{{\"id\":{i}}}"))) }
    }

    #[test]
    fn bounded_rings_once_per_batch_and_counts_what_it_drops() {
        let rings = Arc::new(AtomicUsize::new(0));
        let r = rings.clone();
        let feed = Feed::new(3, Box::new(move || _ = r.fetch_add(1, SeqCst)));
        for i in 0..5 {
            feed.push(change(i));
        }
        assert_eq!(rings.load(SeqCst), 1);
        let first = feed.take(2);
        assert_eq!(first.changes.len(), 2);
        assert_eq!(first.skipped, 0, "skips are reported after the changes queued before them");
        let second = feed.take(10);
        assert_eq!(second.changes.iter().map(|c| c.key.clone()).collect::<Vec<_>>(), vec![Key::from(2.0)]);
        assert_eq!(second.skipped, 2);
        feed.push(change(9));
        assert_eq!(rings.load(SeqCst), 2, "a push after a take that emptied the queue rings again");
        feed.close();
        feed.push(change(10));
        let last = feed.take(10);
        assert_eq!(last.changes.len(), 1);
        assert!(last.closed);
    }
}
