//! Executions: insert, read, list, delete, retention, stale, pending, runtime isolation.

mod common;

use codemode::{Commit, EntryState, ExecutionStatus, Store, Transition};
use common::{entry, execution, lease, store, RT};
use serde_json::json;

const FAR: i64 = i64::MAX / 2;

/// Moves a running execution to `to` without a lease condition.
async fn finish(s: &impl Store, runtime: &str, id: &str, to: ExecutionStatus, at: i64) {
    let commit = Commit {
        execution_id: id.into(),
        owner: None,
        entries: vec![],
        transition: Some(Transition::new(ExecutionStatus::Running, to, at)),
    };
    assert!(s.commit(runtime, &commit).await.unwrap(), "finish {id}");
}

#[tokio::test]
async fn insert_then_read_back_everything() {
    let (_d, _p, s) = store();
    let mut e = execution("e1", 100);
    e.log = vec![entry(0, EntryState::Applied), entry(1, EntryState::Pending)];
    e.logs = vec!["hello".into()];
    assert_eq!(
        s.insert_execution(RT, &e, &lease("n1", FAR), 50)
            .await
            .unwrap(),
        0
    );
    assert_eq!(s.execution(RT, "e1").await.unwrap(), Some(e.clone()));
    assert_eq!(s.execution(RT, "nope").await.unwrap(), None);
    assert_eq!(s.executions(RT, None, None).await.unwrap(), vec![e]);
}

#[tokio::test]
async fn duplicate_id_is_a_clear_error_and_writes_nothing() {
    let (_d, _p, s) = store();
    let e = execution("dup", 1);
    s.insert_execution(RT, &e, &lease("n", FAR), 50)
        .await
        .unwrap();
    let mut other = execution("dup", 2);
    other.code = "different".into();
    let err = s
        .insert_execution(RT, &other, &lease("n", FAR), 50)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("dup"), "{err}");
    assert_eq!(s.execution(RT, "dup").await.unwrap().unwrap().code, e.code);
}

#[tokio::test]
async fn executions_are_newest_first_with_their_logs_and_filter_by_status() {
    let (_d, _p, s) = store();
    // e2 and e3 share a created_at: insertion order breaks the tie.
    for (id, at) in [("e1", 10), ("e2", 20), ("e3", 20), ("e4", 5)] {
        let mut e = execution(id, at);
        e.log = (0..3).map(|i| entry(i, EntryState::Applied)).collect();
        s.insert_execution(RT, &e, &lease("n", FAR), 50)
            .await
            .unwrap();
    }
    finish(&s, RT, "e2", ExecutionStatus::Completed, 30).await;
    let all = s.executions(RT, None, None).await.unwrap();
    let ids: Vec<_> = all.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["e3", "e2", "e1", "e4"]);
    for e in &all {
        let seqs: Vec<_> = e.log.iter().map(|l| l.seq).collect();
        assert_eq!(seqs, [0, 1, 2], "{}", e.id);
    }
    let two = s.executions(RT, Some(2), None).await.unwrap();
    assert_eq!(
        two.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(),
        ["e3", "e2"]
    );
    let done = s
        .executions(RT, None, Some(ExecutionStatus::Completed))
        .await
        .unwrap();
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].id, "e2");
    assert_eq!(done[0].updated_at, 30);
    assert!(s.executions(RT, Some(0), None).await.unwrap().is_empty());
}

#[tokio::test]
async fn delete_removes_the_execution_and_its_log() {
    let (_d, _p, s) = store();
    let mut e = execution("e1", 1);
    e.log = vec![entry(0, EntryState::Pending)];
    s.insert_execution(RT, &e, &lease("n", FAR), 50)
        .await
        .unwrap();
    assert_eq!(
        s.delete_execution(RT, "e1").await.unwrap(),
        Some(ExecutionStatus::Running)
    );
    assert_eq!(s.delete_execution(RT, "e1").await.unwrap(), None);
    assert_eq!(s.execution(RT, "e1").await.unwrap(), None);
    // A new execution with the same id starts with an empty log.
    s.insert_execution(RT, &execution("e1", 2), &lease("n", FAR), 50)
        .await
        .unwrap();
    assert!(s.execution(RT, "e1").await.unwrap().unwrap().log.is_empty());
}

