//! One pass: run the code from the start, answering each call from the log or for real.
//!
//! What must be durable when: a read is safe to run again, so its entry is buffered and
//! written with the next commit (the pass end at the latest). A write that needs no approval
//! gets its `executing` mark committed (with everything buffered before it) before the
//! connector runs; its `applied` mark rides on the next commit. A crash therefore loses only
//! reads, and leaves a write `executing`, which the next pass runs again with the same
//! idempotency key.

use super::caps::Gate;
use super::cursor::{durable_text, json_size, Limits, ReplayCursor, Stop};
use super::delivery::Wait;
use super::finish::FinishOnDrop;
use super::flush::{lock, Flusher};
use super::trace::call_outcome;
use super::watch::{PassSignal, RuntimeEvent};
use super::Runtime;
use crate::connector::{CallContext, Connector, ExecutionEndStatus, PassEndStatus, ReplayPolicy};
use crate::executor::{ExecuteRequest, Host, HostCall, HostReply, PassEnd, SDK_NAMESPACE};
use crate::model::{now_ms, Decision, Execution, LogEntry, Outcome, PendingAction};
use crate::status::{note_execution, EntryState, ExecutionStatus};
use crate::store::{Commit, Transition};
use crate::value::{canonical_eq, serialized_len, MAX_DURABLE_VALUE_CHARS};
use crate::{RuntimeError, ToolError};
use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::{json, Value};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use tracing::{Instrument, Span};

/// The host side of one pass.
pub(super) struct PassHost {
    pub(super) runtime: Runtime,
    pub(super) execution_id: String,
    pub(super) cursor: Arc<Mutex<ReplayCursor>>,
    /// Each write in flight holds a read guard; the pass end takes the write guard, so it
    /// waits for writes the code did not await before it commits.
    writes: Arc<tokio::sync::RwLock<()>>,
    /// Set when someone cancels the execution while this pass runs it.
    signal: Arc<PassSignal>,
    /// The standing approvals (scope `execution`) recorded on the execution.
    standing: Vec<Decision>,
    /// The calls in flight, within the caps per connector and per execution.
    gate: Arc<Gate>,
    /// The pass's span, the parent of its call and commit spans.
    pub(super) span: Span,
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
        cursor: Arc::new(Mutex::new(ReplayCursor::new(execution.log, limits))),
        writes: Arc::new(tokio::sync::RwLock::new(())),
        signal: guard.signal.clone(),
        standing,
        gate: Gate::new(inner.caps.clone()),
        span: span.clone(),
    });
    let request = ExecuteRequest {
        code: execution.code,
        namespaces: inner.registry.namespaces(),
    };
    let result = inner.executor.execute(request, host.clone()).await;
    // A write the code did not await still runs to its end and is recorded before the pass
    // commits: the log never says `executing` for a run that ended.
    drop(host.writes.write().await);
    if host.signal.cancelled().is_none() {
        host.run_approved_leftovers().await;
    }
    let (entries, stop, paused) = {
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
        (cursor.take_dirty_final(), stop, paused)
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
                return Err(RuntimeError::Store(crate::StoreError::Backend(format!(
                    "internal error: a paused entry of {seqs:?} is missing from the pass's log"
                ))));
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
            failed(&id, error, logs, now)
        }
        (None, PassEnd::Aborted) => failed(
            &id,
            "the sandbox stopped the pass without a reason".into(),
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
            None => Outcome::Error {
                execution_id: id.to_string(),
                error: "the execution was cancelled".into(),
                logs: Vec::new(),
            },
        });
    }
    Err(RuntimeError::AlreadyHandled {
        id: id.to_string(),
        what: "expired or taken over while this pass ran",
    })
}

/// What the caller of a cancelled pass receives.
fn cancelled(id: &str, decision: &Decision, logs: Vec<String>) -> Outcome {
    Outcome::Error {
        execution_id: id.to_string(),
        error: format!(
            "the execution was cancelled by {}; what it applied stays (roll it back to undo it)",
            decision.by
        ),
        logs,
    }
}

