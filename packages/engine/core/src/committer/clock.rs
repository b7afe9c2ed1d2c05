//! The committer's only source of time. Every decision that depends on time (how long to spin,
//! when a gathering gives up, when soft writes are due on disk, how long pacing waits) asks a
//! [`Clock`], so a test can replace it with a [`ManualClock`] that moves only when told.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// A source of time for the committer.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> Instant;
    /// Waits `d` (pacing's delay between groups).
    fn sleep(&self, d: Duration);
    /// Called once at open with a function that wakes the committer, so a clock that jumps
    /// ahead ([`ManualClock::advance`]) can make it look at its deadlines again.
    fn on_advance(&self, _wake: Box<dyn Fn() + Send + Sync>) {}
}

/// The real clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d)
    }
}

/// A clock for tests: it stands still until [`ManualClock::advance`] moves it, so no deadline of
/// the committer passes unless the test says so. `sleep` moves it by the time slept.
pub struct ManualClock {
    origin: Instant,
    elapsed: Mutex<Duration>,
    wake: OnceLock<Box<dyn Fn() + Send + Sync>>,
}

impl ManualClock {
    pub fn new() -> Arc<ManualClock> {
        Arc::new(ManualClock { origin: Instant::now(), elapsed: Mutex::new(Duration::ZERO), wake: OnceLock::new() })
    }

    /// Moves the clock forward by `d` and wakes the committer to look at its deadlines.
    pub fn advance(&self, d: Duration) {
        *self.elapsed.lock().unwrap() += d;
        if let Some(wake) = self.wake.get() {
            wake();
        }
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.origin + *self.elapsed.lock().unwrap()
    }
    fn sleep(&self, d: Duration) {
        *self.elapsed.lock().unwrap() += d;
    }
    fn on_advance(&self, wake: Box<dyn Fn() + Send + Sync>) {
        let _ = self.wake.set(wake);
    }
}

/// Lets a shared clock be handed to the committer as `Arc<dyn Clock>` while the test keeps its
/// `Arc<ManualClock>`.
impl<C: Clock> Clock for Arc<C> {
    fn now(&self) -> Instant {
        (**self).now()
    }
    fn sleep(&self, d: Duration) {
        (**self).sleep(d)
    }
    fn on_advance(&self, wake: Box<dyn Fn() + Send + Sync>) {
        (**self).on_advance(wake)
    }
}
