//! The system calls of a sandbox process's pipes and signals, and the signal its parent
//! sends to cancel a pass.
//!
//! The pass thread reads its parent's frames itself, blocked in `read(2)` on stdin while it
//! waits for a host reply. Two signals, handled on the pass thread only (every other thread
//! blocks them), interrupt that read (no `SA_RESTART`): [`CANCEL_SIGNAL`], whose handler only
//! sets the pass's cancel flag (the interrupt handler and the wait both read it), and
//! `SIGALRM`, a timer armed at a pass's first wait to ring at its deadline and every
//! [`TICK`] after, so the wait sees its deadline (and a tick that came just before the wait
//! blocked is followed by another). Before its deadline a waiting pass is not woken.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The signal a parent sends to cancel the pass of a sandbox process.
pub(crate) const CANCEL_SIGNAL: libc::c_int = libc::SIGUSR1;
/// The signal that wakes a waiting pass to check its deadline.
const TICK_SIGNAL: libc::c_int = libc::SIGALRM;
/// How often a pass past its deadline is woken until it sees it.
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

fn timeval(d: Duration) -> libc::timeval {
    libc::timeval {
        tv_sec: d.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_usec: d.subsec_micros() as libc::suseconds_t,
    }
}

/// Rings the tick after `first` (at least a microsecond) and every [`TICK`] after it, or
/// (`None`) stops it.
pub(crate) fn tick(first: Option<Duration>) -> io::Result<()> {
    let timer = match first {
        Some(first) => libc::itimerval {
            it_value: timeval(first.max(Duration::from_micros(1))),
            it_interval: timeval(TICK),
        },
        None => libc::itimerval {
            it_value: timeval(Duration::ZERO),
            it_interval: timeval(Duration::ZERO),
        },
    };
    // SAFETY: `timer` is a valid itimerval the call only reads.
    if unsafe { libc::setitimer(libc::ITIMER_REAL, &timer, std::ptr::null_mut()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Blocks until the reader of stdout is gone (the parent closed its end, or died), without
/// taking anything from either pipe; `false` if it cannot watch.
pub(crate) fn wait_until_output_closed() -> bool {
    let mut watched = libc::pollfd {
        fd: 1,
        events: 0,
        revents: 0,
    };
    loop {
        // SAFETY: one valid pollfd, no timeout, no signal mask.
        let n = unsafe { libc::ppoll(&mut watched, 1, std::ptr::null(), std::ptr::null()) };
        if n > 0 && watched.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0 {
            return true;
        }
        if n < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return false;
        }
    }
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