#[tokio::test]
async fn retention_prunes_oldest_terminal_and_never_running_or_paused() {
    let (_d, _p, s) = store();
    let statuses = [
        ("old-running", None),
        ("old-paused", Some(ExecutionStatus::Paused)),
        ("t1", Some(ExecutionStatus::Completed)),
        ("t2", Some(ExecutionStatus::Error)),
        ("t3", Some(ExecutionStatus::Completed)),
        ("t4", Some(ExecutionStatus::Error)),
    ];
    for (i, (id, to)) in statuses.iter().enumerate() {
        let mut e = execution(id, i as i64);
        e.log = vec![entry(0, EntryState::Applied)];
        s.insert_execution(RT, &e, &lease("n", FAR), 100)
            .await
            .unwrap();
        if let Some(to) = to {
            finish(&s, RT, id, *to, 50).await;
        }
    }
    // Inserting a new run keeps the newest 2 terminal ones: t1 and t2 go.
    let pruned = s
        .insert_execution(RT, &execution("new", 10), &lease("n", FAR), 2)
        .await
        .unwrap();
    assert_eq!(pruned, 2);
    let ids: Vec<_> = s
        .executions(RT, None, None)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(ids, ["new", "t4", "t3", "old-paused", "old-running"]);
    // keep 0 prunes every terminal one and still no running or paused one.
    assert_eq!(s.prune_executions(RT, 0).await.unwrap(), 2);
    assert_eq!(s.prune_executions(RT, 0).await.unwrap(), 0);
    let left: Vec<_> = s
        .executions(RT, None, None)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(left, ["new", "old-paused", "old-running"]);
}

#[tokio::test]
async fn prune_removes_log_entries_of_pruned_executions() {
    let (dir, path, s) = store();
    let mut e = execution("t", 1);
    e.log = vec![entry(0, EntryState::Applied), entry(1, EntryState::Applied)];
    s.insert_execution(RT, &e, &lease("n", FAR), 50)
        .await
        .unwrap();
    finish(&s, RT, "t", ExecutionStatus::Completed, 2).await;
    assert_eq!(s.prune_executions(RT, 0).await.unwrap(), 1);
    drop(s);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let n: i64 = conn
        .query_row("SELECT count(*) FROM log_entries", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 0);
    drop(dir);
}

