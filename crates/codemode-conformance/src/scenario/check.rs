//! Comparing what a scenario's steps returned, and the state they left, with the file.

use super::{End, Expect};
use crate::probe::Probe;
use codemode::{canonical_eq, ApprovalScope, Decision, Outcome, Runtime, RuntimeError};
use serde_json::Value;
use std::collections::BTreeMap;

/// A decision as the scenario files write it: `kind:by`, `:execution` for a standing one.
fn decision_text(d: &Decision) -> String {
    let kind = serde_json::to_value(d.kind).unwrap_or_default();
    let mut text = format!("{}:{}", kind.as_str().unwrap_or_default(), d.by);
    if d.scope == Some(ApprovalScope::Execution) {
        text.push_str(":execution");
    }
    text
}

/// Compares a call's or an approval's outcome with what the step expects.
pub(super) fn check_outcome(at: &str, outcome: &Outcome, e: &Expect) -> Result<(), String> {
    let status = outcome.status().as_str();
    if let Some(want) = &e.status {
        if want != status {
            return Err(format!(
                "{at}: status {status}, want {want}; outcome {outcome:?}"
            ));
        }
    }
    match outcome {
        Outcome::Completed { result, logs, .. } => {
            if let Some(want) = &e.result {
                if !canonical_eq(want, result) {
                    return Err(format!("{at}: result {result}, want {want}"));
                }
            }
            same(at, "logs", e.logs.as_ref(), Some(logs))?;
        }
        Outcome::Paused { pending, .. } => {
            let got: Vec<String> = pending
                .iter()
                .map(|p| format!("{}.{}#{}", p.connector, p.method, p.seq))
                .collect();
            same(at, "pending", e.pending.as_ref(), Some(&got))?;
        }
        Outcome::Error { error, logs, .. } => {
            for want in &e.error {
                if !error.contains(want.as_str()) {
                    return Err(format!("{at}: error {error:?} lacks {want:?}"));
                }
            }
            same(at, "logs", e.logs.as_ref(), Some(logs))?;
        }
    }
    if !e.error.is_empty() && status != "error" {
        return Err(format!("{at}: expected an error, got {outcome:?}"));
    }
    Ok(())
}

/// Compares an operation's refusal (or its absence) with what the step expects.
pub(super) fn check_refusal(at: &str, err: Option<RuntimeError>, e: &Expect) -> Result<(), String> {
    match (err, e.refused.is_empty()) {
        (None, true) => Ok(()),
        (None, false) => Err(format!(
            "{at}: expected a refusal containing {:?}",
            e.refused
        )),
        (Some(err), true) => Err(format!("{at}: refused unexpectedly: {err}")),
        (Some(err), false) => {
            let text = err.to_string();
            for want in &e.refused {
                if !text.contains(want.as_str()) {
                    return Err(format!("{at}: refusal {text:?} lacks {want:?}"));
                }
            }
            Ok(())
        }
    }
}

/// Compares the boolean or count an operation returned with what the step expects.
pub(super) fn check_returned(at: &str, got: Value, e: &Expect) -> Result<(), String> {
    check_refusal(at, None, e)?;
    match &e.returned {
        Some(want) if !canonical_eq(want, &got) => {
            Err(format!("{at}: returned {got}, want {want}"))
        }
        _ => Ok(()),
    }
}

/// `Err` naming `what` when `want` is given and differs from `got`.
pub(super) fn same<T: PartialEq + std::fmt::Debug + ?Sized>(
    at: &str,
    what: &str,
    want: Option<&T>,
    got: Option<&T>,
) -> Result<(), String> {
    match want {
        Some(w) if Some(w) != got => Err(format!("{at}: {what} {got:?}, want {w:?}")),
        _ => Ok(()),
    }
}

