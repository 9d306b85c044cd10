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
            let low = crate::ffi::stack_low()?;
            STACK_LOW.with(|c| c.set(Some(low)));
            low
        }
    };
    let marker = 0u8;
    let here = std::ptr::addr_of!(marker) as usize;
    here.checked_sub(low)
}

/// Bytes of stack below the current frame, or `None` where it cannot be told.
#[cfg(not(target_os = "linux"))]
pub(crate) fn remaining() -> Option<usize> {
    None
}
