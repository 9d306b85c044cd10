//! A sandbox process confines itself before its first pass, so that it can do nothing but
//! compute and talk to its parent over stdin and stdout:
//! - `PR_SET_NO_NEW_PRIVS`, then a seccomp-bpf allow-list on every thread ([`ALLOWED`];
//!   every other system call fails with `EPERM`): no file, socket, process, signal to another
//!   process, or new thread (the handlers of the cancel signal and the deadline tick are installed
//!   before, see `sys.rs`);
//! - resource limits: address space (a second memory line behind the sandbox's own), no new
//!   process, no file written, no new file descriptor, no core dump.
//!
//! The crate's only other `unsafe` lives in `sys.rs`, `ffi.rs`, `arena.rs` and `slot.rs`.

use std::collections::BTreeMap;

/// What confinement left in force.
pub(crate) struct Confined {
    /// Address space the process held before its limit was set, in bytes.
    pub baseline_vsz: u64,
    /// The address-space limit, in bytes (0: none, for a pass memory limit of 0).
    pub address_limit: u64,
}

/// The system calls a confined sandbox process may make, with why. `read` is allowed on
/// stdin only and `write` on stdout and stderr only; `mmap` and `mprotect` never make
/// executable memory.
#[cfg(target_os = "linux")]
const ALLOWED: &[(i64, &str)] = &[
    (libc::SYS_read, "frames from the parent (fd 0 only)"),
    (
        libc::SYS_write,
        "frames to the parent, panics (fds 1 and 2 only)",
    ),
    (libc::SYS_futex, "locks, channels, parking between threads"),
    (
        libc::SYS_mmap,
        "memory: allocator and sandbox arena (never executable)",
    ),
    (libc::SYS_munmap, "memory"),
    (libc::SYS_mremap, "memory"),
    (libc::SYS_mprotect, "memory (never executable)"),
    (libc::SYS_madvise, "memory given back after a pass"),
    (libc::SYS_brk, "memory: the allocator's main heap"),
    (libc::SYS_clock_gettime, "deadlines, Date, performance.now"),
    (libc::SYS_clock_nanosleep, "waits with a timeout"),
    (libc::SYS_nanosleep, "waits with a timeout"),
    (libc::SYS_sched_yield, "spinning locks"),
    (
        libc::SYS_rt_sigreturn,
        "the end of a signal handler (the cancel signal, the tick)",
    ),
    (
        libc::SYS_setitimer,
        "the timer that wakes a waiting pass at its deadline (a signal to itself only)",
    ),
    (libc::SYS_rt_sigprocmask, "signal masks (thread exit)"),
    (
        libc::SYS_ppoll,
        "the main thread waits for its parent to close stdout",
    ),
    (
        libc::SYS_sigaltstack,
        "the stack-overflow handler's stack (thread exit)",
    ),
    (libc::SYS_getrandom, "hash seeds, Math.random"),
    (
        libc::SYS_close,
        "closing nothing new: only what existed before",
    ),
    (libc::SYS_exit, "a thread's end"),
    (libc::SYS_exit_group, "the process's end"),
    (libc::SYS_gettid, "lowering the pass thread's priority"),
    (
        libc::SYS_setpriority,
        "lowering the pass thread's priority during a long pass",
    ),
    (libc::SYS_getpriority, "the pass thread's priority"),
];

#[cfg(target_os = "linux")]
fn filter() -> Result<seccompiler::BpfProgram, String> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition as Cond,
        SeccompFilter, SeccompRule, TargetArch,
    };
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let fd_is = |fd: u64| -> Result<SeccompRule, String> {
        let cond = Cond::new(0, Len::Dword, Op::Eq, fd).map_err(|e| e.to_string())?;
        SeccompRule::new(vec![cond]).map_err(|e| e.to_string())
    };
    let not_exec = |arg: u8| -> Result<Vec<SeccompRule>, String> {
        let cond = Cond::new(arg, Len::Dword, Op::MaskedEq(libc::PROT_EXEC as u64), 0)
            .map_err(|e| e.to_string())?;
        Ok(vec![
            SeccompRule::new(vec![cond]).map_err(|e| e.to_string())?
        ])
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for (call, _) in ALLOWED {
        let rule = match *call {
            libc::SYS_read => vec![fd_is(0)?],
            libc::SYS_write => vec![fd_is(1)?, fd_is(2)?],
            libc::SYS_mmap | libc::SYS_mprotect => not_exec(2)?,
            _ => Vec::new(),
        };
        rules.insert(*call, rule);
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Errno(libc::EPERM as u32),
        SeccompAction::Allow,
        arch,
    )
    .map_err(|e| e.to_string())?;
    filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())
}

