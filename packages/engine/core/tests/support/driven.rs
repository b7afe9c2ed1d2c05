//! A database whose committer a test drives: a manual clock (no deadline passes unless the test
//! advances it) and sync points where the test holds the committer and lets it go one step at a
//! time. Every wait here is bounded ([`NEVER`]) so that a test fails instead of hanging; the
//! bound only fires on a bug, it is not a timing assertion.

use std::collections::{HashMap, HashSet};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use wharf_engine::io::{SimVfs, Vfs};
use wharf_engine::testing::{CommitterHooks, ManualClock, SyncPoint};
use wharf_engine::{CommitterWait, Database, Options};

use super::NEVER;

#[derive(Default)]
struct GateState {
    /// Points where the committer stops until passed.
    hold: HashSet<SyncPoint>,
    /// Where it is stopped now.
    held_at: Option<SyncPoint>,
    /// Passes granted and not yet used.
    passes: u32,
    /// Every point reached, in order (since `take_seen`).
    seen: Vec<SyncPoint>,
    /// Times each point was reached.
    reached: HashMap<SyncPoint, usize>,
}

/// The sync-point hook's state, shared by the committer thread and the test.
#[derive(Default)]
pub struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

impl Gate {
    fn on_point(&self, point: SyncPoint) {
        let mut s = self.state.lock().unwrap();
        s.seen.push(point);
        *s.reached.entry(point).or_default() += 1;
        self.changed.notify_all();
        if !s.hold.contains(&point) {
            return;
        }
        s.held_at = Some(point);
        self.changed.notify_all();
        while s.passes == 0 && s.hold.contains(&point) {
            s = self.changed.wait(s).unwrap();
        }
        s.passes = s.passes.saturating_sub(1);
        s.held_at = None;
        self.changed.notify_all();
    }

    /// From now on the committer stops at `point`.
    pub fn hold(&self, point: SyncPoint) {
        self.state.lock().unwrap().hold.insert(point);
    }

    /// Stops holding anywhere, and lets a held committer go.
    pub fn release_all(&self) {
        let mut s = self.state.lock().unwrap();
        s.hold.clear();
        self.changed.notify_all();
    }

    /// Waits until the committer is held at `point`.
    pub fn wait_held(&self, point: SyncPoint) {
        let s = self.state.lock().unwrap();
        let (s, timeout) = self.changed.wait_timeout_while(s, NEVER, |s| s.held_at != Some(point)).unwrap();
        assert!(!timeout.timed_out(), "the committer never stopped at {point:?}; it reached {:?}", s.seen);
    }

    /// Lets the committer, held at `point`, go on; returns once it left.
    pub fn pass(&self, point: SyncPoint) {
        self.wait_held(point);
        let mut s = self.state.lock().unwrap();
        s.passes += 1;
        self.changed.notify_all();
        let (_s, timeout) = self.changed.wait_timeout_while(s, NEVER, |s| s.passes > 0).unwrap();
        assert!(!timeout.timed_out(), "the committer did not leave {point:?}");
    }

    /// Times the committer reached `point` so far.
    pub fn reached(&self, point: SyncPoint) -> usize {
        self.state.lock().unwrap().reached.get(&point).copied().unwrap_or(0)
    }

    /// Waits until the committer reached `point` more than `times` times.
    pub fn wait_reached(&self, point: SyncPoint, times: usize) {
        let s = self.state.lock().unwrap();
        let below = |s: &mut GateState| s.reached.get(&point).copied().unwrap_or(0) <= times;
        let (s, timeout) = self.changed.wait_timeout_while(s, NEVER, below).unwrap();
        assert!(!timeout.timed_out(), "the committer never reached {point:?} again; it reached {:?}", s.seen);
    }

    /// Every point reached so far, and forgets them.
    pub fn take_seen(&self) -> Vec<SyncPoint> {
        std::mem::take(&mut self.state.lock().unwrap().seen)
    }
}

pub struct Driven {
    pub db: Database,
    pub clock: Arc<ManualClock>,
    pub gate: Arc<Gate>,
}

/// A failing test must not hang in the database's close: let the committer go, and pass every
/// deadline it waits for.
impl Drop for Driven {
    fn drop(&mut self) {
        self.gate.release_all();
        self.clock.advance(Duration::from_secs(3600));
    }
}

/// Options for a driven database: no spinning (a spin ends by the clock or a yield count, so
/// the committer would leave it on its own), the default group-commit window.
pub fn driven_options(base: Options) -> Options {
    Options { committer_wait: CommitterWait { spin: Duration::ZERO, ..CommitterWait::default() }, ..base }
}

/// Opens a driven database on `vfs`, its committer held at its first `Idle`.
pub fn open_driven(vfs: &Arc<SimVfs>, options: Options) -> Driven {
    let clock = ManualClock::new();
    let gate = Arc::new(Gate::default());
    gate.hold(SyncPoint::Idle);
    let g = gate.clone();
    let hooks = CommitterHooks { clock: Arc::new(clock.clone()), sync_point: Some(Arc::new(move |p| g.on_point(p))) };
    let dir: Arc<dyn Vfs> = Arc::new(vfs.clone());
    let db = Database::open_with_hooks(dir, driven_options(options), hooks).unwrap();
    Driven { db, clock, gate }
}

/// Receives one answer, or fails the test after `NEVER`.
pub fn answer<T>(rx: &Receiver<T>, what: &str) -> T {
    rx.recv_timeout(NEVER).unwrap_or_else(|_| panic!("no answer to {what} within {NEVER:?}"))
}

/// A callback that sends its outcome on a channel.
pub fn to_channel<T: Send + 'static>() -> (wharf_engine::Callback<T>, Receiver<wharf_engine::Result<T>>) {
    let (tx, rx) = mpsc::channel();
    (
        Box::new(move |r| {
            let _ = tx.send(r); // the test may have failed and gone
        }),
        rx,
    )
}
