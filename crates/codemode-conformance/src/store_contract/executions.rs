//! Executions: insert, read back, list, filter and delete.

use super::{
    entry, execution, insert, insert_execution, lease, listed, move_through, read, transition, FAR,
    RT,
};
use codemode::{EntryState, ExecutionStatus, Store};
use EntryState::{Applied, Executing, Pending};
use ExecutionStatus::{Completed, Error, Paused, Running};

/// An inserted execution reads back equal, log and console output included, JSON keys in order.
pub async fn an_inserted_execution_reads_back_exactly(store: &dyn Store) {
    let mut e = execution("e1", 100);
    e.code = "async () => { /* ünïcödé ✓ */ return 1; }".into();
    e.log = vec![entry(0, Applied), entry(1, Pending), entry(2, Executing)];
    e.logs = vec!["hello".into(), "wörld ✓".into()];
    let pruned = insert_execution(store, RT, &e, 50);
    assert_eq!(pruned.await, 0, "nothing to prune");
    let got = read(store, RT, "e1").await;
    assert_eq!(got, e);
    let args = serde_json::to_string(&got.log[0].args).unwrap();
    assert_eq!(
        args, r#"{"title":"issue 0","labels":["a","b"],"b":1,"a":2}"#,
        "JSON must keep its keys in the order written"
    );
    let result = serde_json::to_string(&got.log[0].result).unwrap();
    assert_eq!(result, r#"{"number":0,"z":0,"y":[1,2]}"#);
    assert_eq!(store.execution(RT, "nope").await.unwrap(), None);
    assert_eq!(store.executions(RT, None, None).await.unwrap(), [e]);
}

/// Inserting an id that exists is an error naming the id, and changes nothing.
pub async fn a_duplicate_id_is_a_clear_error_and_writes_nothing(store: &dyn Store) {
    let mut e = execution("dup", 1);
    e.log = vec![entry(0, Applied)];
    insert_execution(store, RT, &e, 50).await;
    let mut other = execution("dup", 2);
    other.code = "different".into();
    other.log = vec![entry(0, Pending), entry(1, Pending)];
    let err = store
        .insert_execution(RT, &other, &lease("n", FAR), 50)
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("dup") && message.contains("already exists"),
        "the error must name the existing id: {message}"
    );
    assert_eq!(read(store, RT, "dup").await, e, "after a duplicate insert");
    assert_eq!(listed(store, RT, None, None).await, ["dup"]);
}

/// Executions list newest first (ties: last inserted first), with their logs, up to the limit.
pub async fn executions_list_newest_first_with_their_logs(store: &dyn Store) {
    let log: Vec<_> = (0..3).map(|i| entry(i, Applied)).collect();
    // e2 and e3 share a created_at: insertion order breaks the tie.
    for (id, at) in [("e1", 10), ("e2", 20), ("e3", 20), ("e4", 5)] {
        let mut e = execution(id, at);
        e.log = log.clone();
        insert_execution(store, RT, &e, 50).await;
    }
    let all = store.executions(RT, None, None).await.unwrap();
    let ids: Vec<_> = all.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["e3", "e2", "e1", "e4"]);
    for e in &all {
        assert_eq!(e.log, log, "the log of {} as listed", e.id);
    }
    assert_eq!(listed(store, RT, Some(2), None).await, ["e3", "e2"]);
    assert_eq!(listed(store, RT, Some(10), None).await.len(), 4);
    assert!(listed(store, RT, Some(0), None).await.is_empty());
}

/// Listing with a status returns only the executions in it, newest first, up to the limit.
pub async fn executions_filter_by_status(store: &dyn Store) {
    for (id, at) in [("e1", 10), ("e2", 20), ("e3", 30), ("e4", 40)] {
        insert(store, RT, id, at, "n", FAR).await;
    }
    assert!(listed(store, RT, None, Some(Paused)).await.is_empty());
    move_through(store, RT, "e2", &[Completed], 50).await;
    move_through(store, RT, "e4", &[Paused], 60).await;
    let done = store.executions(RT, None, Some(Completed)).await.unwrap();
    assert_eq!(done.len(), 1, "one completed execution");
    assert_eq!((done[0].id.as_str(), done[0].updated_at), ("e2", 50));
    assert_eq!(listed(store, RT, None, Some(Paused)).await, ["e4"]);
    assert_eq!(listed(store, RT, None, Some(Running)).await, ["e3", "e1"]);
    assert_eq!(listed(store, RT, Some(1), Some(Running)).await, ["e3"]);
    assert!(listed(store, RT, None, Some(Error)).await.is_empty());
}

/// Deleting returns the status and removes the execution, its log and its pending actions.
pub async fn delete_removes_the_execution_and_its_log(store: &dyn Store) {
    let mut e = execution("e1", 1);
    e.log = vec![entry(0, Pending)];
    insert_execution(store, RT, &e, 50).await;
    let status = store.delete_execution(RT, "e1").await.unwrap();
    assert_eq!(status, Some(Running));
    assert_eq!(store.delete_execution(RT, "e1").await.unwrap(), None);
    assert_eq!(store.execution(RT, "e1").await.unwrap(), None);
    assert!(listed(store, RT, None, None).await.is_empty());
    // A new execution with the same id starts with an empty log.
    insert(store, RT, "e1", 2, "n", FAR).await;
    assert!(
        read(store, RT, "e1").await.log.is_empty(),
        "a reused id's log"
    );

    let mut p = execution("p", 3);
    p.log = vec![entry(0, Applied), entry(1, Pending)];
    insert_execution(store, RT, &p, 50).await;
    let pause = transition("p", Some("n"), Running, Paused, 4);
    assert!(store.commit(RT, &pause).await.unwrap(), "the pause");
    assert_eq!(store.pending(RT, None).await.unwrap().len(), 1);
    assert_eq!(store.delete_execution(RT, "p").await.unwrap(), Some(Paused));
    assert!(store.pending(RT, None).await.unwrap().is_empty());
    assert!(store.pending(RT, Some("p")).await.unwrap().is_empty());
    assert_eq!(store.delete_execution(RT, "missing").await.unwrap(), None);
    assert_eq!(listed(store, RT, None, None).await, ["e1"]);
}