fn failed(id: &str, error: String, logs: Vec<String>, now: i64) -> (Transition, Outcome) {
    let error = durable_text(error);
    let mut t = Transition::new(ExecutionStatus::Running, ExecutionStatus::Error, now);
    t.error = Some(error.clone());
    t.logs = Some(logs.clone());
    (
        t,
        Outcome::Error {
            execution_id: id.to_string(),
            error,
            logs,
        },
    )
}

impl Host for PassHost {
    fn call(&self, call: HostCall) -> BoxFuture<'_, HostReply> {
        let open = self.open();
        Box::pin(self.answer(call, open))
    }

    fn call_shared(self: Arc<Self>, call: HostCall) -> BoxFuture<'static, HostReply> {
        let open = self.open();
        Box::pin(async move { self.answer(call, open).await })
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
                let (ticket, reply) = if call.namespace == SDK_NAMESPACE {
                    self.sdk_call(call).await
                } else {
                    self.connector_call(call).await
                };
                match (ticket, &reply) {
                    (_, HostReply::Abort) | (None, _) => reply,
                    // The reply reaches the sandbox in its turn.
                    (Some(ticket), _) => match self.parked(Wait::Turn(ticket)).await {
                        true => reply,
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
}

/// A host call in flight, counted by the delivery gate until it finishes or is dropped.
struct Open(Arc<Mutex<ReplayCursor>>);

impl Drop for Open {
    fn drop(&mut self) {
        lock(&self.0).delivery.closed(None);
    }
}

/// A host future parked on the delivery gate; `true` when it may go on, `false` when the
/// pass stops. The last future to park while no other can progress decides the stop.
struct Parked<'a> {
    cursor: &'a Mutex<ReplayCursor>,
    wait: Wait,
    /// The gate's epoch when this future parked, while that park still counts.
    at: Option<u64>,
}

impl Future for Parked<'_> {
    type Output = bool;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
        let at = self.at.take();
        let mut cursor = lock(self.cursor);
        cursor.delivery.unpark(at);
        if cursor.stop.is_some() {
            return Poll::Ready(false);
        }
        if let Wait::Turn(ticket) = self.wait {
            if cursor.delivery.is_turn(ticket) {
                cursor.delivery.deliver(ticket);
                return Poll::Ready(true);
            }
        }
        let (epoch, stuck) = cursor.delivery.park(cx.waker());
        if !stuck {
            drop(cursor);
            self.at = Some(epoch);
            return Poll::Pending;
        }
        let stop = if !cursor.delivery.awaiting.is_empty() {
            Stop::Pause(cursor.delivery.awaiting.clone())
        } else {
            Stop::Fail(match cursor.delivery.due_next() {
                Some((seq, name)) => format!(
                    "replay diverged: the log recorded that the result of seq {seq} ({name}) reached the code next, but this pass never made that call. On every pass the code must make the same calls with the same arguments; wrap Date.now(), Math.random() and other nondeterminism in codemode.step(name, fn)"
                ),
                None => "internal error: every call in flight waits for a result that no call will deliver".into(),
            })
        };
        cursor.stop(stop);
        Poll::Ready(false)
    }
}

impl Drop for Parked<'_> {
    fn drop(&mut self) {
        if self.at.is_some() {
            lock(self.cursor).delivery.unpark(self.at);
        }
    }
}

/// What to do with one connector call, decided under the cursor lock.
enum CallPlan {
    Replay(u64, Value),
    Rethrow(u64, String),
    /// Wait for a person's decision, which comes after this pass pauses.
    Await,
    /// A person rejected it while approving others of its batch: record this error.
    Refuse(u64, String),
    /// Run the connector; `mark`, when set, is the `executing` entry to record and commit
    /// once the call may run (within the caps), before it runs; `args`, when set, are the
    /// approved arguments that replace the model's.
    Execute {
        seq: u64,
        mark: Option<Box<LogEntry>>,
        args: Option<Value>,
    },
    Abort,
}

