//! Running one scenario: its steps, in order, against a runtime over the given store.

use super::check::{check_end, check_outcome, check_refusal, check_returned, same};
use super::{Scenario, Step};
use crate::probe::Probe;
use codemode::{
    Actor, Approval, ApprovalScope, Outcome, Runtime, RuntimeEvent, SaveSnippet, Store,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Runs one scenario against `store` with the real sandbox; `Err` says what differed.
pub async fn run_scenario(
    scenario: &Scenario,
    store: Arc<dyn Store>,
    runtime_name: &str,
) -> Result<(), String> {
    let probe = Probe::default();
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default()));
    let mut builder = Runtime::builder(store, executor)
        .name(runtime_name)
        .connector(probe.connector("probe"));
    if let Some(keep) = scenario.max_executions {
        builder = builder.max_executions(keep);
    }
    if let Some(actions) = scenario.max_batch {
        builder = builder.max_batch(actions);
    }
    if let Some(chars) = scenario.truncate_chars {
        builder = builder.transform_result(move |v| {
            codemode::truncate_result(
                v,
                codemode::TruncateOptions {
                    max_chars: Some(chars),
                    max_tokens: None,
                },
            )
        });
    }
    let runtime = builder.build().map_err(|e| format!("build: {e}"))?;
    let mut labels: BTreeMap<String, String> = BTreeMap::new();
    let mut last: Option<String> = None;
    for (i, step) in scenario.steps.iter().enumerate() {
        let at = format!("step {} ({})", i + 1, step.op);
        let target = match &step.target {
            Some(label) => labels
                .get(label)
                .cloned()
                .ok_or(format!("{at}: no execution labelled {label}"))?,
            None => last.clone().unwrap_or_default(),
        };
        let e = &step.expect;
        match step.op.as_str() {
            "call" => {
                let code = step.code.as_deref().unwrap_or(&scenario.code);
                let outcome = runtime.call(code).await.map_err(|e| format!("{at}: {e}"))?;
                let id = outcome.execution_id().to_string();
                labels.insert(
                    step.label
                        .clone()
                        .unwrap_or_else(|| format!("#{}", labels.len() + 1)),
                    id.clone(),
                );
                last = Some(id);
                check_outcome(&at, &outcome, e)?;
            }
            "approve" => match runtime.approve_with(&target, approval(step)?).await {
                Ok(outcome) => {
                    check_refusal(&at, None, e)?;
                    check_outcome(&at, &outcome, e)?
                }
                Err(err) => check_refusal(&at, Some(err), e)?,
            },
            "reject" => {
                let seq = step.seq.ok_or(format!("{at}: reject needs seq"))?;
                match runtime.reject_with(&target, seq, actor(step)).await {
                    Ok(b) => check_returned(&at, Value::Bool(b), e)?,
                    Err(err) => check_refusal(&at, Some(err), e)?,
                }
            }
            "cancel" => match runtime.cancel(&target, actor(step)).await {
                Ok(execution) => {
                    check_refusal(&at, None, e)?;
                    same(
                        &at,
                        "status",
                        e.status.as_deref(),
                        Some(execution.status.as_str()),
                    )?;
                }
                Err(err) => check_refusal(&at, Some(err), e)?,
            },
            "call_and_cancel" => {
                let code = step.code.as_deref().unwrap_or(&scenario.code).to_string();
                let (id, outcome) = call_and_cancel(&runtime, code, actor(step), &at).await?;
                labels.insert(
                    step.label
                        .clone()
                        .unwrap_or_else(|| format!("#{}", labels.len() + 1)),
                    id.clone(),
                );
                last = Some(id);
                check_outcome(&at, &outcome, e)?;
            }
            "rollback" => match runtime.rollback_with(&target, actor(step)).await {
                Ok(report) => {
                    check_refusal(&at, None, e)?;
                    same(
                        &at,
                        "status",
                        e.status.as_deref(),
                        Some(report.status.as_str()),
                    )?;
                    same(&at, "reverted", e.reverted.as_ref(), Some(&report.reverted))?;
                    same(&at, "skipped", e.skipped.as_ref(), Some(&report.skipped))?;
                    let failed: Vec<u64> = report.failed.iter().map(|f| f.seq).collect();
                    same(&at, "failed", e.failed.as_ref(), Some(&failed))?;
                    same(&at, "unknown", e.unknown.as_ref(), Some(&report.unknown))?;
                    for f in &report.failed {
                        if f.error.is_empty() || f.path.is_empty() {
                            return Err(format!("{at}: failure without a message: {f:?}"));
                        }
                    }
                }
                Err(err) => check_refusal(&at, Some(err), e)?,
            },
            "expire" => {
                let age = Duration::from_millis(step.max_age_ms.unwrap_or(0));
                let ids = runtime
                    .expire_paused(age)
                    .await
                    .map_err(|e| format!("{at}: {e}"))?;
                check_returned(&at, Value::from(ids.len()), e)?;
            }
            "prune" => {
                let n = runtime
                    .prune_executions(step.keep.unwrap_or(0))
                    .await
                    .map_err(|e| format!("{at}: {e}"))?;
                check_returned(&at, Value::from(n), e)?;
            }
            "delete" => match runtime.delete_execution(&target).await {
                Ok(b) => {
                    check_refusal(&at, None, e)?;
                    check_returned(&at, Value::Bool(b), e)?
                }
                Err(err) => check_refusal(&at, Some(err), e)?,
            },
            "save_snippet" => {
                let name = step
                    .name
                    .clone()
                    .ok_or(format!("{at}: save_snippet needs name"))?;
                let options = SaveSnippet {
                    execution_id: target.clone(),
                    description: Some(format!("saved by {}", scenario.description)),
                    input_schema: step.input_schema.clone(),
                    force: false,
                    replace: false,
                };
                match runtime.save_snippet(&name, options).await {
                    Ok(_) => check_refusal(&at, None, e)?,
                    Err(err) => check_refusal(&at, Some(err), e)?,
                }
            }
            other => return Err(format!("{at}: unknown operation {other:?}")),
        }
    }
    check_end(&runtime, &probe, &scenario.end, last.as_deref(), &labels).await
}

