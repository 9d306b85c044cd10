//! [`QuickJsExecutor`]: the [`codemode::Executor`] on QuickJS-ng.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use codemode::{ExecuteRequest, ExecuteResult, Executor, Host, PassEnd};
use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::sync::oneshot;

use crate::compiled::CodeCache;
use crate::globals::RESERVED_GLOBALS;
use crate::options::QuickJsOptions;
use crate::pass::PassJob;
use crate::pool::{Pool, Task};

/// Runs each pass in a fresh QuickJS runtime on a sandbox thread of its own.
pub struct QuickJsExecutor {
    options: Arc<QuickJsOptions>,
    pool: Pool,
    cache: Arc<CodeCache>,
}

impl Default for QuickJsExecutor {
    fn default() -> Self {
        Self::new(QuickJsOptions::default())
    }
}

impl std::fmt::Debug for QuickJsExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuickJsExecutor")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl QuickJsExecutor {
    /// Creates an executor with these limits.
    pub fn new(options: QuickJsOptions) -> Self {
        let options = Arc::new(options);
        QuickJsExecutor {
            pool: Pool::new(options.clone()),
            options,
            cache: Arc::default(),
        }
    }

    /// The limits this executor applies.
    pub fn options(&self) -> &QuickJsOptions {
        &self.options
    }
}

/// Tells the pass to stop when the caller stops waiting for it.
struct CancelOnDrop {
    flag: Arc<AtomicBool>,
    armed: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.armed {
            self.flag.store(true, Ordering::Relaxed);
        }
    }
}

/// Whether a pass may run on this thread, inside `handle`'s runtime: a multi-thread tokio
/// worker (or its `block_on` thread) whose stack has room for the sandbox.
fn caller_thread_fits(handle: Option<&Handle>, options: &QuickJsOptions) -> bool {
    let multi_thread = handle.is_some_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread);
    multi_thread && crate::stack::remaining().is_some_and(|room| room >= options.pass_stack_size())
}

#[async_trait]
impl Executor for QuickJsExecutor {
    async fn execute(&self, request: ExecuteRequest, host: Arc<dyn Host>) -> ExecuteResult {
        // The host's own stop flag (a cancel) stops the pass as dropping the call does.
        let cancel = host
            .stop_flag()
            .unwrap_or_else(|| Arc::new(AtomicBool::new(false)));
        let mut guard = CancelOnDrop {
            flag: cancel.clone(),
            armed: true,
        };
        let (reply, receiver) = oneshot::channel();
        let handle = Handle::try_current().ok();
        // Inline, until the pass would hold the thread for long (see `caller`).
        let inline =
            self.options.caller_thread && caller_thread_fits(handle.as_ref(), &self.options);
        let job = PassJob {
            request,
            host,
            handle,
            cancel,
            options: self.options.clone(),
            cache: self.cache.clone(),
            inline,
            wait: None,
        };
        if inline {
            self.pool.run_here(Task { job, reply });
        } else {
            self.pool.submit(Task { job, reply });
        }
        let result = receiver.await.unwrap_or_else(|_| ExecuteResult {
            end: PassEnd::Failed("the sandbox thread stopped unexpectedly".to_string()),
            logs: Vec::new(),
        });
        guard.armed = false;
        result
    }

    fn reserved_globals(&self) -> &[&str] {
        RESERVED_GLOBALS
    }

    fn pass_deadline(&self) -> Option<std::time::Duration> {
        Some(self.options.wall_time)
    }
}
