//! Decisions with who made them: every approve, reject and rollback the server makes names
//! its actor (the token's name, `local`, or `elicitation`), recorded by the runtime; and the
//! take-over of a run whose node stopped.

use codemode::{Actor, Approval, Outcome, RollbackReport, Runtime, RuntimeError};

/// Approves the pending actions of `id` on behalf of `by`.
pub async fn approve(rt: &Runtime, id: &str, by: Actor) -> Result<Outcome, RuntimeError> {
    tracing::info!(execution = id, by = %by, "approve");
    rt.approve_with(id, Approval::by(by)).await
}

/// Rejects the pending action `seq` of `id` on behalf of `by`.
pub async fn reject(rt: &Runtime, id: &str, seq: u64, by: Actor) -> Result<bool, RuntimeError> {
    tracing::info!(execution = id, seq, by = %by, "reject");
    rt.reject_with(id, seq, by).await
}

/// Rolls `id` back on behalf of `by`.
pub async fn rollback(rt: &Runtime, id: &str, by: Actor) -> Result<RollbackReport, RuntimeError> {
    tracing::info!(execution = id, by = %by, "rollback");
    rt.rollback_with(id, by).await
}

/// Takes over `id`, a `running` execution whose node stopped, once its lease expired.
pub async fn resume(rt: &Runtime, id: &str) -> Result<Outcome, RuntimeError> {
    tracing::info!(execution = id, "resume interrupted");
    rt.resume_interrupted(id).await
}

/// The refusal of a take-over while the run's lease is live, saying when to try again.
pub fn lease_refusal(rt: &Runtime, e: &RuntimeError) -> Option<String> {
    let RuntimeError::AlreadyHandled { .. } = e else {
        return None;
    };
    let secs = rt.lease_duration().as_millis().div_ceil(1000);
    Some(format!("{e}; try again after the lease ({secs} s)"))
}
