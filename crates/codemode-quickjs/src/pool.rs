//! Sandbox threads: by default passes never run on the caller's (tokio) threads; with
//! `QuickJsOptions::with_caller_thread` the executor may run one here instead ([`Pool::run_here`]).
//!
//! The pool grows on demand up to `max_threads`, so a runaway script holds one thread and
//! delays nothing else. Each pass runs in its thread's runtime ([`Slot`]), which is put back
//! as made once the caller has the result.

use std::collections::VecDeque;
use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;

use codemode::{ExecuteResult, PassEnd};
use tokio::sync::oneshot;

use crate::options::QuickJsOptions;
use crate::pass::{run_pass, PassJob};
use crate::slot::Slot;

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

/// A growing set of sandbox threads.
pub(crate) struct Pool {
    state: Arc<Mutex<PoolState>>,
    options: Arc<QuickJsOptions>,
}

fn lock(state: &Mutex<PoolState>) -> MutexGuard<'_, PoolState> {
    state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Pool {
    /// Creates an empty pool; threads start with the first passes.
    pub(crate) fn new(options: Arc<QuickJsOptions>) -> Self {
        Pool {
            state: Arc::new(Mutex::new(PoolState::default())),
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
        drop(state);
        spawn_worker(task, &self.state, &self.options);
    }

    /// Runs a pass on the calling thread.
    pub(crate) fn run_here(&self, task: Task) {
        run(task, &self.options)
    }
}

fn fail(reply: oneshot::Sender<ExecuteResult>, message: &str) {
    let _ = reply.send(ExecuteResult {
        end: PassEnd::Failed(message.to_string()),
        logs: Vec::new(),
    });
}

fn run(task: Task, options: &QuickJsOptions) {
    if task.reply.is_closed() {
        return;
    }
    let slot = match Slot::take(options, &task.job.request.namespaces) {
        Ok(slot) => slot,
        Err(message) => return fail(task.reply, &message),
    };
    let job = task.job;
    let seed = job.request.clock.random_seed;
    match panic::catch_unwind(AssertUnwindSafe(|| run_pass(slot.ready(seed), job))) {
        Ok((result, clean)) => {
            let _ = task.reply.send(result);
            // Putting the runtime back costs a copy: done once the caller has the result.
            slot.put_back(clean, options);
        }
        // The runtime is freed with the slot.
        Err(_) => fail(
            task.reply,
            "internal error in the sandbox; the pass was stopped",
        ),
    }
}

/// Starts a sandbox thread whose first pass is `task`; the caller has counted it in the
/// pool's threads already.
fn spawn_worker(task: Task, state: &Arc<Mutex<PoolState>>, options: &Arc<QuickJsOptions>) {
    let id = {
        let mut guard = lock(state);
        guard.next_id += 1;
        guard.next_id - 1
    };
    let pool_state = state.clone();
    let options = options.clone();
    let spawned = thread::Builder::new()
        .name(format!("codemode-sandbox-{id}"))
        .stack_size(options.thread_stack_size())
        .spawn(move || worker_loop(id, task, pool_state, options));
    if spawned.is_err() {
        lock(state).threads -= 1;
    }
}

fn worker_loop(id: u64, first: Task, state: Arc<Mutex<PoolState>>, options: Arc<QuickJsOptions>) {
    let (sender, receiver): (SyncSender<Task>, Receiver<Task>) = mpsc::sync_channel(1);
    let mut next = Some(first);
    loop {
        if let Some(task) = next.take() {
            run(task, &options);
        }
        if crate::turns::thread_spent() {
            // Its priority stayed lowered after a long pass: a new thread takes its place.
            let mut guard = lock(&state);
            let queued = guard.queue.pop_front();
            if queued.is_none() {
                guard.threads -= 1;
            }
            drop(guard);
            if let Some(task) = queued {
                spawn_worker(task, &state, &options);
            }
            break;
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
