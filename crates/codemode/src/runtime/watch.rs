//! Watching executions: the runtime's event stream, waiting for an execution to settle, and
//! the signal through which a cancel reaches the pass running an execution on this node.

use super::Runtime;
use crate::error::RuntimeError;
use crate::model::{Decision, Execution, PendingAction};
use crate::status::ExecutionStatus;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{broadcast, watch};

/// How many events a subscriber may fall behind before it lags (and skips the oldest).
pub const EVENT_BUFFER: usize = 1024;

/// How often [`Runtime::wait`] reads the store, for changes made by another node.
pub const WAIT_POLL: Duration = Duration::from_millis(250);

/// The most characters of an error a [`RuntimeEvent::StatusChanged`] carries.
pub const MAX_EVENT_ERROR_CHARS: usize = 1000;

/// A function [`Runtime::observe`] calls with every event (shared, so that an observer that
/// keeps events keeps them without copying).
pub type EventObserver = Arc<dyn Fn(&Arc<RuntimeEvent>) + Send + Sync>;

/// `text` cut to at most `max` characters, marked with `…` when cut.
fn bounded(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((at, _)) => format!("{}…", &text[..at]),
    }
}

/// Something that happened in this runtime, for [`Runtime::subscribe`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RuntimeEvent {
    /// An execution's status changed (by this node).
    #[serde(rename_all = "camelCase")]
    StatusChanged {
        /// The execution.
        execution_id: String,
        /// Its new status.
        status: ExecutionStatus,
        /// The error that ended it (status `error`), cut to [`MAX_EVENT_ERROR_CHARS`].
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A pass paused with actions waiting for approval.
    #[serde(rename_all = "camelCase")]
    PendingCreated {
        /// The execution.
        execution_id: String,
        /// What waits.
        pending: Vec<PendingAction>,
    },
    /// A connector started running a call (replayed calls do not run and are not reported).
    #[serde(rename_all = "camelCase")]
    CallStarted {
        /// The execution.
        execution_id: String,
        /// The call's place in the log.
        seq: u64,
        /// The connector name.
        connector: String,
        /// The method name.
        method: String,
    },
    /// A connector call ended.
    #[serde(rename_all = "camelCase")]
    CallEnded {
        /// The execution.
        execution_id: String,
        /// The call's place in the log.
        seq: u64,
        /// The connector name.
        connector: String,
        /// The method name.
        method: String,
        /// How long the connector ran, in milliseconds.
        duration_ms: u64,
        /// Whether it returned a result (false: it failed).
        ok: bool,
    },
    /// A console line of a pass, as the code writes it.
    #[serde(rename_all = "camelCase")]
    Console {
        /// The execution.
        execution_id: String,
        /// The line.
        line: String,
    },
}

impl RuntimeEvent {
    /// The execution the event is about.
    pub fn execution_id(&self) -> &str {
        match self {
            RuntimeEvent::StatusChanged { execution_id, .. }
            | RuntimeEvent::PendingCreated { execution_id, .. }
            | RuntimeEvent::CallStarted { execution_id, .. }
            | RuntimeEvent::CallEnded { execution_id, .. }
            | RuntimeEvent::Console { execution_id, .. } => execution_id,
        }
    }
}

/// The stop signal of the pass running one execution on this node.
pub(crate) struct PassSignal {
    /// Set to the cancel decision once someone cancels the execution.
    cancel: watch::Sender<Option<Decision>>,
    /// Set once the pass has made its last commit.
    ended: watch::Sender<bool>,
    /// Set with the cancel, for the sandbox to stop at its next instruction boundary.
    stop: Arc<AtomicBool>,
}

impl PassSignal {
    /// The cancel decision, if the execution was cancelled.
    pub fn cancelled(&self) -> Option<Decision> {
        self.cancel.borrow().clone()
    }

    /// The flag the sandbox polls: set once the execution is cancelled.
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    /// Resolves once the execution is cancelled.
    pub async fn wait_cancelled(&self) {
        let mut rx = self.cancel.subscribe();
        let _ = rx.wait_for(Option::is_some).await;
    }
}

/// The passes running on this node, by execution id.
#[derive(Default)]
pub(crate) struct Passes(Mutex<HashMap<String, Arc<PassSignal>>>);

impl Passes {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<PassSignal>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers the pass of `id`; it is unregistered when the guard drops.
    pub fn start(self: &Arc<Self>, id: &str) -> PassGuard {
        let signal = Arc::new(PassSignal {
            cancel: watch::channel(None).0,
            ended: watch::channel(false).0,
            stop: Arc::new(AtomicBool::new(false)),
        });
        self.lock().insert(id.to_string(), signal.clone());
        PassGuard {
            passes: self.clone(),
            id: id.to_string(),
            signal,
        }
    }

    /// The signal of the pass running `id` here, if one is.
    pub fn get(&self, id: &str) -> Option<Arc<PassSignal>> {
        self.lock().get(id).cloned()
    }
}

/// A running pass's registration; dropping it marks the pass ended.
pub(crate) struct PassGuard {
    passes: Arc<Passes>,
    id: String,
    pub signal: Arc<PassSignal>,
}