/// Records the outcome of the call at `seq` and says what the sandbox gets. The outcome is
/// recorded even when the pass is stopping, so the log says what happened.
fn record(
    cursor: &Mutex<ReplayCursor>,
    seq: u64,
    outcome: Result<Value, ToolError>,
) -> (Option<u64>, HostReply) {
    let mut cursor = lock(cursor);
    let reply = record_locked(&mut cursor, seq, outcome);
    if matches!(reply, HostReply::Abort) {
        return (None, reply);
    }
    // The result's place in the delivery order, recorded with it (the entry is already
    // marked for the next commit).
    let ticket = cursor.delivery.ticket(seq);
    if let Some(entry) = cursor.log.get_mut(&seq) {
        entry.delivered = Some(ticket);
    }
    (Some(ticket), reply)
}

fn record_locked(
    cursor: &mut ReplayCursor,
    seq: u64,
    outcome: Result<Value, ToolError>,
) -> HostReply {
    let Some(entry) = cursor.log.get(&seq) else {
        return HostReply::Abort;
    };
    let reply = match outcome {
        Ok(result) => {
            let keep = if entry.ephemeral {
                None
            } else {
                let (bytes, chars) = json_size(&result);
                if chars > MAX_DURABLE_VALUE_CHARS {
                    let what = format!(
                        "the result of {}.{} (seq {seq})",
                        entry.connector, entry.method
                    );
                    cursor.stop(Stop::Fail(oversized(&what, chars)));
                    return HostReply::Abort;
                }
                if !cursor.add_log_bytes(bytes) {
                    return HostReply::Abort;
                }
                cursor.buffer(bytes);
                Some(result.clone())
            };
            cursor.update(seq, |entry| {
                entry.state = EntryState::Applied;
                entry.error = None;
                if keep.is_some() {
                    entry.result = keep;
                }
            });
            HostReply::Value(result)
        }
        Err(error) => {
            let message = durable_text(error.0);
            cursor.add_log_bytes(message.len() as u64);
            cursor.update(seq, |entry| {
                entry.state = EntryState::Error;
                entry.error = Some(message.clone());
            });
            HostReply::Throw(message)
        }
    };
    if cursor.stop.is_some() {
        return HostReply::Abort;
    }
    reply
}

