//! A pass on the caller's tokio worker thread (`QuickJsOptions::with_caller_thread`).
//!
//! The pass starts inline: most passes end well within a millisecond, and handing the
//! worker's queue to another thread up front cost more than many of them take. Before a pass
//! could hold the thread for long, it hands the worker's other tasks to another thread with
//! `block_in_place`:
//! - around each wait for a host call that is not ready yet (a network call, say);
//! - once its JavaScript has run for [`INLINE_BUDGET`], from the interrupt handler. The
//!   worker moves when a blocking-pool thread picks it up, so the handler waits [`SETTLE`]
//!   for that, and tries again every [`RETRY`] for as long as the pass runs (once the worker
//!   has moved, a try costs only the wait).

use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

/// How long a pass's JavaScript may hold the worker before its other tasks move away.
pub(crate) const INLINE_BUDGET: Duration = Duration::from_millis(1);
/// How often a pass still running past the budget tries the hand-off again.
pub(crate) const RETRY: Duration = Duration::from_millis(2);
/// How long one try leaves a blocking-pool thread to pick the worker up.
pub(crate) const SETTLE: Duration = Duration::from_micros(100);

/// The pass's hold on the caller's worker thread. Made only where `block_in_place` is
/// allowed (a multi-thread runtime's worker or `block_on` thread): elsewhere it panics.
pub(crate) struct CallerThread {
    started: Instant,
    /// Nanoseconds after `started` before which the interrupt handler does not try.
    next_try_ns: AtomicU64,
}

impl CallerThread {
    /// A pass starting now.
    pub(crate) fn new() -> Self {
        CallerThread {
            started: Instant::now(),
            next_try_ns: AtomicU64::new(INLINE_BUDGET.as_nanos() as u64),
        }
    }

    /// From the interrupt handler: past the budget, moves the worker's other tasks away.
    pub(crate) fn tick(&self) {
        let elapsed = self.started.elapsed().as_nanos() as u64;
        if elapsed < self.next_try_ns.load(Ordering::Relaxed) {
            return;
        }
        self.next_try_ns
            .store(elapsed + RETRY.as_nanos() as u64, Ordering::Relaxed);
        self.blocking(|| thread::sleep(SETTLE));
    }

    /// Runs `wait`, which blocks this thread, with the worker's other tasks moved away.
    pub(crate) fn blocking<R>(&self, wait: impl FnOnce() -> R) -> R {
        tokio::task::block_in_place(wait)
    }
}
