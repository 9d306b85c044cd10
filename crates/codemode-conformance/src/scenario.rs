//! Scenario files and their runner.

use crate::probe::Probe;
use codemode::{
    canonical_eq, Actor, Approval, ApprovalScope, Decision, Outcome, Runtime, RuntimeError,
    RuntimeEvent, SaveSnippet, Store,
};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// One scenario file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// What the scenario shows.
    pub description: String,
    /// The code of the first `call`.
    #[serde(default)]
    pub code: String,
    /// Retention, when the scenario tests it.
    pub max_executions: Option<usize>,
    /// Truncate completed results to this many characters for the model.
    pub truncate_chars: Option<usize>,
    /// The operations, in order.
    #[serde(rename = "step")]
    pub steps: Vec<Step>,
    /// Checks after the last step.
    #[serde(default)]
    pub end: End,
}

/// One operation and what it must return.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// `call`, `approve`, `reject`, `rollback`, `cancel`, `call_and_cancel` (run the code and
    /// cancel it once a connector call has started), `expire`, `prune`, `delete`,
    /// `save_snippet`.
    #[serde(rename = "do")]
    pub op: String,
    /// Code for `call` (defaults to the scenario's).
    pub code: Option<String>,
    /// A label for the execution a `call` creates.
    #[serde(rename = "as")]
    pub label: Option<String>,
    /// The labelled execution the step acts on (default: the last one called).
    pub target: Option<String>,
    /// For `reject`.
    pub seq: Option<u64>,
    /// For `prune`.
    pub keep: Option<usize>,
    /// For `expire`.
    pub max_age_ms: Option<u64>,
    /// For `save_snippet`.
    pub name: Option<String>,
    /// For `save_snippet`.
    pub input_schema: Option<Value>,
    /// Who decides (approve, reject, rollback, cancel); `local` when absent.
    pub by: Option<String>,
    /// For `approve`: edited arguments.
    pub args: Option<Value>,
    /// For `approve`: `action` or `execution`.
    pub scope: Option<String>,
    /// For `approve`: further `connector.method`s a standing approval covers.
    pub methods: Option<Vec<String>>,
    /// For `approve`: the pending actions approved (the others are rejected).
    pub seqs: Option<Vec<u64>>,
    /// What the step must return.
    #[serde(default)]
    pub expect: Expect,
}

/// Expectations on one step's return.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Outcome status (`completed`, `paused`, `error`) or, for rollback, the new status.
    pub status: Option<String>,
    /// The completed result, compared as JSON.
    pub result: Option<Value>,
    /// Substrings the error message must contain.
    #[serde(default)]
    pub error: Vec<String>,
    /// Substrings of the `Err` the operation must be refused with.
    #[serde(default)]
    pub refused: Vec<String>,
    /// Pending actions as `connector.method#seq`.
    pub pending: Option<Vec<String>>,
    /// Console output, exactly.
    pub logs: Option<Vec<String>>,
    /// A boolean or count the operation returns (reject, delete, prune, expire count).
    pub returned: Option<Value>,
    /// Rollback: reverted seqs, newest first.
    pub reverted: Option<Vec<u64>>,
    /// Rollback: skipped seqs.
    pub skipped: Option<Vec<u64>>,
    /// Rollback: seqs whose revert failed.
    pub failed: Option<Vec<u64>>,
    /// Rollback: seqs of unknown outcome (left executing) that no revert could undo.
    pub unknown: Option<Vec<u64>>,
}

/// Checks after the last step.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct End {
    /// Status of the last execution.
    pub status: Option<String>,
    /// Log-entry states of the last execution, by seq.
    pub states: Option<Vec<String>>,
    /// The result recorded in the audit record of the last execution.
    pub recorded_result: Option<Value>,
    /// Substrings of the recorded result (when it is a string).
    #[serde(default)]
    pub recorded_result_contains: Vec<String>,
    /// How many times each probe method really ran.
    pub runs: Option<BTreeMap<String, u64>>,
    /// Reverts in order, as `method#seq`.
    pub reverts: Option<Vec<String>>,
    /// `on_pass_end` statuses in order.
    pub pass_ends: Option<Vec<String>>,
    /// `dispose_execution` statuses in order.
    pub disposals: Option<Vec<String>>,
    /// Idempotency keys of the real runs, as `method@seq`, in any order (calls a batch runs
    /// at once reach the connector in any order; the execution id is checked to match).
    pub key_seqs: Option<Vec<String>>,
    /// Status per labelled execution, or `deleted`.
    #[serde(default)]
    pub executions: BTreeMap<String, String>,
    /// Number of executions the runtime lists.
    pub count: Option<usize>,
    /// The decisions on the last execution, as `kind:by` (`:execution` for a standing one).
    pub decisions: Option<Vec<String>>,
    /// The decisions on each log entry of the last execution, by seq, as `decisions` says.
    pub entry_decisions: Option<Vec<Vec<String>>>,
    /// The approved arguments recorded on entries of the last execution, by seq.
    pub approved_args: Option<BTreeMap<String, Value>>,
}

/// Every scenario file of the suite, by name, in file order.
pub fn load_scenarios() -> Vec<(String, Result<Scenario, String>)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p: &std::path::PathBuf| p.extension().is_some_and(|x| x == "toml"));
    files.sort();
    files
        .into_iter()
        .map(|file| {
            let name = file
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .to_string();
            let parsed = std::fs::read_to_string(&file)
                .map_err(|e| e.to_string())
                .and_then(|text| toml::from_str(&text).map_err(|e| format!("does not parse: {e}")));
            (name, parsed)
        })
        .collect()
}

/// Runs every scenario, each on the store `store_for(index)` gives it and under its own
/// runtime name; returns one line per failure.
pub async fn run_all<F, Fut>(label: &str, mut store_for: F) -> Vec<String>
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = Arc<dyn Store>>,
{
    let scenarios = load_scenarios();
    assert!(
        scenarios.len() >= 25,
        "expected the whole suite, found {} files",
        scenarios.len()
    );
    let mut failures = Vec::new();
    for (i, (name, parsed)) in scenarios.iter().enumerate() {
        let outcome = match parsed {
            Ok(scenario) => {
                run_scenario(scenario, store_for(i).await, &format!("conformance-{i}")).await
            }
            Err(e) => Err(e.clone()),
        };
        match outcome {
            Ok(()) => println!("ok   {name} ({label})"),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    failures
}

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

/// A decision as the scenario files write it: `kind:by`, `:execution` for a standing one.
fn decision_text(d: &Decision) -> String {
    let kind = serde_json::to_value(d.kind).unwrap_or_default();
    let mut text = format!("{}:{}", kind.as_str().unwrap_or_default(), d.by);
    if d.scope == Some(ApprovalScope::Execution) {
        text.push_str(":execution");
    }
    text
}

fn check_outcome(at: &str, outcome: &Outcome, e: &Expect) -> Result<(), String> {
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

fn check_refusal(at: &str, err: Option<RuntimeError>, e: &Expect) -> Result<(), String> {
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

fn check_returned(at: &str, got: Value, e: &Expect) -> Result<(), String> {
    check_refusal(at, None, e)?;
    match &e.returned {
        Some(want) if !canonical_eq(want, &got) => {
            Err(format!("{at}: returned {got}, want {want}"))
        }
        _ => Ok(()),
    }
}

fn same<T: PartialEq + std::fmt::Debug + ?Sized>(
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

async fn check_end(
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