impl Drop for PassGuard {
    fn drop(&mut self) {
        let mut passes = self.passes.lock();
        if passes
            .get(&self.id)
            .is_some_and(|s| Arc::ptr_eq(s, &self.signal))
        {
            passes.remove(&self.id);
        }
        drop(passes);
        self.signal.ended.send_replace(true);
    }
}

/// Asks the pass behind `signal` to stop, and waits at most `grace` for its last commit;
/// true if it ended in time.
pub(super) async fn cancel_pass(signal: &PassSignal, decision: Decision, grace: Duration) -> bool {
    let mut ended = signal.ended.subscribe();
    signal.cancel.send_if_modified(|d| {
        if d.is_none() {
            *d = Some(decision);
            true
        } else {
            false
        }
    });
    // After the decision is set, so a pass the flag stops sees the decision as it ends.
    signal.stop.store(true, Ordering::Relaxed);
    let ended_in_time = tokio::time::timeout(grace, ended.wait_for(|e| *e))
        .await
        .is_ok_and(|r| r.is_ok());
    ended_in_time
}

impl Runtime {
    /// Follows what happens in this runtime: status changes, pending actions, connector calls
    /// and console lines. The channel is bounded ([`EVENT_BUFFER`]): a subscriber that falls
    /// behind gets `RecvError::Lagged` and skips the oldest events.
    pub fn subscribe(&self) -> broadcast::Receiver<RuntimeEvent> {
        self.inner.events.subscribe()
    }

    /// Calls `observer` with every event from now on, inline on the task where it happens
    /// and before any subscriber sees it: for counters that must not cost a task wake-up per
    /// connector call. It must be quick and must not block or await.
    pub fn observe(&self, observer: impl Fn(&Arc<RuntimeEvent>) + Send + Sync + 'static) {
        self.inner
            .observers
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push(Arc::new(observer));
    }

    /// Hands an event to the observers, then to the subscribers if there are any.
    pub(super) fn publish(&self, event: RuntimeEvent) {
        let observers = self
            .inner
            .observers
            .read()
            .unwrap_or_else(|e| e.into_inner());
        if observers.is_empty() {
            // Nobody observes: the event is moved to the subscribers, never shared.
            drop(observers);
            self.send_to_subscribers(event);
            return;
        }
        let shared = Arc::new(event);
        for observer in observers.iter() {
            observer(&shared);
        }
        drop(observers);
        if self.inner.events.receiver_count() > 0 {
            // Copied only when an observer kept it.
            self.send_to_subscribers(
                Arc::try_unwrap(shared).unwrap_or_else(|kept| (*kept).clone()),
            );
        }
    }

    fn send_to_subscribers(&self, event: RuntimeEvent) {
        if self.inner.events.receiver_count() > 0 {
            let _ = self.inner.events.send(event);
        }
    }

    /// Publishes a status change.
    pub(super) fn publish_status(&self, id: &str, status: ExecutionStatus) {
        self.publish_end(id, status, None);
    }

    /// Publishes a status change, with the error that ended the execution, if one did.
    pub(super) fn publish_end(&self, id: &str, status: ExecutionStatus, error: Option<&str>) {
        self.publish(RuntimeEvent::StatusChanged {
            execution_id: id.to_string(),
            status,
            error: error.map(|e| bounded(e, MAX_EVENT_ERROR_CHARS)),
        });
    }

    /// Waits until the execution settles, or `timeout` passes, and returns it as it then is.
    ///
    /// Settled means not running, and not in the pause it was in when the wait began: it
    /// finished, or it paused again after an approval. Changes made on this node wake the
    /// wait at once; changes made by another node sharing the store are seen by reading the
    /// store every [`WAIT_POLL`].
    pub async fn wait(
        &self,
        execution_id: &str,
        timeout: Duration,
    ) -> Result<Execution, RuntimeError> {
        let deadline: tokio::time::Instant =
            crate::clock::instant_after(std::time::Instant::now(), timeout).into();
        let mut events = self.subscribe();
        let first = self.load(execution_id).await?;
        let start = (first.status, first.updated_at);
        let settled = |e: &Execution| match e.status {
            ExecutionStatus::Running => false,
            ExecutionStatus::Paused => (e.status, e.updated_at) != start,
            _ => true,
        };
        if settled(&first) {
            return Ok(first);
        }
        loop {
            let poll = tokio::time::Instant::now() + WAIT_POLL;
            let woken = tokio::select! {
                _ = tokio::time::sleep_until(deadline.min(poll)) => false,
                event = events.recv() => match event {
                    Ok(event) => event.execution_id() == execution_id,
                    Err(broadcast::error::RecvError::Lagged(_)) => true,
                    Err(broadcast::error::RecvError::Closed) => false,
                },
            };
            if !woken && tokio::time::Instant::now() < poll.min(deadline) {
                continue;
            }
            let now = self.load(execution_id).await?;
            if settled(&now) || tokio::time::Instant::now() >= deadline {
                return Ok(now);
            }
        }
    }
}