impl PassHost {
    fn lock(&self) -> MutexGuard<'_, ReplayCursor> {
        lock(&self.cursor)
    }

    /// Stops the pass with `stop` and tells the sandbox to abort.
    fn abort(&self, stop: Stop) -> HostReply {
        self.lock().stop(stop);
        HostReply::Abort
    }

    async fn connector_call(&self, call: HostCall) -> (Option<u64>, HostReply) {
        let inner = &self.runtime.inner;
        let Some((registered, tool)) = inner.registry.tool(&call.namespace, &call.method) else {
            let message = format!(
                "{}.{} is not a method; use codemode.search(...) to find one",
                call.namespace, call.method
            );
            return (None, HostReply::Throw(message));
        };
        if let Err(message) = tool.validate(&call.namespace, &call.args) {
            return (None, HostReply::Throw(message));
        }
        let (args_bytes, size) = json_size(&call.args);
        if size > MAX_DURABLE_VALUE_CHARS {
            let what = format!("the arguments of {}.{}", call.namespace, call.method);
            return (None, self.abort(Stop::Fail(oversized(&what, size))));
        }
        let spec = &tool.spec;
        let (at, decision) = {
            let mut cursor = self.lock();
            let Some(seq) = cursor.next_seq() else {
                return (None, HostReply::Abort);
            };
            let plan = match cursor.log.get(&seq) {
                Some(recorded) => {
                    if recorded.connector != call.namespace
                        || recorded.method != call.method
                        || !canonical_eq(&recorded.args, &call.args)
                    {
                        let message = divergence(seq, recorded, &call);
                        cursor.stop(Stop::Fail(message));
                        CallPlan::Abort
                    } else {
                        match recorded.state {
                            EntryState::Applied if recorded.ephemeral => CallPlan::Execute {
                                seq,
                                mark: None,
                                args: None,
                            },
                            // Replayed once per pass: the entry leaves memory with its result.
                            EntryState::Applied => CallPlan::Replay(
                                cursor.delivery.ticket(seq),
                                cursor
                                    .log
                                    .remove(&seq)
                                    .and_then(|e| e.result)
                                    .unwrap_or(Value::Null),
                            ),
                            EntryState::Error => CallPlan::Rethrow(
                                cursor.delivery.ticket(seq),
                                cursor
                                    .log
                                    .remove(&seq)
                                    .and_then(|e| e.error)
                                    .unwrap_or_else(|| "the call failed".into()),
                            ),
                            EntryState::Pending if rejected(recorded) => {
                                CallPlan::Refuse(seq, rejection(recorded))
                            }
                            EntryState::Pending | EntryState::Executing => {
                                // Approved (the pass claimed the paused run) or left by a
                                // crash; it runs with the arguments a person approved, if any.
                                let mut entry = recorded.clone();
                                entry.state = EntryState::Executing;
                                let args = entry.approved_args.clone();
                                CallPlan::Execute {
                                    seq,
                                    mark: Some(Box::new(entry)),
                                    args,
                                }
                            }
                            EntryState::Reverted => {
                                cursor.stop(Stop::Fail(format!(
                                    "seq {seq} ({}.{}) was reverted by a rollback; a rolled-back execution cannot run again",
                                    call.namespace, call.method
                                )));
                                CallPlan::Abort
                            }
                        }
                    }
                }
                None => {
                    let mut entry = LogEntry {
                        seq,
                        connector: call.namespace.clone(),
                        method: call.method.clone(),
                        args: call.args.clone(),
                        result: None,
                        error: None,
                        requires_approval: spec.requires_approval,
                        ephemeral: spec.replay == ReplayPolicy::Reexecute,
                        read_only: spec.read_only,
                        state: EntryState::Executing,
                        approved_args: None,
                        decisions: Vec::new(),
                        delivered: None,
                    };
                    if !cursor.add_log_bytes(args_bytes) {
                        CallPlan::Abort
                    } else if spec.requires_approval {
                        match self
                            .standing
                            .iter()
                            .find(|d| d.covers(&call.namespace, &call.method))
                        {
                            // A standing approval of this method covers the call: it runs.
                            Some(standing) => {
                                entry.decisions.push(standing.for_entry());
                                CallPlan::Execute {
                                    seq,
                                    mark: Some(Box::new(entry)),
                                    args: None,
                                }
                            }
                            None => {
                                // It waits with the others started with it; the pass
                                // pauses once nothing else can progress.
                                entry.state = EntryState::Pending;
                                cursor.set(entry);
                                cursor.delivery.awaiting.push(seq);
                                CallPlan::Await
                            }
                        }
                    } else {
                        let durable = !spec.read_only && spec.replay == ReplayPolicy::Log;
                        let mark = if durable {
                            Some(Box::new(entry))
                        } else {
                            // Reads are recorded when they return.
                            cursor.track(entry);
                            None
                        };
                        CallPlan::Execute {
                            seq,
                            mark,
                            args: None,
                        }
                    }
                }
            };
            (seq, plan)
        };
        let replayed = matches!(decision, CallPlan::Replay(..) | CallPlan::Rethrow(..));
        let span = self.runtime.call_span(&self.span, &call, at, replayed);
        let (seq, mark, approved) = match decision {
            CallPlan::Replay(ticket, value) => {
                call_outcome(&span, "ok");
                return (Some(ticket), HostReply::Value(value));
            }
            CallPlan::Rethrow(ticket, message) => {
                call_outcome(&span, "error");
                return (Some(ticket), HostReply::Throw(message));
            }
            CallPlan::Await => {
                call_outcome(&span, "pending");
                drop(span);
                self.parked(Wait::Approval).await;
                return (None, HostReply::Abort);
            }
            CallPlan::Abort => {
                call_outcome(&span, "aborted");
                return (None, HostReply::Abort);
            }
            CallPlan::Refuse(seq, message) => {
                call_outcome(&span, "rejected");
                return record(&self.cursor, seq, Err(ToolError(message)));
            }
            CallPlan::Execute { seq, mark, args } => (seq, mark, args),
        };
        let mut call = call;
        if let Some(args) = approved {
            call.args = args;
        }
        let ctx = CallContext {
            execution_id: self.execution_id.clone(),
            seq,
        };
        let connector = registered.connector.clone();
        if let Some(entry) = mark {
            return self.write(connector, call, ctx, *entry, span).await;
        }
        // Past the caps, the call waits here for its turn, in seq order.
        let permit = self.gate.enter(seq, &call.namespace).await;
        let timeout = self.gate.timeout(&call.namespace);
        let outcome = timed(&self.runtime, connector, call, ctx, timeout, span).await;
        drop(permit);
        let reply = record(&self.cursor, seq, outcome);
        if self.lock().needs_flush() {
            if let Err(stop) = self.flush().await {
                return (None, self.abort(stop));
            }
        }
        reply
    }

    /// Runs a write inline while the sandbox waits for it, and as a task of its own once it
    /// stops waiting (the code returned or threw without awaiting it), so that a write the
    /// pass decided to run (an approved one above all) runs and is recorded either way: it
    /// waits for its turn within the caps, is marked `executing` (`entry`) and committed,
    /// runs, and records its outcome.
    pub(super) async fn write(
        &self,
        connector: Arc<dyn Connector>,
        call: HostCall,
        ctx: CallContext,
        entry: LogEntry,
        span: Span,
    ) -> (Option<u64>, HostReply) {
        let seq = ctx.seq;
        let cursor = self.cursor.clone();
        let runtime = self.runtime.clone();
        let timeout = self.gate.timeout(&call.namespace);
        let gate = self.gate.clone();
        let flusher = Flusher {
            runtime: self.runtime.clone(),
            execution_id: self.execution_id.clone(),
            cursor: self.cursor.clone(),
            span: self.span.clone(),
        };
        let run = async move {
            // Past the caps, the call waits here for its turn, in seq order.
            let permit = gate.enter(seq, &call.namespace).await;
            // Marked `executing` only now: a write still waiting for its turn has not run.
            {
                let mut cursor = lock(&cursor);
                if cursor.stop.is_some() {
                    return (None, HostReply::Abort);
                }
                cursor.set(entry);
            }
            if let Err(stop) = flusher.flush().await {
                lock(&cursor).stop(stop);
                return (None, HostReply::Abort);
            }
            let outcome = timed(&runtime, connector, call, ctx, timeout, span).await;
            drop(permit);
            record(&cursor, seq, outcome)
        };
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return run.await;
        };
        let in_flight = self.writes.clone().read_owned().await;
        // A connector that panics is contained here, as a task's panic would be.
        let run = std::panic::AssertUnwindSafe(async move {
            let reply = run.await;
            drop(in_flight);
            reply
        })
        .catch_unwind();
        match FinishOnDrop::new(handle, run).await {
            Ok(reply) => reply,
            Err(panic) => {
                let why = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".to_string());
                (None, self.abort(Stop::Fail(format!(
                    "internal error: the call at seq {seq} stopped without an outcome ({why}); its outcome is unknown, and a rollback reverts it"
                ))))
            }
        }
    }

    /// Commits every changed entry now, while this node still holds the lease.
    async fn flush(&self) -> Result<(), Stop> {
        Flusher {
            runtime: self.runtime.clone(),
            execution_id: self.execution_id.clone(),
            cursor: self.cursor.clone(),
            span: self.span.clone(),
        }
        .flush()
        .await
    }

    /// Answers an SDK call; a step's reply carries its ticket (search, describe and run
    /// are not in the log and reach the sandbox as soon as they are ready).
    async fn sdk_call(&self, call: HostCall) -> (Option<u64>, HostReply) {
        match call.method.as_str() {
            "step" => self.step_begin(&call.args),
            "step_result" | "step_error" => self.step_end(&call),
            "search" | "describe" | "run" => (None, super::sdk::answer(&self.runtime, &call).await),
            other => (
                None,
                HostReply::Throw(format!(
                    "codemode.{other} does not exist; the SDK has search, describe, step and run"
                )),
            ),
        }
    }

    /// Waits on the delivery gate (see [`Parked`]).
    fn parked(&self, wait: Wait) -> Parked<'_> {
        Parked {
            cursor: &self.cursor,
            wait,
            at: None,
        }
    }

    fn step_begin(&self, args: &Value) -> (Option<u64>, HostReply) {
        let Some(name) = args.get("name").and_then(Value::as_str) else {
            return (
                None,
                HostReply::Throw("codemode.step(name, fn) needs a string name".into()),
            );
        };
        let call_args = json!({ "name": name });
        let mut cursor = self.lock();
        let Some(seq) = cursor.next_seq() else {
            return (None, HostReply::Abort);
        };
        if let Some(recorded) = cursor.log.get(&seq) {
            if recorded.connector != SDK_NAMESPACE
                || recorded.method != "step"
                || !canonical_eq(&recorded.args, &call_args)
            {
                let call = HostCall {
                    namespace: SDK_NAMESPACE.into(),
                    method: "step".into(),
                    args: call_args,
                };
                let message = divergence(seq, recorded, &call);
                cursor.stop(Stop::Fail(message));
                return (None, HostReply::Abort);
            }
            match recorded.state {
                EntryState::Applied => {
                    let value = cursor.log.remove(&seq).and_then(|e| e.result);
                    let value = value.unwrap_or(Value::Null);
                    let reply = HostReply::Value(json!({ "replay": true, "value": value }));
                    return (Some(cursor.delivery.ticket(seq)), reply);
                }
                EntryState::Error => {
                    let error = cursor.log.remove(&seq).and_then(|e| e.error);
                    let reply = HostReply::Throw(error.unwrap_or_default());
                    return (Some(cursor.delivery.ticket(seq)), reply);
                }
                _ => {}
            }
        } else {
            if !cursor.add_log_bytes(json_size(&call_args).0) {
                return (None, HostReply::Abort);
            }
            cursor.track(LogEntry {
                seq,
                connector: SDK_NAMESPACE.into(),
                method: "step".into(),
                args: call_args,
                result: None,
                error: None,
                requires_approval: false,
                ephemeral: false,
                read_only: true,
                state: EntryState::Executing,
                approved_args: None,
                decisions: Vec::new(),
                delivered: None,
            });
        }
        (
            None,
            HostReply::Value(json!({ "replay": false, "seq": seq })),
        )
    }

    fn step_end(&self, call: &HostCall) -> (Option<u64>, HostReply) {
        let seq = call.args.get("seq").and_then(Value::as_u64);
        let mut cursor = self.lock();
        let Some(mut entry) = seq.and_then(|s| cursor.log.get(&s)).cloned() else {
            return (None, HostReply::Throw("codemode.step: unknown step".into()));
        };
        if entry.method != "step" || entry.state != EntryState::Executing {
            return (
                None,
                HostReply::Throw("codemode.step: this step already ended".into()),
            );
        }
        if call.method == "step_error" {
            let error = call
                .args
                .get("error")
                .and_then(Value::as_str)
                .unwrap_or("the step failed");
            let error = durable_text(error.to_string());
            if !cursor.add_log_bytes(error.len() as u64) {
                return (None, HostReply::Abort);
            }
            entry.state = EntryState::Error;
            entry.error = Some(error);
        } else {
            let value = call.args.get("value").cloned().unwrap_or(Value::Null);
            let (bytes, size) = json_size(&value);
            if size > MAX_DURABLE_VALUE_CHARS {
                let name = entry.args["name"].as_str().unwrap_or_default().to_string();
                cursor.stop(Stop::Fail(oversized(
                    &format!("the value of step {name:?}"),
                    size,
                )));
                return (None, HostReply::Abort);
            }
            if !cursor.add_log_bytes(bytes) {
                return (None, HostReply::Abort);
            }
            cursor.buffer(bytes);
            entry.state = EntryState::Applied;
            entry.result = Some(value);
        }
        // The code goes on after this reply: the step's result takes its place in the order.
        let ticket = cursor.delivery.ticket(entry.seq);
        entry.delivered = Some(ticket);
        cursor.set(entry);
        (Some(ticket), HostReply::Value(Value::Null))
    }
}

