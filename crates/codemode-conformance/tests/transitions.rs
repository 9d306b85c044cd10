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
        clock: None,
    };
    assert!(store.commit("default", &commit).await.unwrap());
    let outcome = runtime.resume_interrupted("orphan").await.unwrap();
    assert_eq!(outcome.status(), ExecutionStatus::Completed, "{outcome:?}");

    an_undecided_pending_call_waits_for_a_person_after_a_takeover(&tmp.path().join("undecided.db"))
        .await;

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

/// A node ran a gated write (recorded `pending`, not awaited yet) and then an ungated write,
/// whose `executing` mark committed the pending entry with it, and died before the pass
/// paused. The node that takes the run over must not run the gated write: no person decided
/// on it. The run pauses on it, and runs it once a person approves.
async fn an_undecided_pending_call_waits_for_a_person_after_a_takeover(db: &std::path::Path) {
    let store: Arc<dyn Store> = Arc::new(codemode_sqlite::SqliteStore::open(db).unwrap());
    let probe = Probe::default();
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default()));
    let runtime = Runtime::builder(store.clone(), executor)
        .connector(probe.connector("probe"))
        .build()
        .unwrap();
    let code = "async () => { const gated = probe.gated_write({ value: 1 }); \
                const w = await probe.write({ value: 2 }); return [(await gated).n, w.n]; }";
    let expired = codemode::now_ms() - 1;
    codemode_conformance::insert_running(&*store, "undecided", code, 0, "dead-node", expired).await;
    let entry = |seq: u64, method: &str, value: i64, gated: bool| LogEntry {
        seq,
        connector: "probe".into(),
        method: method.into(),
        args: serde_json::json!({ "value": value }),
        result: None,
        error: None,
        requires_approval: gated,
        ephemeral: false,
        read_only: false,
        state: if gated {
            EntryState::Pending
        } else {
            EntryState::Executing
        },
        approved_args: None,
        decisions: Vec::new(),
        delivered: None,
    };
    let commit = codemode::Commit {
        execution_id: "undecided".into(),
        owner: Some("dead-node".into()),
        entries: vec![
            entry(0, "gated_write", 1, true),
            entry(1, "write", 2, false),
        ],
        transition: None,
        clock: None,
    };
    assert!(store.commit("default", &commit).await.unwrap());

    let outcome = runtime.resume_interrupted("undecided").await.unwrap();
    let codemode::Outcome::Paused { pending, .. } = &outcome else {
        panic!("the undecided call must wait for a person: {outcome:?}")
    };
    assert_eq!(
        pending
            .iter()
            .map(|p| (p.seq, p.method.as_str()))
            .collect::<Vec<_>>(),
        [(0, "gated_write")]
    );
    let runs = probe.record().runs;
    assert_eq!(runs.get("gated_write"), None, "ran unapproved: {runs:?}");
    assert_eq!(runs.get("write"), Some(&1), "{runs:?}");
    let after = runtime.execution("undecided").await.unwrap().unwrap();
    assert_eq!(after.status, ExecutionStatus::Paused);
    assert_eq!(after.log[0].state, EntryState::Pending);

    let outcome = runtime.approve("undecided").await.unwrap();
    assert_eq!(outcome.status(), ExecutionStatus::Completed, "{outcome:?}");
    let runs = probe.record().runs;
    assert_eq!(runs.get("gated_write"), Some(&1), "{runs:?}");
    assert_eq!(runs.get("write"), Some(&1), "{runs:?}");
}
