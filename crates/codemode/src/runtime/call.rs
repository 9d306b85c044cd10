//! One connector call of a pass: decided by the replay tables (`replay.rs`), then answered
//! from the log, run for real (a write marked `executing` and committed first), or parked
//! until a person decides.

use super::batch::joins_batch;
use super::cursor::{durable_text, json_size, oversized, too_deep, ReplayCursor, Stop};
use super::delivery::Wait;
use super::finish::FinishOnDrop;
use super::flush::{lock, Flusher};
use super::pass::PassHost;
use super::replay::{first_run, replay, Divergence, FirstCall, FirstRun, Recorded, Replay};
use super::trace::call_outcome;
use super::watch::RuntimeEvent;
use super::Runtime;
use crate::connector::{CallContext, Connector, ReplayPolicy, ToolSpec};
use crate::executor::{HostCall, HostReply};
use crate::model::{Decision, LogEntry};
use crate::status::EntryState;
use crate::value::{
    dismantle, durable_size, nested_deeper_than, MAX_DURABLE_DEPTH, MAX_DURABLE_VALUE_CHARS,
};
use crate::ToolError;
use futures::FutureExt;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use tracing::{Instrument, Span};

/// What to do with one connector call, once the cursor has its part done.
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

impl PassHost {
    /// Answers a call of a connector's method; the reply carries its ticket when it takes
    /// a place in the delivery order.
    pub(super) async fn connector_call(&self, call: HostCall) -> (Option<u64>, HostReply) {
        let inner = &self.runtime.inner;
        let Some((registered, tool)) = inner.registry.tool(&call.namespace, &call.method) else {
            let message = inner.registry.not_a_method(&call.namespace, &call.method);
            return (None, HostReply::Throw(message));
        };
        if let Err(message) = tool.validate(&call.namespace, &call.args) {
            return (None, HostReply::Throw(message));
        }
        let Some((args_bytes, size)) = durable_size(&call.args, MAX_DURABLE_DEPTH) else {
            let what = format!("the arguments of {}.{}", call.namespace, call.method);
            return (None, self.abort(Stop::Fail(too_deep(&what))));
        };
        if size > MAX_DURABLE_VALUE_CHARS {
            let what = format!("the arguments of {}.{}", call.namespace, call.method);
            return (None, self.abort(Stop::Fail(oversized(&what, size))));
        }
        let (at, decision) = {
            let mut cursor = self.lock();
            let Some(seq) = cursor.next_seq() else {
                return (None, HostReply::Abort);
            };
            cursor.delivery.started(seq, tool.path.clone());
            let plan = match cursor.log.get(&seq) {
                Some(recorded) => {
                    let answer = replay(Recorded::of(recorded, &call));
                    replayed(&mut cursor, seq, answer, &call)
                }
                None => self.first(&mut cursor, seq, &call, &tool.spec, args_bytes),
            };
            if matches!(plan, CallPlan::Await) {
                // A pause reports it, or it never ran: not a call the code left unawaited.
                cursor.delivery.forget(seq);
            }
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
        let reply = self.read(connector, call, ctx, span).await;
        if self.lock().needs_flush() {
            if let Err(stop) = self.flush().await {
                return (None, self.abort(stop));
            }
        }
        reply
    }

    /// Does the cursor's part of the first run of a call at `seq` (see [`first_run`]).
    fn first(
        &self,
        cursor: &mut ReplayCursor,
        seq: u64,
        call: &HostCall,
        spec: &ToolSpec,
        args_bytes: u64,
    ) -> CallPlan {
        let covering = match spec.requires_approval {
            true => self
                .standing
                .iter()
                .find(|d| d.covers(&call.namespace, &call.method)),
            false => None,
        };
        let answer = first_run(FirstCall {
            approval: spec.requires_approval,
            standing: covering.is_some(),
            reexecute: spec.replay == ReplayPolicy::Reexecute,
            read_only: spec.read_only,
        });
        let max_batch = self.runtime.inner.max_batch;
        if answer == FirstRun::Pause && !joins_batch(cursor.delivery.awaiting.len(), max_batch) {
            // The batch is full: the call waits in the program, unrecorded, and is proposed
            // with a later batch, when a pass reaches its seq again (see `batch.rs`).
            return CallPlan::Await;
        }
        let mut entry = new_entry(seq, call, spec);
        if !cursor.add_log_bytes(args_bytes) {
            return CallPlan::Abort;
        }
        match answer {
            FirstRun::Pause => {
                // It waits with the others started with it; the pass pauses once nothing
                // else can progress.
                entry.state = EntryState::Pending;
                cursor.set(entry);
                cursor.delivery.awaiting.push(seq);
                CallPlan::Await
            }
            FirstRun::RunCovered => {
                entry.decisions.extend(covering.map(Decision::for_entry));
                CallPlan::Execute {
                    seq,
                    mark: Some(Box::new(entry)),
                    args: None,
                }
            }
            FirstRun::RunWrite => CallPlan::Execute {
                seq,
                mark: Some(Box::new(entry)),
                args: None,
            },
            FirstRun::RunRead => {
                // Recorded when it returns.
                cursor.track(entry);
                CallPlan::Execute {
                    seq,
                    mark: None,
                    args: None,
                }
            }
        }
    }

    /// Runs a read (or a `reexecute` call) inline while the sandbox waits for it, and as a
    /// task of its own once it stops waiting (the code settled without awaiting it), so that
    /// it runs to its end and is recorded either way, as a write is.
    async fn read(
        &self,
        connector: Arc<dyn Connector>,
        call: HostCall,
        ctx: CallContext,
        span: Span,
    ) -> (Option<u64>, HostReply) {
        let seq = ctx.seq;
        let cursor = self.cursor.clone();
        let runtime = self.runtime.clone();
        let gate = self.gate.clone();
        let run = async move {
            // Past the caps, the call waits here for its turn, in seq order.
            let permit = gate.enter(seq, &call.namespace).await;
            let timeout = gate.timeout(&call.namespace);
            let outcome = timed(&runtime, connector, call, ctx, timeout, span).await;
            drop(permit);
            record(&cursor, seq, outcome)
        };
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return run.await;
        };
        // The pass end waits for it a while (see `pass.rs`).
        let in_flight = self.reads.clone().read_owned().await;
        let run = async move {
            let reply = run.await;
            drop(in_flight);
            reply
        };
        FinishOnDrop::new(handle, run).await
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
        let flusher = self.flusher();
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
        self.flusher().flush().await
    }

