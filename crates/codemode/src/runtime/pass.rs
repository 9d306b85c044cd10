//! One pass: run the code from the start, answering each call from the log or for real.
//!
//! What must be durable when: a read is safe to run again, so its entry is buffered and
//! written with the next commit (the pass end at the latest). A write that needs no approval
//! gets its `executing` mark committed (with everything buffered before it) before the
//! connector runs; its `applied` mark rides on the next commit. A crash therefore loses only
//! reads, and leaves a write `executing`, which the next pass runs again with the same
//! idempotency key.

use super::caps::Gate;
use super::cursor::{durable_text, Limits, ReplayCursor, Stop};
use super::delivery::Wait;
use super::flush::lock;
use super::park::{Open, Parked};
use super::watch::{PassSignal, RuntimeEvent};
use super::Runtime;
use crate::connector::{ExecutionEndStatus, PassEndStatus};
use crate::error_code::ErrorCode;
use crate::executor::{ExecuteRequest, Host, HostCall, HostReply, PassEnd, SDK_NAMESPACE};
use crate::model::{now_ms, Decision, Execution, LogEntry, Outcome, PendingAction};
use crate::status::{note_execution, ExecutionStatus};
use crate::store::{Commit, Transition};
use crate::tape::{random_seed, ClockRun, PassClock};
use crate::value::{serialized_len, MAX_DURABLE_VALUE_CHARS};
use crate::RuntimeError;
use futures::future::BoxFuture;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tracing::{Instrument, Span};

/// What a call that reaches the host after the code settled (returned or threw) gets.
pub(super) const LATE_CALL: &str = "the code execution finished before this tool call settled";

/// The host side of one pass.
pub(super) struct PassHost {
    pub(super) runtime: Runtime,
    pub(super) execution_id: String,
    pub(super) cursor: Arc<Mutex<ReplayCursor>>,
    /// Each write in flight holds a read guard; the pass end takes the write guard, so it
    /// waits for writes the code did not await before it commits.
    pub(super) writes: Arc<tokio::sync::RwLock<()>>,
    /// Each read in flight holds a read guard; the pass end waits a while for them.
    pub(super) reads: Arc<tokio::sync::RwLock<()>>,
    /// Set once the code settled: a reply no longer reaches it, and a call it makes later is
    /// refused.
    pub(super) settled: AtomicBool,
    /// Set when someone cancels the execution while this pass runs it.
    pub(super) signal: Arc<PassSignal>,
    /// The standing approvals (scope `execution`) recorded on the execution.
    pub(super) standing: Vec<Decision>,
    /// The calls in flight, within the caps per connector and per execution.
    pub(super) gate: Arc<Gate>,
    /// The pass's span, the parent of its call and commit spans.
    pub(super) span: Span,
    /// What the host threw into the code, with its code (the newest [`MAX_THROWN`]): an
    /// uncaught error that carries one of these messages is that failure.
    pub(super) thrown: Mutex<Vec<Thrown>>,
}

/// How many of the host's throws a pass keeps for coding its error.
const MAX_THROWN: usize = 64;

/// The throws a pass recorded, copied out of their lock.
fn lock_thrown(thrown: &Mutex<Vec<Thrown>>) -> Vec<Thrown> {
    thrown.lock().map(|t| t.clone()).unwrap_or_default()
}

/// What the host threw into the code: its code, its message, and the `connector.method` it
/// answered (none for the SDK's own calls).
type Thrown = (ErrorCode, String, Option<String>);

/// A failed pass's error and code. An uncaught connector failure (the connector's own
/// message, which the code's `e.message` keeps as the connector wrote it) is named by the
/// call it came from, unless the text names it already.
fn coded(error: String, thrown: &[Thrown]) -> (String, ErrorCode) {
    let pairs: Vec<(ErrorCode, String)> = thrown.iter().map(|(c, m, _)| (*c, m.clone())).collect();
    let code = ErrorCode::of_error(&error, &pairs);
    let from = thrown.iter().rev().find(|(c, m, call)| {
        matches!(c, ErrorCode::Connector | ErrorCode::Timeout)
            && call.is_some()
            && !m.is_empty()
            && error.contains(m.as_str())
    });
    match from.and_then(|(_, _, call)| call.as_ref()) {
        Some(call) if !error.contains(call.as_str()) => {
            (format!("{error} (the failure came from {call})"), code)
        }
        _ => (error, code),
    }
}

