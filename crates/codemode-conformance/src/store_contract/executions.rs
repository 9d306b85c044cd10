//! Executions: insert, read back, list, filter and delete.

use super::{
    commit, entry, execution, insert, insert_execution, lease, listed, move_through, read,
    transition, FAR, RT,
};
use codemode::{Claim, Deletion, EntryState, ExecutionStatus, Store};
use EntryState::{Applied, Executing, Pending, Reverted};
use ExecutionStatus::{Completed, Error, Paused, Rejected, RolledBack, Running};

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

/// Deleting a terminal execution returns its status and removes it, its log and its
/// pending actions; a running or paused one is refused and stays whole.
pub async fn delete_removes_the_execution_and_its_log(store: &dyn Store) {
    let mut e = execution("e1", 1);
    e.log = vec![entry(0, Applied), entry(1, Pending)];
    insert_execution(store, RT, &e, 50).await;
    let delete = |id: &'static str| store.delete_execution(RT, id, 100);
    assert_eq!(delete("e1").await.unwrap(), Deletion::Refused(Running));
    move_through(store, RT, "e1", &[Paused], 4).await;
    assert_eq!(store.pending(RT, None).await.unwrap().len(), 1);
    assert_eq!(delete("e1").await.unwrap(), Deletion::Refused(Paused));
    assert_eq!(
        read(store, RT, "e1").await.log.len(),
        2,
        "a refused delete kept the log"
    );
    assert_eq!(store.pending(RT, None).await.unwrap().len(), 1);

    let reject = transition("e1", None, Paused, Rejected, 5);
    assert!(store.commit(RT, &reject).await.unwrap(), "the rejection");
    assert_eq!(delete("e1").await.unwrap(), Deletion::Deleted(Rejected));
    assert_eq!(delete("e1").await.unwrap(), Deletion::Unknown);
    assert_eq!(store.execution(RT, "e1").await.unwrap(), None);
    assert!(store.pending(RT, Some("e1")).await.unwrap().is_empty());
    assert!(listed(store, RT, None, None).await.is_empty());
    // A new execution with the same id starts with an empty log.
    insert(store, RT, "e1", 2, "n", FAR).await;
    assert!(
        read(store, RT, "e1").await.log.is_empty(),
        "a reused id's log"
    );
    assert_eq!(delete("missing").await.unwrap(), Deletion::Unknown);
    assert_eq!(listed(store, RT, None, None).await, ["e1"]);
}

/// A hold takes a lease on an execution that is not running without changing its status;
/// while it is live, no claim, other hold, ownerless transition or delete gets through, and
/// the holder's own commits do; a release (or a transition by the holder) frees it.
pub async fn a_hold_excludes_every_other_decision_until_released(store: &dyn Store) {
    let mut e = execution("h", 1);
    e.log = vec![entry(0, Applied), entry(1, Pending)];
    insert_execution(store, RT, &e, 50).await;
    let hold = |owner: &'static str, from, now| async move {
        store.hold(RT, "h", from, &lease(owner, 1_000), now).await
    };
    assert!(
        matches!(hold("a", Running, 10).await.unwrap(), Claim::Refused(_)),
        "a running execution cannot be held"
    );
    move_through(store, RT, "h", &[Paused], 5).await;
    let Claim::Won(held) = hold("a", Paused, 10).await.unwrap() else {
        panic!("the first hold must win")
    };
    assert_eq!(held.status, Paused, "a hold keeps the status");
    assert_eq!(held.log.len(), 2, "a hold reads the log");
    assert!(matches!(
        hold("b", Paused, 10).await.unwrap(),
        Claim::Refused(_)
    ));
    assert!(
        matches!(hold("a", Paused, 10).await.unwrap(), Claim::Refused(_)),
        "not even by its owner"
    );
    let available = execution("h", 0).connectors;
    let approver = lease("b", 2_000);
    let approve = store.claim(RT, "h", Paused, &approver, 10, &available);
    assert!(
        matches!(approve.await.unwrap(), Claim::Refused(_)),
        "a claim while held"
    );
    let reject = transition("h", None, Paused, Rejected, 10);
    assert!(
        !store.commit(RT, &reject).await.unwrap(),
        "a rejection while held"
    );
    let stranger = commit("h", Some("b"), vec![entry(0, Reverted)]);
    assert!(
        !store.commit(RT, &stranger).await.unwrap(),
        "a commit by another node"
    );
    assert_eq!(
        store.delete_execution(RT, "h", 10).await.unwrap(),
        Deletion::Refused(Paused)
    );
    let own = commit("h", Some("a"), vec![entry(0, Reverted)]);
    assert!(store.commit(RT, &own).await.unwrap(), "the holder's commit");
    assert_eq!(read(store, RT, "h").await.log[0].state, Reverted);

    assert!(
        !store.release(RT, "h", "b").await.unwrap(),
        "only the owner releases"
    );
    assert!(store.release(RT, "h", "a").await.unwrap());
    assert!(!store.release(RT, "h", "a").await.unwrap(), "released once");
    assert!(matches!(
        hold("b", Paused, 10).await.unwrap(),
        Claim::Won(_)
    ));
    // An expired hold is taken over; the holder's transition drops the lease.
    assert!(matches!(
        hold("c", Paused, 1_001).await.unwrap(),
        Claim::Won(_)
    ));
    let back = transition("h", Some("c"), Paused, RolledBack, 1_002);
    assert!(
        store.commit(RT, &back).await.unwrap(),
        "the holder's transition"
    );
    assert_eq!(read(store, RT, "h").await.status, RolledBack);
    assert_eq!(
        store.delete_execution(RT, "h", 1_003).await.unwrap(),
        Deletion::Deleted(RolledBack)
    );
}
