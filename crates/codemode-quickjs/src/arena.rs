//! A sandbox's memory: one reserved span of address space that a QuickJS runtime allocates
//! from, and nothing else does. Because everything the runtime holds lies in that span (the
//! allocator's own state included), the span's used part can be copied out once, when the
//! runtime is fresh ([`Arena::snapshot`]), and copied back after each pass
//! ([`Arena::restore`]): the next pass finds the runtime exactly as it was made.
//!
//! The allocator is `talc` working inside the span; each block carries a 16-byte header with
//! its size (QuickJS asks for the usable size of what it holds). The heap grows in steps from
//! the start of the span, so a snapshot is as long as the heap was when it was taken.

use std::alloc::Layout;
use std::ptr::{self, NonNull};
use std::sync::Arc;

use rquickjs::allocator::Allocator;
use talc::{OomHandler, Span, Talc};

use crate::memory::MemoryGauge;

/// Bytes before each block: its size.
const HEADER: usize = 16;
/// Every block's alignment, as `malloc`'s.
const ALIGN: usize = 16;
/// The least the heap grows by.
const GROWTH: usize = 64 * 1024;
const PAGE: usize = 4096;
/// Memory a pass used beyond the snapshot is given back to the system above this much.
const KEEP_DIRTY: usize = 1024 * 1024;
/// A freed block this large gives its whole pages back to the system at once, as `malloc`
/// gives back a large block's mapping: what a pass holds stays what it uses.
const GIVE_BACK: usize = 256 * 1024;

fn round_up(n: usize, to: usize) -> usize {
    n.div_ceil(to).saturating_mul(to)
}

/// Grows the heap within the span when `talc` runs out.
struct Grow {
    /// The heap so far (empty before the first allocation).
    heap: Span,
    /// Where the heap may start and must end.
    start: *mut u8,
    end: *mut u8,
}

impl OomHandler for Grow {
    fn handle_oom(talc: &mut Talc<Self>, layout: Layout) -> Result<(), ()> {
        let handler = &talc.oom_handler;
        let (start, end) = (handler.start as usize, handler.end as usize);
        let (base, acme) = match handler.heap.get_base_acme() {
            Some((b, a)) => (b as usize, a as usize),
            None => (start, start),
        };
        // Room for the block and talc's tags, at least a step, at least a quarter more.
        let need = layout
            .size()
            .saturating_add(layout.align())
            .saturating_add(64);
        let grow = round_up(need.max(GROWTH).max((acme - base) / 4), PAGE);
        let new_acme = acme.saturating_add(grow).min(end);
        if new_acme <= acme {
            return Err(());
        }
        let old = handler.heap;
        // SAFETY: the new span lies within the reserved, writable span, above the heap so
        // far (or is the first heap), and nothing else uses it.
        let heap = unsafe {
            if old.is_empty() {
                talc.claim(Span::new(start as *mut u8, new_acme as *mut u8))?
            } else {
                talc.extend(old, Span::new(base as *mut u8, new_acme as *mut u8))
            }
        };
        if heap == old {
            return Err(());
        }
        talc.oom_handler.heap = heap;
        Ok(())
    }
}

/// Address space reserved for one runtime, at a fixed place for its lifetime.
pub(crate) struct Arena {
    base: NonNull<u8>,
    capacity: usize,
}

// SAFETY: the span is plain memory; who may touch it when is the holders' discipline (one
// runtime, used by one thread at a time).
unsafe impl Send for Arena {}
// SAFETY: as above; the arena itself has no interior state.
unsafe impl Sync for Arena {}

impl Drop for Arena {
    fn drop(&mut self) {
        // SAFETY: the span was mapped by `reserve` with this length and is unmapped once.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.capacity) };
    }
}

/// A copy of an arena's used part and what its gauge counted then.
pub(crate) struct Snapshot {
    bytes: Vec<u8>,
    used: usize,
}

impl Snapshot {
    /// How many bytes it holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.bytes.len()
    }
}