/// Runs one pass of `execution` (already claimed as `running` by this node) inside `span`.
pub(super) async fn run(
    runtime: &Runtime,
    execution: Execution,
    span: Span,
) -> Result<Outcome, RuntimeError> {
    run_in(runtime, execution, span.clone())
        .instrument(span)
        .await
}

async fn run_in(
    runtime: &Runtime,
    execution: Execution,
    span: Span,
) -> Result<Outcome, RuntimeError> {
    let inner = &runtime.inner;
    let id = execution.id.clone();
    let guard = inner.passes.start(&id);
    let standing = execution
        .decisions
        .iter()
        .filter(|d| !d.methods.is_empty())
        .cloned()
        .collect();
    let limits = Limits {
        max_calls: inner.max_calls,
        max_log_bytes: inner.max_log_bytes,
    };
    let host = Arc::new(PassHost {
        runtime: runtime.clone(),
        execution_id: id.clone(),
        cursor: Arc::new(Mutex::new(ReplayCursor::new(
            execution.log,
            execution.clock.clone(),
            limits,
        ))),
        writes: Arc::new(tokio::sync::RwLock::new(())),
        reads: Arc::new(tokio::sync::RwLock::new(())),
        settled: AtomicBool::new(false),
        signal: guard.signal.clone(),
        standing,
        gate: Gate::new(inner.caps.clone()),
        span: span.clone(),
        thrown: Mutex::new(Vec::new()),
    });
    let request = ExecuteRequest {
        code: execution.code,
        namespaces: inner.registry.namespaces(),
        clock: PassClock {
            tape: execution.clock,
            random_seed: Some(random_seed(&id)),
        },
    };
    let mut result = inner.executor.execute(request, host.clone()).await;
    host.settled.store(true, Ordering::SeqCst);
    // A write the code did not await still runs to its end and is recorded before the pass
    // commits: the log never says `executing` for a run that ended.
    drop(host.writes.write().await);
    if host.signal.cancelled().is_none() {
        host.finish_reads().await;
        host.run_approved_leftovers().await;
    }
    result.logs.extend(host.settle_unawaited(&result.end));
    let (entries, clock, stop, paused) = {
        let mut cursor = lock(&host.cursor);
        // A cancel that arrived while the pass ran wins over however the code ended.
        if let Some(decision) = host.signal.cancelled() {
            cursor.stop = Some(Stop::Cancel(decision));
        }
        let stop = cursor.stop.clone();
        // The pending action is read before the final take moves the entries out.
        let paused = match &stop {
            Some(Stop::Pause(seqs)) => seqs
                .iter()
                .map(|seq| {
                    cursor.log.get(seq).map(|entry| PendingAction {
                        execution_id: id.clone(),
                        seq: *seq,
                        connector: entry.connector.clone(),
                        method: entry.method.clone(),
                        args: entry.args.clone(),
                    })
                })
                .collect::<Option<Vec<_>>>(),
            _ => None,
        };
        (cursor.take_dirty_final(), cursor.take_clock(), stop, paused)
    };
    let logs = result.logs;
    let now = now_ms();
    let (transition, outcome) = match (stop, result.end) {
        (Some(Stop::Cancel(decision)), _) => {
            let outcome = cancelled(&id, &decision, logs.clone());
            let mut t = Transition::new(ExecutionStatus::Running, ExecutionStatus::Cancelled, now)
                .with_decision(decision);
            t.logs = Some(logs);
            (t, outcome)
        }
        (Some(Stop::Pause(seqs)), _) => {
            let Some(pending) = paused.filter(|p| !p.is_empty()) else {
                return Err(RuntimeError::Internal {
                    id,
                    message: format!("a paused entry of {seqs:?} is missing from the pass's log"),
                });
            };
            let mut t = Transition::new(ExecutionStatus::Running, ExecutionStatus::Paused, now);
            t.logs = Some(logs);
            (
                t,
                Outcome::Paused {
                    execution_id: id.clone(),
                    pending,
                },
            )
        }
        (Some(Stop::Fail(error)), _) | (None, PassEnd::Failed(error)) => {
            let (error, code) = coded(error, &lock_thrown(&host.thrown));
            failed(&id, error, code, logs, now)
        }
        (Some(Stop::Diverged(divergence)), _) => {
            failed(&id, divergence.to_string(), ErrorCode::Diverged, logs, now)
        }
        (None, PassEnd::Aborted) => failed(
            &id,
            "the sandbox stopped the pass without a reason".into(),
            ErrorCode::Internal,
            logs,
            now,
        ),
        (None, PassEnd::Returned(value)) => {
            let size = serialized_len(&value);
            let mut t = Transition::new(ExecutionStatus::Running, ExecutionStatus::Completed, now);
            t.result = Some(if size > MAX_DURABLE_VALUE_CHARS {
                Value::String(format!(
                    "[result omitted from the audit record: {size} characters exceeds the {MAX_DURABLE_VALUE_CHARS}-character limit for a durable value; the model received it in full]"
                ))
            } else {
                value.clone()
            });
            t.logs = Some(logs.clone());
            (
                t,
                Outcome::Completed {
                    execution_id: id.clone(),
                    result: value,
                    logs,
                },
            )
        }
    };
    let to = transition.to;
    let error = transition.error.clone();
    let last = Commit {
        execution_id: id.clone(),
        owner: Some(inner.node.clone()),
        entries,
        transition: Some(transition),
        // Only a later pass reads the tape: a terminal run leaves it as its writes left it.
        clock: clock.filter(|_| to == ExecutionStatus::Paused),
    };
    let won = match runtime.commit_traced(&last, Some(&span)).await {
        Ok(won) => won,
        Err(e) => return runtime.end_unrecorded(&id, e, last.transition).await,
    };
    let unsettled = last.entries;
    drop(guard);
    if !won {
        return lost_claim(runtime, &id, unsettled).await;
    }
    span.record("codemode.status", to.as_str());
    note_execution(ExecutionStatus::Running, to);
    runtime.publish_end(&id, to, error.as_deref());
    if let Outcome::Paused { pending, .. } = &outcome {
        runtime.publish(RuntimeEvent::PendingCreated {
            execution_id: id.clone(),
            pending: pending.clone(),
        });
    }
    let pass_status = match to {
        ExecutionStatus::Paused => PassEndStatus::Paused,
        ExecutionStatus::Completed => PassEndStatus::Completed,
        ExecutionStatus::Cancelled => PassEndStatus::Cancelled,
        _ => PassEndStatus::Error,
    };
    runtime.pass_ended(&id, pass_status).await;
    match to {
        ExecutionStatus::Completed => runtime.dispose(&id, ExecutionEndStatus::Completed).await,
        ExecutionStatus::Error => runtime.dispose(&id, ExecutionEndStatus::Error).await,
        ExecutionStatus::Cancelled => runtime.dispose(&id, ExecutionEndStatus::Cancelled).await,
        _ => {}
    }
    // The model's view, reshaped by the host's transform once the pass is durable.
    let outcome = match outcome {
        Outcome::Completed {
            execution_id,
            result,
            mut logs,
        } => {
            let (result, note) =
                super::transform::shown(inner.transform_result.as_ref(), result).await;
            logs.extend(note);
            Outcome::Completed {
                execution_id,
                result,
                logs,
            }
        }
        other => other,
    };
    Ok(outcome)
}

