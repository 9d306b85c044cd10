//! Passes in sandbox processes that can always be killed: [`ProcessExecutor`].
//!
//! A C built-in of QuickJS that never returns to the interrupt handler keeps its thread
//! busy for good, so an in-process pass cannot always be stopped at its deadline. Here each
//! pass runs in a worker process (`protocol.rs` has the frames, `child.rs` the worker's loop
//! over the in-process machinery, `channel.rs` its host and output, `confine.rs` its seccomp filter and resource limits,
//! `sys.rs` its raw pipe reads and writes and the cancel signal), and
//! the parent (`parent.rs`, with `procs.rs` for the pool of processes) kills the process at
//! the deadline, or soon after a cancel, and starts another.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

mod channel;
mod child;
#[allow(unsafe_code)]
mod confine;
mod parent;
mod procs;
mod protocol;
#[allow(unsafe_code)]
mod sys;

pub use child::run_worker;
pub use parent::ProcessExecutor;

/// The hidden first argument that makes a program a sandbox process ([`run_worker_if_asked`],
/// [`WorkerCommand::current_exe`]).
pub const WORKER_ARG: &str = "__sandbox-worker";

/// Runs this process as a sandbox process, never returning, if its first argument is
/// [`WORKER_ARG`]; returns at once otherwise. Call it first thing in `main`, before any
/// async runtime or thread starts.
pub fn run_worker_if_asked() {
    if std::env::args_os().nth(1).is_some_and(|a| a == WORKER_ARG) {
        run_worker()
    }
}

/// The command that starts one sandbox process: a program that calls [`run_worker`] when
/// given these arguments (for instance the server's own executable and a hidden argument).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerCommand {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
}

impl WorkerCommand {
    /// `program` with `args`.
    pub fn new(
        program: impl Into<PathBuf>,
        args: impl IntoIterator<Item = impl Into<OsString>>,
    ) -> Self {
        WorkerCommand {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
        }
    }

    /// This executable with [`WORKER_ARG`] (its `main` calls [`run_worker_if_asked`]).
    pub fn current_exe() -> std::io::Result<Self> {
        Ok(WorkerCommand::new(std::env::current_exe()?, [WORKER_ARG]))
    }
}

/// How a [`ProcessExecutor`] keeps its sandbox processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessOptions {
    /// What starts a sandbox process.
    pub command: WorkerCommand,
    /// Processes kept started ahead, idle (default 2).
    pub warm: usize,
    /// Most processes alive at once; further passes wait for one (default 64).
    pub max_processes: usize,
    /// How long an idle process beyond the warm ones lives (default 60 s).
    pub idle_timeout: Duration,
    /// How long after the deadline a process that has not answered is killed (default 300 ms).
    pub kill_grace: Duration,
    /// How long after a cancel a process that has not answered is killed (default 300 ms).
    pub cancel_grace: Duration,
    /// How long a new process may take to say it is ready (default 10 s).
    pub start_timeout: Duration,
}

impl ProcessOptions {
    /// Defaults, with this command.
    pub fn new(command: WorkerCommand) -> Self {
        ProcessOptions {
            command,
            warm: 2,
            max_processes: 64,
            idle_timeout: Duration::from_secs(60),
            kill_grace: Duration::from_millis(300),
            cancel_grace: Duration::from_millis(300),
            start_timeout: Duration::from_secs(10),
        }
    }

    /// Sets how many processes are kept started ahead.
    pub fn with_warm(mut self, warm: usize) -> Self {
        self.warm = warm;
        self
    }

    /// Sets the most processes alive at once (at least 1).
    pub fn with_max_processes(mut self, max: usize) -> Self {
        self.max_processes = max.max(1);
        self
    }

    /// Sets how long an idle process beyond the warm ones lives.
    pub fn with_idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }
}

/// Why sandbox processes cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum SandboxStartError {
    /// The program could not be started.
    #[error("cannot start the sandbox process {program:?}: {source}")]
    Spawn {
        /// The program.
        program: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// The process started but did not become ready.
    #[error("the sandbox process {program:?} did not become ready: {reason}")]
    Handshake {
        /// The program.
        program: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The process could not confine itself (see the crate README).
    #[error("the sandbox process {program:?} could not confine itself: {reason}")]
    NotConfined {
        /// The program.
        program: PathBuf,
        /// What the process said.
        reason: String,
    },
}

/// What a confined sandbox process got when it tried to reach the system (each an `errno`;
/// 0 means the call succeeded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeReport {
    /// `socket(AF_INET, SOCK_STREAM)`.
    pub socket: i32,
    /// `open("/proc/self/status")`.
    pub open: i32,
    /// `fork()`.
    pub fork: i32,
}

impl ProbeReport {
    /// Whether all three were refused.
    pub fn all_refused(&self) -> bool {
        self.socket != 0 && self.open != 0 && self.fork != 0
    }
}