    fn flusher(&self) -> Flusher {
        Flusher {
            runtime: self.runtime.clone(),
            execution_id: self.execution_id.clone(),
            cursor: self.cursor.clone(),
            span: self.span.clone(),
        }
    }
}

/// Does the cursor's part of `answer` for the call at `seq`, whose entry the log recorded
/// (see [`replay`]).
fn replayed(cursor: &mut ReplayCursor, seq: u64, answer: Replay, call: &HostCall) -> CallPlan {
    match answer {
        // Replayed once per pass: the entry leaves memory with its result.
        Replay::ReturnResult => CallPlan::Replay(
            cursor.delivery.ticket(seq),
            cursor
                .log
                .remove(&seq)
                .and_then(|e| e.result)
                .unwrap_or(Value::Null),
        ),
        Replay::ThrowError => CallPlan::Rethrow(
            cursor.delivery.ticket(seq),
            cursor
                .log
                .remove(&seq)
                .and_then(|e| e.error)
                .unwrap_or_else(|| "the call failed".into()),
        ),
        Replay::RunAgain => CallPlan::Execute {
            seq,
            mark: None,
            args: None,
        },
        Replay::ThrowRejection => match cursor.log.get(&seq) {
            Some(recorded) => CallPlan::Refuse(seq, rejection(recorded)),
            None => CallPlan::Abort,
        },
        Replay::ParkUndecided => {
            // Proposed again with the others that wait; the pass pauses once nothing else
            // can progress.
            cursor.delivery.awaiting.push(seq);
            CallPlan::Await
        }
        Replay::RunApproved | Replay::RunInterrupted => {
            let Some(recorded) = cursor.log.get(&seq) else {
                return CallPlan::Abort;
            };
            // It runs with the arguments a person approved, if any.
            let mut entry = recorded.clone();
            entry.state = EntryState::Executing;
            let args = entry.approved_args.clone();
            CallPlan::Execute {
                seq,
                mark: Some(Box::new(entry)),
                args,
            }
        }
        Replay::FailDiverged => {
            if let Some(recorded) = cursor.log.get(&seq) {
                let divergence = Divergence::at(seq, recorded, call);
                cursor.stop(Stop::Diverged(divergence));
            }
            CallPlan::Abort
        }
        Replay::FailReverted => {
            cursor.stop(Stop::Fail(format!(
                "seq {seq} ({}.{}) was reverted by a rollback; a rolled-back execution cannot run again",
                call.namespace, call.method
            )));
            CallPlan::Abort
        }
    }
}

/// The entry of a call at `seq` the log has not recorded, marked `executing`.
fn new_entry(seq: u64, call: &HostCall, spec: &ToolSpec) -> LogEntry {
    LogEntry {
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
    }
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
            // Checked first: a value this deep is not walked by anything that recurses.
            if nested_deeper_than(&result, MAX_DURABLE_DEPTH) {
                let what = format!(
                    "the result of {}.{} (seq {seq})",
                    entry.connector, entry.method
                );
                cursor.stop(Stop::Fail(too_deep(&what)));
                dismantle(result);
                return HostReply::Abort;
            }
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
