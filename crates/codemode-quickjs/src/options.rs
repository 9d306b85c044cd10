//! The sandbox's limits and pool settings.

use std::time::Duration;

/// Limits and pool settings of a [`crate::QuickJsExecutor`]; every field has a default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuickJsOptions {
    /// Wall time of one pass, CPU-bound or waiting on the host (default 60 s).
    pub wall_time: Duration,
    /// Memory one sandbox may allocate, in bytes (default 64 MiB).
    pub memory_limit: usize,
    /// JavaScript stack one sandbox may use, in bytes: bounds recursion depth (default 512 KiB).
    pub max_stack_size: usize,
    /// Console output kept per pass, in bytes; more ends the pass (default 256 KiB).
    pub max_console_bytes: usize,
    /// Largest accepted code, in bytes (default 1,000,000).
    pub max_code_bytes: usize,
    /// Most sandbox threads alive at once; further passes wait for one (default 128).
    pub max_threads: usize,
    /// How long an idle sandbox thread lives (default 60 s).
    pub idle_thread_timeout: Duration,
    /// Run each pass on the calling thread when it can (default off); see
    /// [`QuickJsOptions::with_caller_thread`].
    pub caller_thread: bool,
}

impl Default for QuickJsOptions {
    fn default() -> Self {
        QuickJsOptions {
            wall_time: Duration::from_secs(60),
            memory_limit: 64 * 1024 * 1024,
            max_stack_size: 512 * 1024,
            max_console_bytes: 256 * 1024,
            max_code_bytes: 1_000_000,
            max_threads: 128,
            idle_thread_timeout: Duration::from_secs(60),
            caller_thread: false,
        }
    }
}

impl QuickJsOptions {
    /// Sets the wall time of one pass.
    pub fn with_wall_time(mut self, wall_time: Duration) -> Self {
        self.wall_time = wall_time;
        self
    }

    /// Sets the memory limit in bytes.
    pub fn with_memory_limit(mut self, bytes: usize) -> Self {
        self.memory_limit = bytes;
        self
    }

    /// Sets the JavaScript stack limit in bytes.
    pub fn with_max_stack_size(mut self, bytes: usize) -> Self {
        self.max_stack_size = bytes;
        self
    }

    /// Sets the console output limit in bytes.
    pub fn with_max_console_bytes(mut self, bytes: usize) -> Self {
        self.max_console_bytes = bytes;
        self
    }

    /// Sets the largest accepted code in bytes.
    pub fn with_max_code_bytes(mut self, bytes: usize) -> Self {
        self.max_code_bytes = bytes;
        self
    }

    /// Sets the most sandbox threads alive at once (at least 1).
    pub fn with_max_threads(mut self, threads: usize) -> Self {
        self.max_threads = threads.max(1);
        self
    }

    /// Sets how long an idle sandbox thread lives.
    pub fn with_idle_thread_timeout(mut self, timeout: Duration) -> Self {
        self.idle_thread_timeout = timeout;
        self
    }

    /// Runs each pass on the calling thread instead of a sandbox thread, when that thread is
    /// a worker of a multi-thread tokio runtime with room on its stack for the sandbox. The
    /// pass starts inline; before it waits for a host call, or once its JavaScript has run
    /// for a millisecond, the worker's other tasks move to another thread (`block_in_place`).
    /// This saves two thread wake-ups per pass, and a short pass moves nothing at all. The cost: dropping the call's future no
    /// longer cancels a pass that has started; the wall-time limit still ends it.
    pub fn with_caller_thread(mut self, on: bool) -> Self {
        self.caller_thread = on;
        self
    }

    /// The longest array-like a built-in may loop over in one uninterruptible step: the most
    /// elements (16 bytes each) an array within the memory limit can hold.
    pub(crate) fn max_array_length(&self) -> u64 {
        let memory = if self.memory_limit == 0 {
            usize::MAX
        } else {
            self.memory_limit
        };
        ((memory / 16) as u64).clamp(1 << 16, (1 << 32) - 1)
    }

    /// The native stack a pass needs: the JavaScript stack plus room for the engine and the
    /// host calls polled on the same thread.
    pub(crate) fn pass_stack_size(&self) -> usize {
        self.max_stack_size.saturating_add(1024 * 1024)
    }

    /// The native stack of a sandbox thread: the JavaScript stack plus room for the engine.
    pub(crate) fn thread_stack_size(&self) -> usize {
        self.max_stack_size.saturating_add(2 * 1024 * 1024)
    }
}
