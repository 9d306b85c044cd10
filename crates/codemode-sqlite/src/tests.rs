//! Group commit through the store's methods: writes waiting together share one transaction,
//! and one that fails or is refused takes nothing of the others' with it. Here rather than
//! under `tests/`, to hold the writer's connection while the writes queue.

use crate::SqliteStore;
use codemode::{
    Commit, EntryState, Execution, ExecutionStatus, Lease, LogEntry, Store, Transition,
};
use serde_json::json;
use std::sync::{mpsc, Arc};
use std::time::Duration;

const RT: &str = "default";
const FAR: i64 = i64::MAX / 2;

fn execution(id: &str, created_at: i64) -> Execution {
    Execution {
        id: id.to_string(),
        code: format!("async () => \"{id}\""),
        status: ExecutionStatus::Running,
        log: Vec::new(),
        result: None,
        error: None,
        logs: Vec::new(),
        connectors: vec!["github".into()],
        created_at,
        updated_at: created_at,
        decisions: Vec::new(),
        traceparent: None,
        clock: Default::default(),
    }
}

fn lease(owner: &str, until_ms: i64) -> Lease {
    Lease {
        owner: owner.to_string(),
        until_ms,
    }
}

/// A commit that completes `id` as `owner`, with one applied entry.
fn finish(id: &str, owner: &str) -> Commit {
    let entry = LogEntry {
        seq: 0,
        connector: "github".into(),
        method: "create_issue".into(),
        args: json!({"title": "t"}),
        result: Some(json!({"number": 1})),
        error: None,
        requires_approval: false,
        ephemeral: false,
        read_only: false,
        state: EntryState::Applied,
        approved_args: None,
        decisions: Vec::new(),
        delivered: None,
    };
    Commit {
        execution_id: id.to_string(),
        owner: Some(owner.to_string()),
        entries: vec![entry],
        transition: Some(Transition::new(
            ExecutionStatus::Running,
            ExecutionStatus::Completed,
            9,
        )),
        clock: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_write_in_a_batch_is_rolled_back_alone_and_gets_its_own_error() {
    let dir = tempfile::tempdir().unwrap();
    let s = Arc::new(SqliteStore::open(dir.path().join("codemode.db")).unwrap());
    s.insert_execution(RT, &execution("taken", 1), &lease("n", FAR), 1_000)
        .await
        .unwrap();
    s.insert_execution(RT, &execution("other-owner", 1), &lease("n", FAR), 1_000)
        .await
        .unwrap();

    // Hold the writer's connection so that every write below waits, then joins one batch.
    let (held, release) = (mpsc::channel::<()>(), mpsc::channel::<()>());
    let holder = {
        let s = s.clone();
        let (held, release) = (held.0, release.1);
        std::thread::spawn(move || {
            let _locked = s.writer.lock();
            held.send(()).unwrap();
            release.recv().unwrap();
        })
    };
    held.1.recv().unwrap();

    let mut writes = Vec::new();
    for i in 0..10 {
        let s = s.clone();
        writes.push(tokio::spawn(async move {
            let id = format!("new-{i}");
            s.insert_execution(RT, &execution(&id, 2), &lease("n", FAR), 1_000)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        }));
    }
    let duplicate = {
        let s = s.clone();
        tokio::spawn(async move {
            s.insert_execution(RT, &execution("taken", 3), &lease("n", FAR), 1_000)
                .await
        })
    };
    let refused = {
        let s = s.clone();
        tokio::spawn(async move { s.commit(RT, &finish("other-owner", "intruder")).await })
    };
    let done = {
        let s = s.clone();
        tokio::spawn(async move { s.commit(RT, &finish("taken", "n")).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    release.0.send(()).unwrap();
    holder.join().unwrap();

    for w in writes {
        w.await.unwrap().unwrap();
    }
    let err = duplicate.await.unwrap().unwrap_err().to_string();
    assert!(err.contains("already exists"), "{err}");
    assert!(!refused.await.unwrap().unwrap(), "a CAS on another's lease");
    assert!(done.await.unwrap().unwrap());

    // Read after the writes returned: every write that succeeded is there, nothing else.
    for i in 0..10 {
        assert!(s
            .execution(RT, &format!("new-{i}"))
            .await
            .unwrap()
            .is_some());
    }
    let taken = s.execution(RT, "taken").await.unwrap().unwrap();
    assert_eq!(taken.status, ExecutionStatus::Completed);
    assert_eq!(taken.created_at, 1, "the duplicate insert changed nothing");
    let other = s.execution(RT, "other-owner").await.unwrap().unwrap();
    assert_eq!(other.status, ExecutionStatus::Running);
    assert!(other.log.is_empty(), "the refused commit wrote no entry");
}
