//! Counts what a sandbox allocates, so that reaching the memory limit ends the pass.
//!
//! QuickJS enforces a limit itself, but only by throwing an ordinary `InternalError` that
//! model code could catch and go on. So this allocator alone enforces the configured limit
//! (QuickJS's own is off, so that every refusal is seen here) and, when it refuses an
//! allocation, marks the gauge exhausted; the pass then ends for good, at the interrupt
//! handler's next check or before anything else leaves it (a host call, a console line, the
//! result). The allocator itself is [`crate::arena::ArenaAllocator`].

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// What one runtime holds, shared with its interrupt handler.
#[derive(Debug, Clone, Default)]
pub(crate) struct MemoryGauge(Arc<GaugeState>);

#[derive(Debug, Default)]
struct GaugeState {
    used: AtomicUsize,
    exhausted: AtomicBool,
}

impl MemoryGauge {
    /// Whether an allocation was refused for the limit: the pass must end.
    pub(crate) fn exhausted(&self) -> bool {
        self.0.exhausted.load(Ordering::Relaxed)
    }

    /// Whether `size` more bytes stay within `limit`; if not, marks the gauge exhausted.
    pub(crate) fn reserve(&self, size: usize, limit: usize) -> bool {
        if limit > 0 && self.0.used.load(Ordering::Relaxed).saturating_add(size) > limit {
            self.0.exhausted.store(true, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Counts `size` bytes allocated.
    pub(crate) fn add(&self, size: usize) {
        self.0.used.fetch_add(size, Ordering::Relaxed);
    }

    /// Counts `size` bytes freed.
    pub(crate) fn sub(&self, size: usize) {
        self.0.used.fetch_sub(size, Ordering::Relaxed);
    }

    /// Marks the gauge exhausted: an allocation failed for want of room.
    pub(crate) fn exhaust(&self) {
        self.0.exhausted.store(true, Ordering::Relaxed);
    }

    /// How many bytes are held now.
    pub(crate) fn used(&self) -> usize {
        self.0.used.load(Ordering::Relaxed)
    }

    /// Sets the count to `used` and clears the exhausted mark (the runtime was restored).
    pub(crate) fn reset(&self, used: usize) {
        self.0.used.store(used, Ordering::Relaxed);
        self.0.exhausted.store(false, Ordering::Relaxed);
    }
}