impl Arena {
    /// Reserves `capacity` bytes of address space (pages are taken from the system only when
    /// written); `None` if the system refuses.
    pub(crate) fn reserve(capacity: usize) -> Option<Arc<Arena>> {
        let capacity = round_up(capacity.max(4 * GROWTH), PAGE);
        // SAFETY: an anonymous private mapping with no address hint; checked below.
        let mapped = unsafe {
            libc::mmap(
                ptr::null_mut(),
                capacity,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if mapped == libc::MAP_FAILED {
            return None;
        }
        let base = NonNull::new(mapped.cast::<u8>())?;
        let heap_start = round_up(std::mem::size_of::<Talc<Grow>>(), 64);
        // SAFETY: the mapping is writable, page-aligned (so aligned for `Talc`) and longer
        // than the allocator's state, which is written there before anything reads it.
        unsafe {
            let start = base.as_ptr().add(heap_start);
            let end = base.as_ptr().add(capacity);
            base.as_ptr().cast::<Talc<Grow>>().write(Talc::new(Grow {
                heap: Span::empty(),
                start,
                end,
            }));
        }
        Some(Arc::new(Arena { base, capacity }))
    }

    fn talc(&self) -> *mut Talc<Grow> {
        self.base.as_ptr().cast()
    }

    /// The end of the used part: the allocator's state and heap lie below it.
    fn acme(&self) -> usize {
        // SAFETY: the allocator's state was written by `reserve`; this reads one field while
        // no allocation runs (the arena's runtime is used by one thread at a time).
        let grow = unsafe { &(*self.talc()).oom_handler };
        match grow.heap.get_base_acme() {
            Some((_, acme)) => acme as usize,
            None => grow.start as usize,
        }
    }

    /// Copies out the used part, with the gauge's count.
    pub(crate) fn snapshot(&self, gauge: &MemoryGauge) -> Snapshot {
        let len = self.acme() - self.base.as_ptr() as usize;
        let mut bytes = Vec::with_capacity(len);
        // SAFETY: `len` bytes from the base are mapped and initialised (written by the
        // allocator or zero from the mapping); nothing writes them during the copy.
        unsafe {
            ptr::copy_nonoverlapping(self.base.as_ptr(), bytes.as_mut_ptr(), len);
            bytes.set_len(len);
        }
        Snapshot {
            bytes,
            used: gauge.used(),
        }
    }

    /// Puts the arena back as `snapshot` found it and resets `gauge` to its count. Memory the
    /// pass took beyond the snapshot goes back to the system when it is more than a little.
    ///
    /// # Safety
    /// `snapshot` was taken of this arena, and nothing refers to memory in the arena that was
    /// allocated after it: every value of the pass is dropped, and no runtime call is running.
    pub(crate) unsafe fn restore(&self, snapshot: &Snapshot, gauge: &MemoryGauge) {
        let acme = self.acme();
        let base = self.base.as_ptr();
        let len = snapshot.bytes.len();
        // SAFETY: the snapshot is no longer than the arena; the caller vouches for the rest.
        unsafe { ptr::copy_nonoverlapping(snapshot.bytes.as_ptr(), base, len) };
        let keep_to = round_up(base as usize + len, PAGE);
        if acme > keep_to + KEEP_DIRTY {
            // SAFETY: the range is page-aligned, inside the mapping and above everything the
            // restored heap holds; its pages read as zero again if the heap grows back.
            unsafe {
                libc::madvise(
                    keep_to as *mut libc::c_void,
                    acme - keep_to,
                    libc::MADV_DONTNEED,
                )
            };
        }
        gauge.reset(snapshot.used);
    }

    /// The size of a block this arena's allocator returned.
    ///
    /// # Safety
    /// `ptr` was returned by an [`ArenaAllocator`] and not freed.
    pub(crate) unsafe fn block_size(ptr: *const u8) -> usize {
        // SAFETY: every block is preceded by its header, written when it was allocated.
        unsafe { ptr.sub(HEADER).cast::<usize>().read() }
    }
}

/// QuickJS's allocator for one arena: counts into a [`MemoryGauge`] and refuses what would
/// pass its limit, or what the arena cannot hold.
pub(crate) struct ArenaAllocator {
    arena: Arc<Arena>,
    gauge: MemoryGauge,
    limit: usize,
}

impl ArenaAllocator {
    /// An allocator in `arena` holding at most `limit` bytes (0: as much as the arena holds).
    pub(crate) fn new(arena: Arc<Arena>, gauge: MemoryGauge, limit: usize) -> Self {
        ArenaAllocator {
            arena,
            gauge,
            limit,
        }
    }

    fn talc(&mut self) -> &mut Talc<Grow> {
        // SAFETY: the state was written by `Arena::reserve`; `&mut self` is the one user.
        unsafe { &mut *self.arena.talc() }
    }

    fn layout(size: usize) -> Option<Layout> {
        Layout::from_size_align(size.checked_add(HEADER)?, ALIGN).ok()
    }

    /// A new block of `size` bytes (counted), or null.
    fn take(&mut self, size: usize) -> *mut u8 {
        let Some(layout) = Self::layout(size) else {
            self.gauge.exhaust();
            return ptr::null_mut();
        };
        // SAFETY: the layout's size is at least `HEADER`, so nonzero.
        match unsafe { self.talc().malloc(layout) } {
            Ok(block) => {
                // SAFETY: the block holds `HEADER + size` bytes, aligned for a `usize`.
                unsafe {
                    block.as_ptr().cast::<usize>().write(size);
                    self.gauge.add(size);
                    block.as_ptr().add(HEADER)
                }
            }
            Err(()) => {
                self.gauge.exhaust();
                ptr::null_mut()
            }
        }
    }
}

/// Gives the whole pages inside a freed block back to the system. The allocator keeps its
/// records of a free block at the block's two ends, outside those pages; the pages read as
/// zeros when the block is used again, which a new block's contents may be.
fn give_back(start: usize, size: usize) {
    let from = round_up(start + PAGE, PAGE);
    let to = (start + size).saturating_sub(PAGE) & !(PAGE - 1);
    if to > from {
        // SAFETY: the range is page-aligned, inside a freed block of the mapping, and holds
        // none of the allocator's records.
        unsafe { libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_DONTNEED) };
    }
}

// SAFETY: every block comes from `talc` in the arena with the layout its header records, and
// is freed or resized with that same layout.
unsafe impl Allocator for ArenaAllocator {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        if !self.gauge.reserve(size, self.limit) {
            return ptr::null_mut();
        }
        self.take(size)
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        let Some(total) = count.checked_mul(size) else {
            self.gauge.exhaust();
            return ptr::null_mut();
        };
        if !self.gauge.reserve(total, self.limit) {
            return ptr::null_mut();
        }
        let block = self.take(total);
        if !block.is_null() {
            // SAFETY: the block holds `total` bytes.
            unsafe { ptr::write_bytes(block, 0, total) };
        }
        block
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        if ptr.is_null() {
            return;
        }
        // SAFETY: the caller passes a block of this allocator.
        let size = unsafe { Arena::block_size(ptr) };
        self.gauge.sub(size);
        if let Some(layout) = Self::layout(size) {
            // SAFETY: the block starts `HEADER` bytes earlier and was allocated with `layout`.
            unsafe {
                self.talc()
                    .free(NonNull::new_unchecked(ptr.sub(HEADER)), layout)
            };
            if size >= GIVE_BACK {
                give_back(ptr as usize, size);
            }
        }
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        if ptr.is_null() {
            return self.alloc(new_size);
        }
        if new_size == 0 {
            // SAFETY: as `dealloc`'s.
            unsafe { self.dealloc(ptr) };
            return ptr::null_mut();
        }
        // SAFETY: the caller passes a block of this allocator.
        let old = unsafe { Arena::block_size(ptr) };
        let (Some(old_layout), Some(new_layout)) = (Self::layout(old), Self::layout(new_size))
        else {
            self.gauge.exhaust();
            return ptr::null_mut();
        };
        // SAFETY: the block starts `HEADER` bytes before `ptr`.
        let block = unsafe { NonNull::new_unchecked(ptr.sub(HEADER)) };
        if new_size <= old {
            // SAFETY: shrinking in place to a nonzero size no larger than the block.
            unsafe {
                self.talc().shrink(block, old_layout, new_layout.size());
                block.as_ptr().cast::<usize>().write(new_size);
            }
            self.gauge.sub(old - new_size);
            return ptr;
        }
        if !self.gauge.reserve(new_size - old, self.limit) {
            return ptr::null_mut();
        }
        // SAFETY: growing a block of `old_layout` to a larger size; on success the old block
        // is moved or extended, and its header rewritten.
        match unsafe { self.talc().grow(block, old_layout, new_layout.size()) } {
            // SAFETY: `moved` is the grown block, at least `HEADER + new_size` bytes and aligned
            // for `usize`; the header is rewritten before the caller sees the block.
            Ok(moved) => unsafe {
                moved.as_ptr().cast::<usize>().write(new_size);
                self.gauge.add(new_size - old);
                moved.as_ptr().add(HEADER)
            },
            Err(()) => {
                self.gauge.exhaust();
                ptr::null_mut()
            }
        }
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        if ptr.is_null() {
            return 0;
        }
        // SAFETY: the caller passes a block of this allocator.
        unsafe { Arena::block_size(ptr) }
    }
}
