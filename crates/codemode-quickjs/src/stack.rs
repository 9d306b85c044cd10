//! How much native stack the current thread has left.

/// Bytes of stack below the current frame, or `None` where it cannot be told.
#[cfg(target_os = "linux")]
pub(crate) fn remaining() -> Option<usize> {
    use std::cell::Cell;
    thread_local! {
        /// The lowest address of this thread's stack, once looked up (it never moves).
        static STACK_LOW: Cell<Option<usize>> = const { Cell::new(None) };
    }
    let low = match STACK_LOW.with(Cell::get) {
        Some(low) => low,
        None => {
            let low = stack_low()?;
            STACK_LOW.with(|c| c.set(Some(low)));
            low
        }
    };
    let marker = 0u8;
    let here = std::ptr::addr_of!(marker) as usize;
    here.checked_sub(low)
}

/// The lowest address of the current thread's stack (its guard page excluded or not, the
/// difference is a page).
#[cfg(target_os = "linux")]
fn stack_low() -> Option<usize> {
    // SAFETY: `attr` is initialised by `pthread_getattr_np` before it is read and destroyed
    // once; the out-pointers are valid locals.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let mut addr: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let found = libc::pthread_attr_getstack(&attr, &mut addr, &mut size) == 0;
        libc::pthread_attr_destroy(&mut attr);
        (found && !addr.is_null()).then_some(addr as usize)
    }
}

/// Bytes of stack below the current frame, or `None` where it cannot be told.
#[cfg(not(target_os = "linux"))]
pub(crate) fn remaining() -> Option<usize> {
    None
}
