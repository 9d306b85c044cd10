//! The conformance suite of the Code Mode runtime.
//!
//! A scenario file (TOML, under `scenarios/`) is code plus a scripted sequence of
//! operations (call, approve, reject, rollback, expire, prune, delete, save and run
//! snippets) with the outcome each must have, and the log states and connector-side
//! effects expected at the end. [`run_scenario`] runs one against any [`Store`](codemode::Store), with the
//! real QuickJS sandbox, so the same suite holds every store to the same semantics.
//! [`store_contract`] holds every store to the `Store` trait's own contract, method by
//! method. [`upgrade`] resumes executions an earlier release recorded (the fixtures under
//! `fixtures/upgrade/`) and checks they come out as that release said.

pub mod journal;
pub mod parallel;
pub mod parity;
pub mod probe;
pub mod races;
pub mod scenario;
pub mod store_contract;
pub mod upgrade;

pub use probe::{Probe, ProbeRecord};
pub use scenario::{load_scenarios, run_all, run_scenario, Scenario};

/// Inserts, as if a node were running it, a `running` execution of `code` with the `probe`
/// connector, last updated `age_ms` ago, held by `owner` until `lease_until_ms`.
pub async fn insert_running(
    store: &dyn codemode::Store,
    id: &str,
    code: &str,
    age_ms: i64,
    owner: &str,
    lease_until_ms: i64,
) {
    let at = codemode::now_ms() - age_ms;
    let execution = codemode::Execution {
        id: id.into(),
        code: code.into(),
        status: codemode::ExecutionStatus::Running,
        log: vec![],
        result: None,
        error: None,
        logs: vec![],
        connectors: vec!["probe".into()],
        created_at: at,
        updated_at: at,
        decisions: Vec::new(),
        traceparent: None,
        clock: Default::default(),
    };
    let lease = codemode::Lease {
        owner: owner.into(),
        until_ms: lease_until_ms,
    };
    store
        .insert_execution("default", &execution, &lease, 50)
        .await
        .expect("insert a running execution");
}
