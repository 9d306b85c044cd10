//! The system calls of a sandbox process's pipes and signals, and the signal its parent
//! sends to cancel a pass.
//!
//! The pass thread reads its parent's frames itself, blocked in `read(2)` on stdin while it
//! waits for a host reply. Two signals, handled on the pass thread only (every other thread
//! blocks them), interrupt that read (no `SA_RESTART`): [`CANCEL_SIGNAL`], whose handler only
//! sets the pass's cancel flag (the interrupt handler and the wait both read it), and
//! `SIGALRM`, a tick every [`TICK`] while a pass waits, so the wait sees its deadline.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The signal a parent sends to cancel the pass of a sandbox process.
pub(crate) const CANCEL_SIGNAL: libc::c_int = libc::SIGUSR1;
/// The signal that wakes a waiting pass to check its deadline.
const TICK_SIGNAL: libc::c_int = libc::SIGALRM;
/// How often a pass waiting for a reply checks its deadline.
pub(crate) const TICK: Duration = Duration::from_millis(25);

/// The process's cancel flag (one for every pass: reset when a pass starts).
static CANCEL_FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

extern "C" fn on_cancel(_signal: libc::c_int) {
    // Async-signal-safe: an atomic load and an atomic store.
    if let Some(flag) = CANCEL_FLAG.get() {
        flag.store(true, Ordering::SeqCst);
    }
}

extern "C" fn on_tick(_signal: libc::c_int) {}

/// Installs the handlers; `cancel` is the flag [`CANCEL_SIGNAL`] sets.
pub(crate) fn install_handlers(cancel: Arc<AtomicBool>) -> io::Result<()> {
    let _ = CANCEL_FLAG.set(cancel);
    let handlers: [(libc::c_int, extern "C" fn(libc::c_int)); 2] =
        [(CANCEL_SIGNAL, on_cancel), (TICK_SIGNAL, on_tick)];
    for (signal, handler) in handlers {
        // SAFETY: a zeroed sigaction is valid; the handlers are async-signal-safe.
        let installed = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handler as usize;
            // No SA_RESTART: the pass thread's blocked read returns EINTR.
            action.sa_flags = libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut())
        };
        if installed != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

fn mask(how: libc::c_int) -> io::Result<()> {
    // SAFETY: the set is initialised by sigemptyset before use.
    let failed = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, CANCEL_SIGNAL);
        libc::sigaddset(&mut set, TICK_SIGNAL);
        libc::pthread_sigmask(how, &set, std::ptr::null_mut())
    };
    match failed {
        0 => Ok(()),
        errno => Err(io::Error::from_raw_os_error(errno)),
    }
}

/// Blocks both signals on this thread (and the threads it starts after).
pub(crate) fn block_signals() -> io::Result<()> {
    mask(libc::SIG_BLOCK)
}

/// Takes both signals on this thread (the pass thread).
pub(crate) fn unblock_signals() -> io::Result<()> {
    mask(libc::SIG_UNBLOCK)
}

/// Starts (`true`) or stops the tick.
pub(crate) fn tick(on: bool) -> io::Result<()> {
    let every = if on {
        libc::timeval {
            tv_sec: 0,
            tv_usec: TICK.as_micros() as libc::suseconds_t,
        }
    } else {
        libc::timeval {
            tv_sec: 0,
            tv_usec: 0,
        }
    };
    let timer = libc::itimerval {
        it_interval: every,
        it_value: every,
    };
    // SAFETY: `timer` is a valid itimerval the call only reads.
    if unsafe { libc::setitimer(libc::ITIMER_REAL, &timer, std::ptr::null_mut()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// One `read(2)` of stdin; a signal that comes first is an error of kind `Interrupted`.
pub(crate) fn read_stdin(buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of its length.
    let n = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// Writes all of `bytes` to stdout (one `write(2)` unless the pipe is full).
pub(crate) fn write_stdout(mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        // SAFETY: `bytes` is valid for reads of its length.
        let n = unsafe { libc::write(1, bytes.as_ptr().cast(), bytes.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        bytes = &bytes[n as usize..];
    }
    Ok(())
}

/// Sends [`CANCEL_SIGNAL`] to process `pid` (the parent's side); whether it was sent.
pub(crate) fn signal_cancel(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: kill with integer arguments; `pid` is a child not yet reaped.
    unsafe { libc::kill(pid, CANCEL_SIGNAL) == 0 }
}
