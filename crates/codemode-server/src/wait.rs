//! Waiting in the call: a paused (or running) execution is followed until a decision made
//! elsewhere settles it, or the wait ends, so the model never has to poll.

use codemode::{
    Actor, EntryState, ErrorCode, Execution, ExecutionStatus, Outcome, PendingAction, Runtime,
    RuntimeError,
};
use serde_json::{json, Value};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long a tool call waits for a decision by default (`approvals.wait_ms`).
pub const DEFAULT_WAIT: Duration = Duration::from_secs(50);

/// How often a waiting call reports that it still waits.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(3);

/// How a wait ended.
#[derive(Debug)]
pub enum Waited {
    /// The execution as it was when it settled or the wait ran out.
    Done(Execution),
    /// The caller went away (its request was cancelled); the execution as it then was.
    Abandoned(Execution),
}

/// Follows execution `id` while it is running or paused, for at most `limit`, calling
/// `progress` when the wait begins and every [`PROGRESS_EVERY`]. When `cancel` fires, a
/// running execution is cancelled as `by` and a paused one is left paused.
pub async fn follow(
    rt: &Runtime,
    id: &str,
    limit: Duration,
    cancel: &CancellationToken,
    by: &Actor,
    mut progress: impl FnMut(&Execution),
) -> Result<Waited, RuntimeError> {
    let deadline: tokio::time::Instant =
        codemode::clock::instant_after(std::time::Instant::now(), limit).into();
    let mut current = load(rt, id).await?;
    loop {
        if !is_open(current.status) || tokio::time::Instant::now() >= deadline {
            return Ok(Waited::Done(current));
        }
        progress(&current);
        let step = deadline
            .saturating_duration_since(tokio::time::Instant::now())
            .min(PROGRESS_EVERY);
        tokio::select! {
            next = rt.wait(id, step) => current = next?,
            _ = cancel.cancelled() => {
                let now = load(rt, id).await?;
                if now.status == ExecutionStatus::Running {
                    tracing::info!(execution = id, by = %by, "cancel (the caller went away)");
                    return match rt.cancel(id, by.clone()).await {
                        Ok(e) => Ok(Waited::Abandoned(e)),
                        Err(e) => {
                            tracing::warn!(error = %e, "cancel failed");
                            Ok(Waited::Abandoned(load(rt, id).await?))
                        }
                    };
                }
                return Ok(Waited::Abandoned(now));
            }
        }
    }
}

/// Reads execution `id`, or says it is unknown.
pub async fn load(rt: &Runtime, id: &str) -> Result<Execution, RuntimeError> {
    rt.execution(id)
        .await?
        .ok_or_else(|| RuntimeError::UnknownExecution(id.to_string()))
}

/// Whether an execution in `status` may still change without a decision being waited for.
pub fn is_open(status: ExecutionStatus) -> bool {
    matches!(status, ExecutionStatus::Running | ExecutionStatus::Paused)
}

/// The actions a paused execution waits for.
pub fn pending_of(e: &Execution) -> Vec<PendingAction> {
    e.log
        .iter()
        .filter(|l| l.state == EntryState::Pending)
        .map(|l| PendingAction {
            execution_id: e.id.clone(),
            seq: l.seq,
            connector: l.connector.clone(),
            method: l.method.clone(),
            args: l.args.clone(),
        })
        .collect()
}

/// The outcome an execution stands at, when it is completed, failed or paused.
pub fn outcome_of(e: &Execution) -> Option<Outcome> {
    let execution_id = e.id.clone();
    match e.status {
        ExecutionStatus::Completed => Some(Outcome::Completed {
            execution_id,
            result: e.result.clone().unwrap_or(Value::Null),
            logs: e.logs.clone(),
        }),
        ExecutionStatus::Error => Some(Outcome::error(
            execution_id,
            e.error.clone().unwrap_or_default(),
            ErrorCode::of_execution(e).unwrap_or_default(),
            e.logs.clone(),
        )),
        ExecutionStatus::Paused => Some(Outcome::Paused {
            execution_id,
            pending: pending_of(e),
        }),
        _ => None,
    }
}

/// What an execution stands at, as JSON: its outcome's shape when it has one; otherwise its
/// `status` and `executionId`, with its `error` and `logs` when it ended another way
/// (rejected, cancelled, rolled back).
pub fn state_json(e: &Execution) -> Value {
    if let Some(outcome) = outcome_of(e) {
        return serde_json::to_value(outcome).unwrap_or(Value::Null);
    }
    let mut v = json!({"status": e.status, "executionId": e.id});
    if e.status != ExecutionStatus::Running {
        let error = e
            .error
            .clone()
            .unwrap_or_else(|| format!("the execution ended {}", status_name(e.status)));
        v["error"] = Value::String(error);
        if let Some(code) = ErrorCode::of_execution(e) {
            v["code"] = json!(code);
            v["retryable"] = json!(code.retryable());
        }
        if !e.logs.is_empty() {
            v["logs"] = json!(e.logs);
        }
    }
    v
}

/// What a waiting call is waiting for, in words: "approval of tasks.create_task".
pub fn waiting_for(e: &Execution) -> String {
    match e.status {
        ExecutionStatus::Paused => {
            let names: Vec<String> = pending_of(e)
                .iter()
                .map(|p| format!("{}.{}", p.connector, p.method))
                .collect();
            format!("waiting for approval of {}", names.join(", "))
        }
        _ => "waiting for the run to finish".to_string(),
    }
}

/// A status as its JSON name (`rolled_back`).
fn status_name(status: ExecutionStatus) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{status:?}"))
}