/// The actor a step names (`local` when none).
fn actor(step: &Step) -> Actor {
    step.by.as_deref().map_or_else(Actor::local, Actor::new)
}

/// The approval a step describes.
fn approval(step: &Step) -> Result<Approval, String> {
    let scope = match step.scope.as_deref() {
        None | Some("action") => ApprovalScope::Action,
        Some("execution") => ApprovalScope::Execution,
        Some(other) => return Err(format!("unknown approval scope {other:?}")),
    };
    Ok(Approval {
        by: actor(step),
        args: step.args.clone(),
        scope,
        methods: step.methods.clone().unwrap_or_default(),
        seqs: step.seqs.clone(),
    })
}

/// Runs `code` as a new execution, cancels it as `by` once a connector call of it has
/// started, and returns the execution and what the call returned. Both waits have deadlines.
async fn call_and_cancel(
    runtime: &Runtime,
    code: String,
    by: Actor,
    at: &str,
) -> Result<(String, Outcome), String> {
    let deadline = Duration::from_secs(20);
    let mut events = runtime.subscribe();
    let caller = runtime.clone();
    let call = tokio::spawn(async move { caller.call(&code).await });
    let id = tokio::time::timeout(deadline, async {
        loop {
            match events.recv().await {
                Ok(RuntimeEvent::CallStarted { execution_id, .. }) => return Ok(execution_id),
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(e) => return Err(format!("{at}: the event stream ended: {e}")),
            }
        }
    })
    .await
    .map_err(|_| format!("{at}: no connector call started within {deadline:?}"))??;
    let cancelled = runtime
        .cancel(&id, by)
        .await
        .map_err(|e| format!("{at}: cancel: {e}"))?;
    if cancelled.status.as_str() != "cancelled" {
        return Err(format!(
            "{at}: cancel left the execution {}",
            cancelled.status
        ));
    }
    let outcome = tokio::time::timeout(deadline, call)
        .await
        .map_err(|_| format!("{at}: the cancelled call did not return within {deadline:?}"))?
        .map_err(|e| format!("{at}: the call task failed: {e}"))?
        .map_err(|e| format!("{at}: {e}"))?;
    Ok((id, outcome))
}
