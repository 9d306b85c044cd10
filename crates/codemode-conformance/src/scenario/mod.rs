//! Scenario files: their format, loading them, and running the whole suite.
//!
//! `run.rs` runs one scenario's steps against a runtime; `check.rs` compares what each step
//! and the end returned with what the file expects.

mod check;
mod run;

pub use run::run_scenario;

use codemode::Store;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

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
    /// The most actions one pause proposes (the runtime's default when unset).
    pub max_batch: Option<usize>,
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
