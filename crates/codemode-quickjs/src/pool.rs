//! Sandbox threads: passes never run on the caller's (tokio) threads.
//!
//! The pool grows on demand up to `max_threads`, so a runaway script holds one thread and
//! delays nothing else. A background thread keeps a small stock of fresh runtimes ready, made
//! off the hot path; a runtime serves one pass and is dropped.

use std::collections::VecDeque;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;

use codemode::{ExecuteResult, PassEnd};
use tokio::sync::oneshot;

use crate::options::QuickJsOptions;
use crate::pass::{run_pass, Fresh, PassJob};

/// A pass and where to send its result.
pub(crate) struct Task {
    /// The pass.
    pub job: PassJob,
    /// Receives the result.
    pub reply: oneshot::Sender<ExecuteResult>,
}

struct Worker {
    id: u64,
    sender: SyncSender<Task>,
}

#[derive(Default)]
struct PoolState {
    idle: Vec<Worker>,
    queue: VecDeque<Task>,
    threads: usize,
    next_id: u64,
}

/// Fresh runtimes made ahead of time by a background thread, each used once.
pub(crate) struct Stock {
    ready: Mutex<Vec<Fresh>>,
    wanted: Condvar,
    closed: AtomicBool,
    target: usize,
}

impl Stock {
    fn take(&self, options: &QuickJsOptions) -> rquickjs::Result<Fresh> {
        let fresh = self.ready.lock().unwrap_or_else(|p| p.into_inner()).pop();
        self.wanted.notify_one();
        match fresh {
            Some(f) => Ok(f),
            None => Fresh::new(options),
        }
    }

    fn fill(self: Arc<Self>, options: Arc<QuickJsOptions>) {
        loop {
            {
                let mut ready = self.ready.lock().unwrap_or_else(|p| p.into_inner());
                while ready.len() >= self.target && !self.closed.load(Ordering::SeqCst) {
                    ready = self.wanted.wait(ready).unwrap_or_else(|p| p.into_inner());
                }
                if self.closed.load(Ordering::SeqCst) {
                    ready.clear();
                    return;
                }
            }
            match Fresh::new(&options) {
                Ok(f) => self.ready.lock().unwrap_or_else(|p| p.into_inner()).push(f),
                Err(_) => thread::sleep(std::time::Duration::from_millis(100)),
            }
        }
    }
}

/// A growing set of sandbox threads.
pub(crate) struct Pool {
    state: Arc<Mutex<PoolState>>,
    stock: Arc<Stock>,
    options: Arc<QuickJsOptions>,
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.stock.closed.store(true, Ordering::SeqCst);
        self.stock.wanted.notify_all();
    }
}

fn lock(state: &Mutex<PoolState>) -> MutexGuard<'_, PoolState> {
    state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Pool {
    /// Creates an empty pool; threads start with the first passes.
    pub(crate) fn new(options: Arc<QuickJsOptions>) -> Self {
        let stock = Arc::new(Stock {
            ready: Mutex::new(Vec::new()),
            wanted: Condvar::new(),
            closed: AtomicBool::new(false),
            target: 4,
        });
        let filler = stock.clone();
        let filler_options = options.clone();
        let _ = thread::Builder::new()
            .name("codemode-sandbox-stock".into())
            .spawn(move || filler.fill(filler_options));
        Pool {
            state: Arc::new(Mutex::new(PoolState::default())),
            stock,
            options,
        }
    }

    /// Hands a pass to an idle thread, a new thread, or the queue.
    pub(crate) fn submit(&self, task: Task) {
        let mut state = lock(&self.state);
        if let Some(worker) = state.idle.pop() {
            drop(state);
            if let Err(mpsc::SendError(task)) = worker.sender.send(task) {
                fail(task.reply, "a sandbox thread stopped unexpectedly");
            }
            return;
        }
        if state.threads >= self.options.max_threads {
            state.queue.push_back(task);
            return;
        }
        state.threads += 1;
        let id = state.next_id;
        state.next_id += 1;
        drop(state);
        let pool_state = self.state.clone();
        let stock = self.stock.clone();
        let options = self.options.clone();
        let spawned = thread::Builder::new()
            .name(format!("codemode-sandbox-{id}"))
            .stack_size(options.thread_stack_size())
            .spawn(move || worker_loop(id, task, pool_state, stock, options));
        if spawned.is_err() {
            lock(&self.state).threads -= 1;
        }
    }
}

fn fail(reply: oneshot::Sender<ExecuteResult>, message: &str) {
    let _ = reply.send(ExecuteResult {
        end: PassEnd::Failed(message.to_string()),
        logs: Vec::new(),
    });
}

fn run(task: Task, options: &QuickJsOptions, stock: &Stock) {
    if task.reply.is_closed() {
        return;
    }
    match stock.take(options) {
        Ok(f) => {
            let job = task.job;
            match panic::catch_unwind(AssertUnwindSafe(move || run_pass(f, job))) {
                Ok((result, spent)) => {
                    let _ = task.reply.send(result);
                    // Freeing a runtime costs tens of µs: the caller has its result by now.
                    drop(spent);
                }
                Err(_) => fail(
                    task.reply,
                    "internal error in the sandbox; the pass was stopped",
                ),
            }
        }
        Err(e) => fail(
            task.reply,
            &format!("the sandbox could not be created: {e}"),
        ),
    }
}

fn worker_loop(
    id: u64,
    first: Task,
    state: Arc<Mutex<PoolState>>,
    stock: Arc<Stock>,
    options: Arc<QuickJsOptions>,
) {
    let (sender, receiver): (SyncSender<Task>, Receiver<Task>) = mpsc::sync_channel(1);
    let mut next = Some(first);
    loop {
        if let Some(task) = next.take() {
            run(task, &options, &stock);
        }
        {
            let mut guard = lock(&state);
            if let Some(task) = guard.queue.pop_front() {
                next = Some(task);
                continue;
            }
            guard.idle.push(Worker {
                id,
                sender: sender.clone(),
            });
        }
        match receiver.recv_timeout(options.idle_thread_timeout) {
            Ok(task) => next = Some(task),
            Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {
                let mut guard = lock(&state);
                if let Some(at) = guard.idle.iter().position(|w| w.id == id) {
                    guard.idle.remove(at);
                    guard.threads -= 1;
                    break;
                }
                drop(guard);
                match receiver.recv() {
                    Ok(task) => next = Some(task),
                    Err(_) => break,
                }
            }
        }
    }
}
