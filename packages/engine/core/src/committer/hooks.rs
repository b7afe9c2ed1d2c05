//! Sync points: named places in the committer's state machine where a test can observe it or
//! hold it (as RocksDB's `TEST_SYNC_POINT`). Always compiled in: each is one branch on an
//! `Option` that is `None` outside tests.

use std::sync::Arc;

use super::clock::{Clock, SystemClock};

/// Where the committer is. The hook runs on the committer thread; blocking in it holds the
/// committer there (requests keep queueing meanwhile), except at `Parking`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SyncPoint {
    /// Idle, with nothing queued: about to spin or park until a request arrives.
    Idle,
    /// A group was opened with every request queued at that moment, now applied.
    GroupOpened,
    /// Gathering: about to wait for the rest of a cohort of hard writers, its deadline fixed.
    Gathering,
    /// About to park on the condvar, the queue locked: a request queued after this point finds
    /// the committer parked. Observe only: holding it here would block every submitter.
    Parking,
    /// The group's soft writes are answered; about to write the group to the journal.
    Writing,
    /// The group is written; about to fdatasync it.
    Syncing,
    /// The group's durable answers are sent.
    Committed,
    /// Closed: the final checkpoint is done and every request answered. The last point.
    Closed,
}

/// What a test injects into a database's committer at open.
#[derive(Clone)]
pub struct CommitterHooks {
    pub clock: Arc<dyn Clock>,
    pub sync_point: Option<Arc<dyn Fn(SyncPoint) + Send + Sync>>,
}

impl Default for CommitterHooks {
    fn default() -> Self {
        CommitterHooks { clock: Arc::new(SystemClock), sync_point: None }
    }
}