/// Runs one connector call within its `timeout`, if any, inside its `span`, publishing its
/// start and its end with the time it took.
async fn timed(
    runtime: &Runtime,
    connector: Arc<dyn Connector>,
    call: HostCall,
    ctx: CallContext,
    timeout: Option<std::time::Duration>,
    span: Span,
) -> Result<Value, ToolError> {
    let (execution_id, seq) = (ctx.execution_id.clone(), ctx.seq);
    runtime.publish(RuntimeEvent::CallStarted {
        execution_id: execution_id.clone(),
        seq,
        connector: call.namespace.clone(),
        method: call.method.clone(),
    });
    let started = std::time::Instant::now();
    let run = connector
        .execute(&call.method, call.args, ctx)
        .instrument(span.clone());
    // The timer needs a tokio runtime; without one, the pass deadline bounds the call.
    let outcome = match timeout.filter(|_| tokio::runtime::Handle::try_current().is_ok()) {
        Some(limit) => match tokio::time::timeout(limit, run).await {
            Ok(outcome) => outcome,
            Err(_) => Err(ToolError(format!(
                "{}.{} did not answer within {} ms",
                call.namespace,
                call.method,
                limit.as_millis()
            ))),
        },
        None => run.await,
    };
    let outcome =
        outcome.map(
            |value| match runtime.inner.registry.tool(&call.namespace, &call.method) {
                Some((_, tool)) => tool.shaped(&call.namespace, value),
                None => value,
            },
        );
    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    span.record("codemode.duration_ms", duration_ms as i64);
    call_outcome(&span, if outcome.is_ok() { "ok" } else { "error" });
    runtime.publish(RuntimeEvent::CallEnded {
        execution_id,
        seq,
        connector: call.namespace,
        method: call.method,
        duration_ms,
        ok: outcome.is_ok(),
    });
    outcome
}

