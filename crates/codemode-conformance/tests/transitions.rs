//! Proves that the suite exercises every legal execution and log-entry transition of the
//! tables in `codemode::status`, and that the runtime made no other; and that it exercises
//! every row of the runtime's replay tables but those no run reaches through the runtime.

use codemode::runtime::replay_coverage;
use codemode::status::{coverage, ENTRY_TRANSITIONS, EXECUTION_TRANSITIONS};
use codemode::{EntryState, ExecutionStatus, LogEntry, Runtime, Store};
use codemode_conformance::Probe;
use std::collections::BTreeSet;
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_suite_walks_every_legal_transition_and_no_other() {
    let tmp = tempfile::tempdir().unwrap();
    let failures = codemode_conformance::run_all("sqlite", |i| {
        let path = tmp.path().join(format!("{i}.db"));
        async move { Arc::new(codemode_sqlite::SqliteStore::open(&path).unwrap()) as Arc<dyn Store> }
    })
    .await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // A node died while a write was executing: another node takes the run over
    // (running -> running) and runs the write again (executing -> executing).
    let store: Arc<dyn Store> =
        Arc::new(codemode_sqlite::SqliteStore::open(tmp.path().join("takeover.db")).unwrap());
    let probe = Probe::default();
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default()));
    let runtime = Runtime::builder(store.clone(), executor)
        .connector(probe.connector("probe"))
        .build()
        .unwrap();
    let code = "async () => (await probe.write({ value: 1 })).n";
    let expired = codemode::now_ms() - 1;
    codemode_conformance::insert_running(&*store, "orphan", code, 0, "dead-node", expired).await;
    let executing = LogEntry {
        seq: 0,
        connector: "probe".into(),
        method: "write".into(),
        args: serde_json::json!({ "value": 1 }),
        result: None,
        error: None,
        requires_approval: false,
        ephemeral: false,
        read_only: false,
        state: EntryState::Executing,
        approved_args: None,
        decisions: Vec::new(),
        delivered: None,
    };
    let commit = codemode::Commit {
        execution_id: "orphan".into(),
        owner: Some("dead-node".into()),
        entries: vec![executing],
        transition: None,
    };
    assert!(store.commit("default", &commit).await.unwrap());
    let outcome = runtime.resume_interrupted("orphan").await.unwrap();
    assert_eq!(outcome.status(), ExecutionStatus::Completed, "{outcome:?}");

    let legal: BTreeSet<_> = EXECUTION_TRANSITIONS.iter().copied().collect();
    let seen = coverage::executions();
    assert_eq!(
        seen.difference(&legal).collect::<Vec<_>>(),
        Vec::<&(ExecutionStatus, ExecutionStatus)>::new(),
        "illegal execution transitions made"
    );
    assert_eq!(
        legal.difference(&seen).collect::<Vec<_>>(),
        Vec::<&(ExecutionStatus, ExecutionStatus)>::new(),
        "legal execution transitions never exercised"
    );

    let legal: BTreeSet<_> = ENTRY_TRANSITIONS.iter().copied().collect();
    let seen = coverage::entries();
    assert_eq!(
        seen.difference(&legal).collect::<Vec<_>>(),
        Vec::<&(Option<EntryState>, EntryState)>::new(),
        "illegal entry transitions made"
    );
    assert_eq!(
        legal.difference(&seen).collect::<Vec<_>>(),
        Vec::<&(Option<EntryState>, EntryState)>::new(),
        "legal entry transitions never exercised"
    );

    // Rows of the replay tables that no run reaches through the runtime, and why.
    let unreached = BTreeSet::from([
        // A rollback holds only paused or finished runs, and no pass follows it.
        "reverted by a rollback",
        // Only a node that dies in a pass after a write's mark committed a pending entry,
        // and before the pass paused, leaves one.
        "pending, neither approved nor rejected",
    ]);
    let rows = replay_coverage::rows();
    let used = replay_coverage::used();
    assert!(unreached.is_subset(&rows), "{unreached:?} are not rows");
    assert_eq!(
        rows.difference(&used)
            .filter(|r| !unreached.contains(*r))
            .collect::<Vec<_>>(),
        Vec::<&&str>::new(),
        "rows of the replay tables never exercised"
    );
}
