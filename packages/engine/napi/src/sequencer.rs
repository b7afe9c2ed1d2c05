//! Hands requests to the engine in the order JS made them.
//!
//! Batches of 64 KiB or more are parsed on the libuv pool, several at once, and finish in any
//! order; everything else is handed over on the JS thread at once. Each request takes a
//! [`Ticket`] on the JS thread, in call order, and is handed over only after every earlier
//! ticket was: a request made while an earlier batch is still being parsed waits here, and the
//! thread that hands over that batch hands it over too.
//!
//! Why: users write `insertNdjson(a); insertNdjson(b)` and expect `b` to win where they overlap,
//! and a `sync()` made after them to cover both. It also keeps an import's keys in order, which
//! the memtable appends cheaply (`core/src/memtable.rs`): with 4 batches parsed at once, a third
//! of a sequential-key load had arrived out of order.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard};

type HandOver = Box<dyn FnOnce() + Send>;

#[derive(Default)]
pub struct Sequencer {
    /// Tickets taken so far. Taken on the JS thread only, so their order is the calls' order
    /// without the lock: the JS thread never waits for a pool thread handing a batch over (it
    /// once waited 14 ms here, the pool thread preempted while holding the lock).
    issued: AtomicU64,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The ticket whose request is handed over next.
    next: u64,
    /// Requests ready before their turn, by ticket.
    waiting: BTreeMap<u64, HandOver>,
}

impl Sequencer {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The next ticket. Take it on the JS thread, when the call is made.
    pub fn ticket(self: &Arc<Self>) -> Ticket {
        let number = self.issued.fetch_add(1, Relaxed);
        Ticket { order: self.clone(), number, used: false }
    }

    /// Hands a request made now (on the JS thread) over in its turn: at once unless an earlier
    /// one is still parsed.
    pub fn hand_over(&self, request: impl FnOnce() + Send + 'static) {
        let number = self.issued.fetch_add(1, Relaxed);
        self.lock().arrive(number, request);
    }
}

impl State {
    /// Runs `request` if it is ticket `number`'s turn (then every waiting one whose turn follows),
    /// else keeps it. Called under the lock, so two threads cannot run their turns out of order.
    fn arrive(&mut self, number: u64, request: impl FnOnce() + Send + 'static) {
        if number != self.next {
            self.waiting.insert(number, Box::new(request));
            return;
        }
        request();
        self.next += 1;
        while let Some(request) = self.waiting.remove(&self.next) {
            request();
            self.next += 1;
        }
    }
}

/// A place in the order. Dropped unused (a task that never ran), it gives its turn up, so later
/// requests are not held forever.
pub struct Ticket {
    order: Arc<Sequencer>,
    number: u64,
    used: bool,
}

impl Ticket {
    /// Runs `request` (which hands something to the engine) once every earlier ticket's has run.
    pub fn hand_over(mut self, request: impl FnOnce() + Send + 'static) {
        self.used = true;
        self.order.lock().arrive(self.number, request);
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if !self.used {
            self.order.lock().arrive(self.number, || {});
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_into(log: &Arc<Mutex<Vec<u32>>>, n: u32) -> impl FnOnce() + Send + 'static {
        let log = log.clone();
        move || log.lock().unwrap().push(n)
    }

    #[test]
    fn requests_are_handed_over_in_ticket_order_whenever_they_are_ready() {
        let order = Arc::new(Sequencer::default());
        let log = Arc::new(Mutex::new(Vec::new()));
        let (t0, t1, t2) = (order.ticket(), order.ticket(), order.ticket());
        t2.hand_over(log_into(&log, 2));
        order.hand_over(log_into(&log, 3));
        t1.hand_over(log_into(&log, 1));
        assert!(log.lock().unwrap().is_empty(), "nothing before the first ticket's turn");
        t0.hand_over(log_into(&log, 0));
        order.hand_over(log_into(&log, 4));
        assert_eq!(*log.lock().unwrap(), vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn a_ticket_dropped_unused_gives_up_its_turn() {
        let order = Arc::new(Sequencer::default());
        let log = Arc::new(Mutex::new(Vec::new()));
        let t0 = order.ticket();
        order.hand_over(log_into(&log, 1));
        drop(t0);
        assert_eq!(*log.lock().unwrap(), vec![1]);
    }
}
