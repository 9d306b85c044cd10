//! Counts what a sandbox allocates, so that reaching the memory limit ends the pass.
//!
//! QuickJS enforces a limit itself, but only by throwing an ordinary `InternalError` that
//! model code could catch and go on. So this allocator enforces the configured limit (QuickJS
//! is given a little more, as a backstop) and, when it refuses an allocation, marks the gauge
//! exhausted; the interrupt handler then stops the pass for good.

use rquickjs::allocator::{Allocator, RustAllocator};
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

    /// Takes `size` more bytes if that stays within `limit`; otherwise marks the gauge exhausted.
    fn reserve(&self, size: usize, limit: usize) -> bool {
        if limit > 0 && self.0.used.load(Ordering::Relaxed).saturating_add(size) > limit {
            self.0.exhausted.store(true, Ordering::Relaxed);
            return false;
        }
        true
    }
}

/// Rust's allocator, counting into a [`MemoryGauge`].
pub(crate) struct CountingAllocator {
    inner: RustAllocator,
    gauge: MemoryGauge,
    limit: usize,
}

impl CountingAllocator {
    /// An allocator holding at most `limit` bytes (0: no limit), counting into `gauge`.
    pub(crate) fn new(gauge: MemoryGauge, limit: usize) -> Self {
        CountingAllocator {
            inner: RustAllocator,
            gauge,
            limit,
        }
    }

    fn added(&self, ptr: *mut u8) -> *mut u8 {
        if !ptr.is_null() {
            // SAFETY: `ptr` was just returned by `RustAllocator`.
            let size = unsafe { RustAllocator::usable_size(ptr) };
            self.gauge.0.used.fetch_add(size, Ordering::Relaxed);
        }
        ptr
    }
}

// SAFETY: every call is forwarded to `RustAllocator`, which upholds the contract; this type
// only counts.
unsafe impl Allocator for CountingAllocator {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        if !self.gauge.reserve(size, self.limit) {
            return std::ptr::null_mut();
        }
        let ptr = self.inner.alloc(size);
        self.added(ptr)
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        if !self.gauge.reserve(count.saturating_mul(size), self.limit) {
            return std::ptr::null_mut();
        }
        let ptr = self.inner.calloc(count, size);
        self.added(ptr)
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        if !ptr.is_null() {
            // SAFETY: the caller passes a pointer this allocator returned.
            let size = unsafe { RustAllocator::usable_size(ptr) };
            self.gauge.0.used.fetch_sub(size, Ordering::Relaxed);
        }
        // SAFETY: as above.
        unsafe { self.inner.dealloc(ptr) }
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        let old = if ptr.is_null() {
            0
        } else {
            // SAFETY: the caller passes a pointer this allocator returned.
            unsafe { RustAllocator::usable_size(ptr) }
        };
        if new_size > old && !self.gauge.reserve(new_size - old, self.limit) {
            return std::ptr::null_mut();
        }
        // SAFETY: as above.
        let new = unsafe { self.inner.realloc(ptr, new_size) };
        if !new.is_null() {
            self.gauge.0.used.fetch_sub(old, Ordering::Relaxed);
            self.added(new);
        }
        new
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        // SAFETY: the caller passes a pointer this allocator returned.
        unsafe { RustAllocator::usable_size(ptr) }
    }
}