/// The address space the process holds now, in bytes.
#[cfg(target_os = "linux")]
fn address_space() -> Result<u64, String> {
    let statm = std::fs::read_to_string("/proc/self/statm")
        .map_err(|e| format!("cannot read /proc/self/statm: {e}"))?;
    let pages: u64 = statm
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .ok_or("/proc/self/statm has no size")?;
    // SAFETY: sysconf reads a constant of the system.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    Ok(pages * page)
}

#[cfg(target_os = "linux")]
fn set_limit(resource: libc::__rlimit_resource_t, value: u64, what: &str) -> Result<(), String> {
    let limit = libc::rlimit {
        rlim_cur: value,
        rlim_max: value,
    };
    // SAFETY: `limit` is a valid rlimit the call only reads.
    if unsafe { libc::setrlimit(resource, &limit) } != 0 {
        return Err(format!(
            "cannot limit {what}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Confines this process (every thread it has): resource limits, then no new privileges and
/// the system-call filter. `memory_limit` is the pass's (0: none).
#[cfg(target_os = "linux")]
pub(crate) fn confine(memory_limit: usize) -> Result<Confined, String> {
    let program = filter()?;
    let baseline_vsz = address_space()?;
    // Room for a pass's arena at its tighter size, and for its result and frames outside it.
    let address_limit = if memory_limit == 0 {
        0
    } else {
        baseline_vsz
            .saturating_add((memory_limit as u64).saturating_mul(2))
            .saturating_add(128 << 20)
    };
    if address_limit != 0 {
        set_limit(libc::RLIMIT_AS, address_limit, "the address space")?;
    }
    set_limit(libc::RLIMIT_NPROC, 0, "processes")?;
    set_limit(libc::RLIMIT_FSIZE, 0, "file sizes")?;
    // Room for the three it has and no more (`ppoll` of one of them needs a limit above 0).
    set_limit(libc::RLIMIT_NOFILE, 3, "file descriptors")?;
    set_limit(libc::RLIMIT_CORE, 0, "core dumps")?;
    // SAFETY: prctl with integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(format!(
            "cannot set no-new-privileges: {}",
            std::io::Error::last_os_error()
        ));
    }
    seccompiler::apply_filter_all_threads(&program)
        .map_err(|e| format!("cannot install the system-call filter: {e}"))?;
    Ok(Confined {
        baseline_vsz,
        address_limit,
    })
}

/// Elsewhere there is no confinement: the process refuses to serve.
#[cfg(not(target_os = "linux"))]
pub(crate) fn confine(_memory_limit: usize) -> Result<Confined, String> {
    Err("sandbox processes are confined with seccomp, which only Linux has".to_string())
}

/// Tries to open a socket, a file and a process; each call's `errno` (0 if it succeeded).
pub(crate) fn probe() -> (i32, i32, i32) {
    let errno = || std::io::Error::last_os_error().raw_os_error().unwrap_or(-1);
    // SAFETY: plain system calls; a descriptor that opens is closed at once.
    let socket = unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
        if fd >= 0 {
            libc::close(fd);
            0
        } else {
            errno()
        }
    };
    // SAFETY: as above, with a NUL-terminated path.
    let open = unsafe {
        let fd = libc::open(c"/proc/self/status".as_ptr(), libc::O_RDONLY);
        if fd >= 0 {
            libc::close(fd);
            0
        } else {
            errno()
        }
    };
    // SAFETY: a child that forks exits at once without touching the parent's state.
    let fork = unsafe {
        match libc::fork() {
            0 => libc::_exit(0),
            pid if pid > 0 => {
                let mut status = 0;
                libc::waitpid(pid, &mut status, 0);
                0
            }
            _ => errno(),
        }
    };
    (socket, open, fork)
}
