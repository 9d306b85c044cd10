//! Acting on recorded executions with this build, and describing what came of it.

use super::{fixture_runtime, Op, Step};
use crate::journal::read_journal;
use crate::probe::Probe;
use codemode::{Actor, Approval, Runtime, RuntimeError, Store};
use serde::Serialize;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a take-over waits for the recording node's lease to pass (it has long passed when
/// a later build resumes a fixture; the recording program resumes it at once).
const TAKE_OVER_WAIT: Duration = Duration::from_secs(30);

/// Opens a [`fixture_runtime`] on `store` (the ledger writing to `journal`, which should be
/// new), does `steps` in order and describes, as JSON without times: the pending actions and
/// snippets found, for each step the execution before and after and what the operation
/// returned (or the refusal), what the connectors really ran and reverted, and every
/// execution's status at the end. `Err` only when the store cannot be read or the fixture
/// lacks an execution a step names.
pub async fn exercise(
    store: Arc<dyn Store>,
    journal: &Path,
    steps: &[Step],
) -> Result<Value, String> {
    let probe = Probe::default();
    let runtime = fixture_runtime(store, &probe, journal).map_err(|e| format!("runtime: {e}"))?;
    let mut pending = runtime
        .pending(None)
        .await
        .map_err(|e| format!("pending actions: {e}"))?;
    pending.sort_by(|a, b| (&a.execution_id, a.seq).cmp(&(&b.execution_id, b.seq)));
    let mut snippets = Vec::new();
    for snippet in runtime
        .snippets()
        .await
        .map_err(|e| format!("snippets: {e}"))?
    {
        snippets.push(without(&snippet, &["savedAt"])?);
    }
    let mut described = Vec::new();
    for step in steps {
        let id = step.execution.as_str();
        let before = describe(&runtime, id).await?;
        if before.is_null() && step.op != Op::Call {
            return Err(format!("the fixture has no execution {id}"));
        }
        let returned = act(&runtime, step).await?;
        let after = describe(&runtime, id).await?;
        described.push(json!({
            "execution": id,
            "do": step.op,
            "before": before,
            "returned": returned,
            "after": after,
        }));
    }
    let record = probe.record();
    let statuses: std::collections::BTreeMap<String, String> = runtime
        .executions(None)
        .await
        .map_err(|e| format!("executions: {e}"))?
        .into_iter()
        .map(|e| (e.id, e.status.as_str().to_string()))
        .collect();
    Ok(json!({
        "pendingBefore": pending,
        "snippetsBefore": snippets,
        "steps": described,
        "probe": {
            "runs": record.runs,
            "reverts": record.reverts,
            "keys": record.keys,
            "passEnds": record.pass_ends,
            "disposals": record.disposals,
        },
        "ledger": read_journal(journal),
        "statusesAfter": statuses,
    }))
}

/// Does one step; what the operation returned, or `{"refused": message}`.
async fn act(runtime: &Runtime, step: &Step) -> Result<Value, String> {
    let id = step.execution.as_str();
    let by = step.by.as_deref().map_or_else(Actor::local, Actor::new);
    match step.op {
        Op::Approve => {
            let approval = Approval {
                by,
                seqs: step.seqs.clone(),
                ..Approval::default()
            };
            value(runtime.approve_with(id, approval).await)
        }
        Op::Resume => value(take_over(runtime, id).await),
        Op::Rollback => value(runtime.rollback_with(id, by).await),
        Op::Call => {
            let code = step
                .code
                .as_deref()
                .ok_or(format!("the call of {id} has no code"))?;
            value(runtime.call_with_id(id, code).await)
        }
        Op::Inspect => Ok(Value::Null),
    }
}

/// `resume_interrupted`, tried again while the dead node's lease still holds the run.
async fn take_over(runtime: &Runtime, id: &str) -> Result<codemode::Outcome, RuntimeError> {
    let deadline = Instant::now() + TAKE_OVER_WAIT;
    loop {
        match runtime.resume_interrupted(id).await {
            Err(RuntimeError::AlreadyHandled { .. }) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            other => return other,
        }
    }
}

/// An operation's return as JSON, or its refusal as `{"refused": message}`.
fn value<T: Serialize>(returned: Result<T, RuntimeError>) -> Result<Value, String> {
    match returned {
        Ok(v) => serde_json::to_value(v).map_err(|e| e.to_string()),
        Err(e) => Ok(json!({ "refused": e.to_string() })),
    }
}

/// Execution `id` as JSON without its code and times (`null` when there is none).
async fn describe(runtime: &Runtime, id: &str) -> Result<Value, String> {
    let Some(mut execution) = runtime
        .execution(id)
        .await
        .map_err(|e| format!("reading {id}: {e}"))?
    else {
        return Ok(Value::Null);
    };
    let entries = execution
        .log
        .iter_mut()
        .flat_map(|e| e.decisions.iter_mut());
    for decision in execution.decisions.iter_mut().chain(entries) {
        decision.at = 0;
    }
    without(&execution, &["code", "createdAt", "updatedAt"])
}

/// `value` as a JSON object without the `keys`.
fn without<T: Serialize>(value: &T, keys: &[&str]) -> Result<Value, String> {
    let mut value = serde_json::to_value(value).map_err(|e| e.to_string())?;
    if let Some(object) = value.as_object_mut() {
        for key in keys {
            object.remove(*key);
        }
    }
    Ok(value)
}