/// The end of a pass whose last commit (`unsettled`) was refused: cancelled meanwhile (the
/// cancel already disposed of it; what the pass's writes did is recorded now), or expired
/// or taken over by another node.
async fn lost_claim(
    runtime: &Runtime,
    id: &str,
    unsettled: Vec<LogEntry>,
) -> Result<Outcome, RuntimeError> {
    let now = runtime.load(id).await?;
    if now.status == ExecutionStatus::Cancelled {
        // The writes that ran stay applied, with their results, and revertible.
        runtime.settle_cancelled(id, unsettled).await;
        runtime.pass_ended(id, PassEndStatus::Cancelled).await;
        let decision = now
            .decisions
            .iter()
            .rev()
            .find(|d| d.kind == crate::model::DecisionKind::Cancel);
        return Ok(match decision {
            Some(decision) => cancelled(id, decision, Vec::new()),
            None => Outcome::error(
                id,
                "the execution was cancelled",
                ErrorCode::Cancelled,
                Vec::new(),
            ),
        });
    }
    Err(RuntimeError::AlreadyHandled {
        id: id.to_string(),
        what: "expired or taken over while this pass ran",
    })
}

/// What the caller of a cancelled pass receives.
fn cancelled(id: &str, decision: &Decision, logs: Vec<String>) -> Outcome {
    Outcome::error(
        id,
        format!(
            "the execution was cancelled by {}; what it applied stays (roll it back to undo it)",
            decision.by
        ),
        ErrorCode::Cancelled,
        logs,
    )
}

