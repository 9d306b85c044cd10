//! Recovery at start: a rollback cut after its last revert (its node stopped before it
//! recorded the decision) is finished once its hold expires, as the person who started it.

use codemode::{
    Actor, Claim, Commit, Decision, DecisionKind, EntryState, ExecutionStatus, Lease, Outcome,
    Runtime, RustConnector, RustTool, Store,
};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollback_cut_after_its_last_revert_is_finished_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(codemode_sqlite::SqliteStore::open(dir.path().join("codemode.db")).unwrap());
    let reverts = Arc::new(Mutex::new(0u32));
    let counted = reverts.clone();
    let notes = RustConnector::new("notes").tool(
        RustTool::new("add", |args: Value, _ctx| async move { Ok(args) })
            .requires_approval(false)
            .revert(move |_a: Value, _r: Value, _ctx| {
                let counted = counted.clone();
                async move {
                    *counted.lock().unwrap() += 1;
                    Ok(())
                }
            }),
    );
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default()));
    let runtime = Arc::new(
        Runtime::builder(store.clone(), executor)
            .connector(notes)
            .build()
            .unwrap(),
    );
    let done = runtime
        .call("async () => { await notes.add({ n: 1 }); return 1 }")
        .await
        .unwrap();
    assert!(matches!(done, Outcome::Completed { .. }), "{done:?}");
    let id = done.execution_id().to_string();

    // The cut rollback: a hold by a node that is gone, the entry reverted, no decision.
    let now = codemode::now_ms();
    let gone = Lease {
        owner: "gone".into(),
        until_ms: now + 300,
    };
    let Claim::Won(held) = store
        .hold("default", &id, ExecutionStatus::Completed, &gone, now)
        .await
        .unwrap()
    else {
        panic!("hold")
    };
    let mut entry = held.log[0].clone();
    entry.state = EntryState::Reverted;
    entry.decisions.push(Decision::new(
        DecisionKind::Rollback,
        Actor::new("carol"),
        now,
        Vec::new(),
    ));
    let commit = Commit {
        execution_id: id.clone(),
        owner: Some("gone".into()),
        entries: vec![entry],
        transition: None,
        clock: None,
    };
    assert!(store.commit("default", &commit).await.unwrap());

    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = lines.clone();
    codemode_server::recover::resume_interrupted(runtime.clone(), move |l| {
        seen.lock().unwrap().push(l)
    })
    .await
    .unwrap();
    let mut finished = None;
    for _ in 0..100 {
        let got = runtime.execution(&id).await.unwrap().unwrap();
        if got.status == ExecutionStatus::RolledBack {
            finished = Some(got);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let got = finished.unwrap_or_else(|| panic!("not finished: {:?}", lines.lock().unwrap()));
    assert_eq!(got.decisions.len(), 1, "{:?}", got.decisions);
    assert_eq!(got.decisions[0].kind, DecisionKind::Rollback);
    assert_eq!(got.decisions[0].by, Actor::new("carol"));
    assert_eq!(got.decisions[0].seqs, vec![0]);
    assert_eq!(*reverts.lock().unwrap(), 0, "nothing reverted twice");
    let lines = lines.lock().unwrap().clone();
    assert!(
        lines.iter().any(|l| l.contains("1 rollback(s) cut")),
        "{lines:?}"
    );
}