#[tokio::test]
async fn stale_finds_old_paused_and_expired_running_only() {
    let (_d, _p, s) = store();
    let now = 10_000;
    let before = 5_000;
    // running, old, lease expired -> stale
    s.insert_execution(RT, &execution("run-expired", 1), &lease("n", 2_000), 50)
        .await
        .unwrap();
    // running, old, lease still held -> not stale
    s.insert_execution(RT, &execution("run-held", 1), &lease("n", 20_000), 50)
        .await
        .unwrap();
    // running, recent -> not stale
    let mut recent = execution("run-recent", 6_000);
    recent.updated_at = 6_000;
    s.insert_execution(RT, &recent, &lease("n", 2_000), 50)
        .await
        .unwrap();
    // paused, old -> stale; paused, recent -> not
    for (id, at) in [("paused-old", 1_000), ("paused-recent", 7_000)] {
        s.insert_execution(RT, &execution(id, 1), &lease("n", FAR), 50)
            .await
            .unwrap();
        finish(&s, RT, id, ExecutionStatus::Paused, at).await;
    }
    // terminal, old -> never stale
    s.insert_execution(RT, &execution("done", 1), &lease("n", FAR), 50)
        .await
        .unwrap();
    finish(&s, RT, "done", ExecutionStatus::Completed, 1).await;

    // Oldest first; both were created at 1, so insertion order decides.
    let stale = s.stale_executions(RT, before, now).await.unwrap();
    assert_eq!(
        stale,
        vec![
            ("run-expired".to_string(), ExecutionStatus::Running),
            ("paused-old".to_string(), ExecutionStatus::Paused),
        ]
    );
    assert!(s
        .stale_executions("other", before, now)
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn pending_lists_pending_entries_of_paused_runs_newest_first() {
    let (_d, _p, s) = store();
    for (id, at) in [("older", 1), ("newer", 2), ("still-running", 3)] {
        let mut e = execution(id, at);
        e.log = vec![
            entry(0, EntryState::Applied),
            entry(1, EntryState::Pending),
            entry(2, EntryState::Pending),
        ];
        s.insert_execution(RT, &e, &lease("n", FAR), 50)
            .await
            .unwrap();
        if id != "still-running" {
            finish(&s, RT, id, ExecutionStatus::Paused, 5).await;
        }
    }
    let all = s.pending(RT, None).await.unwrap();
    let got: Vec<_> = all
        .iter()
        .map(|p| (p.execution_id.as_str(), p.seq))
        .collect();
    assert_eq!(
        got,
        [("newer", 1), ("newer", 2), ("older", 1), ("older", 2)]
    );
    assert_eq!(all[0].connector, "github");
    assert_eq!(all[0].method, "create_issue");
    assert_eq!(
        all[0].args,
        json!({"title": "issue 1", "labels": ["a", "b"]})
    );
    let one = s.pending(RT, Some("older")).await.unwrap();
    assert_eq!(one.len(), 2);
    assert!(one.iter().all(|p| p.execution_id == "older"));
    assert!(s
        .pending(RT, Some("still-running"))
        .await
        .unwrap()
        .is_empty());
    assert!(s.pending("other", None).await.unwrap().is_empty());
}

#[tokio::test]
async fn two_runtime_names_keep_separate_histories() {
    let (_d, _p, s) = store();
    for rt in ["research", "operations"] {
        let mut e = execution("same-id", 1);
        e.code = format!("code of {rt}");
        e.log = vec![entry(0, EntryState::Pending)];
        s.insert_execution(rt, &e, &lease("n", FAR), 50)
            .await
            .unwrap();
        s.put_snippet(rt, &common::snippet("shared")).await.unwrap();
    }
    finish(&s, "research", "same-id", ExecutionStatus::Paused, 2).await;
    assert_eq!(
        s.execution("research", "same-id")
            .await
            .unwrap()
            .unwrap()
            .code,
        "code of research"
    );
    assert_eq!(
        s.execution("operations", "same-id")
            .await
            .unwrap()
            .unwrap()
            .status,
        ExecutionStatus::Running
    );
    assert_eq!(s.pending("research", None).await.unwrap().len(), 1);
    assert!(s.pending("operations", None).await.unwrap().is_empty());
    assert!(s.executions(RT, None, None).await.unwrap().is_empty());
    // Pruning or deleting in one name leaves the other alone.
    finish(&s, "operations", "same-id", ExecutionStatus::Completed, 3).await;
    assert_eq!(s.prune_executions("operations", 0).await.unwrap(), 1);
    assert!(s.execution("research", "same-id").await.unwrap().is_some());
    assert!(s.delete_snippet("operations", "shared").await.unwrap());
    assert!(s.snippet("research", "shared").await.unwrap().is_some());
}

#[tokio::test]
async fn snippets_put_replace_list_delete() {
    let (_d, _p, s) = store();
    assert_eq!(s.snippet(RT, "b").await.unwrap(), None);
    for name in ["b", "a", "c"] {
        s.put_snippet(RT, &common::snippet(name)).await.unwrap();
    }
    let mut replaced = common::snippet("b");
    replaced.code = "async () => 2".into();
    replaced.input_schema = None;
    replaced.connectors = vec![];
    s.put_snippet(RT, &replaced).await.unwrap();
    assert_eq!(s.snippet(RT, "b").await.unwrap(), Some(replaced));
    let names: Vec<_> = s
        .snippets(RT)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(names, ["a", "b", "c"]);
    assert!(s.delete_snippet(RT, "a").await.unwrap());
    assert!(!s.delete_snippet(RT, "a").await.unwrap());
    assert_eq!(s.snippets(RT).await.unwrap().len(), 2);
}

#[tokio::test]
async fn retention_breaks_created_at_ties_by_insertion_order() {
    let (_d, _p, s) = store();
    for id in ["first", "second", "third"] {
        s.insert_execution(RT, &execution(id, 7), &lease("n", FAR), 100)
            .await
            .unwrap();
        finish(&s, RT, id, ExecutionStatus::Completed, 8).await;
    }
    assert_eq!(s.prune_executions(RT, 1).await.unwrap(), 2);
    let left: Vec<_> = s
        .executions(RT, None, None)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(left, ["third"]);
}