fn failed(
    id: &str,
    error: String,
    code: ErrorCode,
    logs: Vec<String>,
    now: i64,
) -> (Transition, Outcome) {
    let error = durable_text(error);
    let mut t = Transition::new(ExecutionStatus::Running, ExecutionStatus::Error, now);
    t.error = Some(error.clone());
    t.logs = Some(logs.clone());
    (t, Outcome::error(id, error, code, logs))
}

impl Host for PassHost {
    fn call(&self, call: HostCall) -> BoxFuture<'_, HostReply> {
        if self.settled.load(Ordering::SeqCst) {
            return Box::pin(async { HostReply::Throw(LATE_CALL.into()) });
        }
        let open = self.open();
        Box::pin(self.answer(call, open))
    }

    fn call_shared(self: Arc<Self>, call: HostCall) -> BoxFuture<'static, HostReply> {
        if self.settled.load(Ordering::SeqCst) {
            return Box::pin(async { HostReply::Throw(LATE_CALL.into()) });
        }
        let open = self.open();
        Box::pin(async move { self.answer(call, open).await })
    }

    fn settled(&self) {
        self.settled.store(true, Ordering::SeqCst);
    }

    fn console(&self, line: &str) {
        self.runtime.publish(RuntimeEvent::Console {
            execution_id: self.execution_id.clone(),
            line: line.to_string(),
        });
    }

    fn stop_flag(&self) -> Option<Arc<AtomicBool>> {
        Some(self.signal.stop_flag())
    }

    fn clock_readings(&self, runs: &[ClockRun]) {
        self.lock().clock_readings(runs);
    }
}

impl PassHost {
    /// Counts a call from when the sandbox makes it, so the gate knows what may still come.
    fn open(&self) -> Open {
        self.lock().delivery.opened();
        Open(self.cursor.clone())
    }

    /// Answers one call, in its turn of the delivery order.
    async fn answer(&self, call: HostCall, open: Open) -> HostReply {
        let _open = open;
        {
            if let Some(decision) = self.signal.cancelled() {
                return self.abort(Stop::Cancel(decision));
            }
            if self.lock().stop.is_some() {
                return HostReply::Abort;
            }
            let answer = async {
                let (namespace, method) = (call.namespace.clone(), call.method.clone());
                let (ticket, reply) = if call.namespace == SDK_NAMESPACE {
                    self.sdk_call(call).await
                } else {
                    self.connector_call(call).await
                };
                if let HostReply::Throw(message) = &reply {
                    let code =
                        ErrorCode::of_host_throw(&namespace, &method, ticket.is_some(), message);
                    self.note_thrown(code, message, &namespace, &method);
                }
                match (ticket, &reply) {
                    (_, HostReply::Abort) | (None, _) => reply,
                    // The reply reaches the sandbox in its turn.
                    (Some(ticket), _) => match self.parked(Wait::Turn(ticket)).await {
                        true => {
                            // Once the code settled, a reply reaches no code.
                            if !self.settled.load(Ordering::SeqCst) {
                                self.lock().delivery.seen(ticket);
                            }
                            reply
                        }
                        false => HostReply::Abort,
                    },
                }
            };
            // A cancel stops waiting for the answer (a write still runs to its end, as its
            // own task, and is recorded).
            tokio::select! {
                reply = answer => reply,
                _ = self.signal.wait_cancelled() => match self.signal.cancelled() {
                    Some(decision) => self.abort(Stop::Cancel(decision)),
                    None => HostReply::Abort,
                },
            }
        }
    }

    /// Keeps what the host threw into the code for a call of `namespace.method`, for coding
    /// the pass's error and naming the call a connector's failure came from.
    fn note_thrown(&self, code: ErrorCode, message: &str, namespace: &str, method: &str) {
        if let Ok(mut thrown) = self.thrown.lock() {
            if thrown.len() == MAX_THROWN {
                thrown.remove(0);
            }
            let call = (namespace != SDK_NAMESPACE).then(|| format!("{namespace}.{method}"));
            thrown.push((code, message.to_string(), call));
        }
    }

    /// Locks the pass's cursor.
    pub(super) fn lock(&self) -> MutexGuard<'_, ReplayCursor> {
        lock(&self.cursor)
    }

    /// Stops the pass with `stop` and tells the sandbox to abort.
    pub(super) fn abort(&self, stop: Stop) -> HostReply {
        self.lock().stop(stop);
        HostReply::Abort
    }

    /// Waits on the delivery gate (see [`Parked`]).
    pub(super) fn parked(&self, wait: Wait) -> Parked<'_> {
        Parked {
            cursor: &self.cursor,
            wait,
            at: None,
        }
    }
}