/// Whether a pending entry was rejected by an approval of others of its batch.
fn rejected(entry: &LogEntry) -> bool {
    entry
        .decisions
        .last()
        .is_some_and(|d| d.kind == crate::model::DecisionKind::Reject)
}

/// The error the code gets where it called an action a person rejected.
fn rejection(entry: &LogEntry) -> String {
    let by = entry.decisions.last().map(|d| d.by.to_string());
    format!(
        "{}.{} (seq {}) was rejected by {}, who approved other actions started with it; it did not run",
        entry.connector,
        entry.method,
        entry.seq,
        by.as_deref().unwrap_or("a person")
    )
}

fn describe_call(connector: &str, method: &str, args: &Value) -> String {
    let mut text = serde_json::to_string(args).unwrap_or_default();
    if text.len() > 300 {
        let cut = (0..=300)
            .rev()
            .find(|i| text.is_char_boundary(*i))
            .unwrap_or(0);
        text.truncate(cut);
        text.push('…');
    }
    format!("{connector}.{method}({text})")
}

fn divergence(seq: u64, recorded: &LogEntry, call: &HostCall) -> String {
    format!(
        "replay diverged at seq {seq}: the log recorded {} but this pass called {}. On every pass the code must make the same calls, in the same order, with the same arguments; wrap Date.now(), Math.random() and other nondeterminism in codemode.step(name, fn)",
        describe_call(&recorded.connector, &recorded.method, &recorded.args),
        describe_call(&call.namespace, &call.method, &call.args),
    )
}

fn oversized(what: &str, size: usize) -> String {
    format!(
        "{what} is {size} characters serialised; one durable value may be at most {MAX_DURABLE_VALUE_CHARS}. Store the data elsewhere (a file, a bucket, a table) and pass a small reference such as its path or id"
    )
}