/// Compares the state after the last step with the scenario's `[end]` checks.
pub(super) async fn check_end(
    runtime: &Runtime,
    probe: &Probe,
    end: &End,
    last: Option<&str>,
    labels: &BTreeMap<String, String>,
) -> Result<(), String> {
    let at = "end";
    let record = probe.record();
    if let Some(id) = last {
        let execution = runtime.execution(id).await.map_err(|e| e.to_string())?;
        if let Some(execution) = execution {
            same(
                at,
                "status",
                end.status.as_deref(),
                Some(execution.status.as_str()),
            )?;
            let states: Vec<String> = execution
                .log
                .iter()
                .map(|e| e.state.as_str().to_string())
                .collect();
            same(at, "states", end.states.as_ref(), Some(&states))?;
            for (i, entry) in execution.log.iter().enumerate() {
                if entry.seq != i as u64 {
                    return Err(format!(
                        "{at}: log has a gap at seq {i}: {:?}",
                        execution.log
                    ));
                }
            }
            for d in execution
                .decisions
                .iter()
                .chain(execution.log.iter().flat_map(|e| &e.decisions))
            {
                if d.at <= 0 || d.at < execution.created_at {
                    return Err(format!("{at}: a decision without a time: {d:?}"));
                }
            }
            let decisions: Vec<String> = execution.decisions.iter().map(decision_text).collect();
            same(at, "decisions", end.decisions.as_ref(), Some(&decisions))?;
            let entry_decisions: Vec<Vec<String>> = execution
                .log
                .iter()
                .map(|e| e.decisions.iter().map(decision_text).collect())
                .collect();
            same(
                at,
                "entry_decisions",
                end.entry_decisions.as_ref(),
                Some(&entry_decisions),
            )?;
            let approved: BTreeMap<String, Value> = execution
                .log
                .iter()
                .filter_map(|e| Some((e.seq.to_string(), e.approved_args.clone()?)))
                .collect();
            same(
                at,
                "approved_args",
                end.approved_args.as_ref(),
                Some(&approved),
            )?;
            if let Some(want) = &end.recorded_result {
                let got = execution.result.clone().unwrap_or(Value::Null);
                if !canonical_eq(want, &got) {
                    return Err(format!("{at}: recorded result {got}, want {want}"));
                }
            }
            for want in &end.recorded_result_contains {
                let got = execution
                    .result
                    .as_ref()
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if !got.contains(want.as_str()) {
                    return Err(format!("{at}: recorded result {got:?} lacks {want:?}"));
                }
            }
        } else if end.status.is_some() || end.states.is_some() {
            return Err(format!("{at}: the last execution no longer exists"));
        }
    }
    same(at, "runs", end.runs.as_ref(), Some(&record.runs))?;
    same(at, "reverts", end.reverts.as_ref(), Some(&record.reverts))?;
    same(
        at,
        "pass_ends",
        end.pass_ends.as_ref(),
        Some(&record.pass_ends),
    )?;
    same(
        at,
        "disposals",
        end.disposals.as_ref(),
        Some(&record.disposals),
    )?;
    if let Some(want) = &end.key_seqs {
        let mut got: Vec<String> = record
            .keys
            .iter()
            .map(|k| {
                let (method, key) = k.split_once('@').unwrap_or_default();
                let seq = key.rsplit(':').next().unwrap_or_default();
                format!("{method}@{seq}")
            })
            .collect();
        let mut want = want.clone();
        want.sort();
        got.sort();
        same(at, "key_seqs", Some(&want), Some(&got))?;
    }
    for (label, want) in &end.executions {
        let id = labels
            .get(label)
            .ok_or(format!("{at}: no execution labelled {label}"))?;
        let got = runtime.execution(id).await.map_err(|e| e.to_string())?;
        let got = got
            .map(|e| e.status.as_str().to_string())
            .unwrap_or_else(|| "deleted".into());
        if &got != want {
            return Err(format!("{at}: execution {label} is {got}, want {want}"));
        }
    }
    if let Some(want) = end.count {
        let got = runtime
            .executions(None)
            .await
            .map_err(|e| e.to_string())?
            .len();
        if got != want {
            return Err(format!("{at}: {got} executions listed, want {want}"));
        }
    }
    Ok(())
}
