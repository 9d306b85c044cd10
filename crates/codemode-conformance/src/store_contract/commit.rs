//! Commits: entries upserted by seq and a status change, as one compare-and-set on the
//! expected status and, when given, on the lease owner.

use super::{commit, entry, insert, lease, move_through, read, transition, wins_claim, FAR, RT};
use codemode::{Commit, EntryState, ExecutionStatus, LogEntry, Store, StoreError, Transition};
use serde_json::json;
use EntryState::{Applied, Executing, Pending, Reverted};
use ExecutionStatus::{Completed, Error, Paused, Rejected, RolledBack, Running};

/// A commit inserts entries by seq and replaces the entry already at a seq.
pub async fn a_commit_upserts_entries_by_seq(store: &dyn Store) {
    insert(store, RT, "e", 1, "n1", 100).await;
    let first = commit("e", Some("n1"), vec![entry(0, Executing)]);
    assert!(
        store.commit(RT, &first).await.unwrap(),
        "the owner's commit"
    );
    assert_eq!(read(store, RT, "e").await.log, [entry(0, Executing)]);

    let mut applied = entry(0, Applied);
    applied.result = Some(json!(null));
    let step = LogEntry {
        seq: 1,
        connector: "codemode".into(),
        method: "step".into(),
        args: json!(["now"]),
        result: Some(json!(1234)),
        error: None,
        requires_approval: false,
        ephemeral: true,
        read_only: false,
        state: Applied,
        approved_args: None,
        decisions: Vec::new(),
        delivered: None,
    };
    let second = commit("e", Some("n1"), vec![applied.clone(), step.clone()]);
    assert!(
        store.commit(RT, &second).await.unwrap(),
        "the second commit"
    );
    let got = read(store, RT, "e").await;
    assert_eq!(
        got.log,
        [applied.clone(), step.clone()],
        "seq 0 replaced, 1 added"
    );
    assert_eq!(
        got.log[0].result,
        Some(json!(null)),
        "a null result must be kept apart from no result"
    );
    assert_eq!(got.status, Running, "a commit without a transition");

    // Without an owner and without a transition, a commit is written while the execution exists.
    let mut failed = entry(2, EntryState::Error);
    failed.error = Some("422: title taken".into());
    let third = commit("e", None, vec![failed.clone()]);
    assert!(
        store.commit(RT, &third).await.unwrap(),
        "an ownerless commit"
    );
    assert_eq!(read(store, RT, "e").await.log, [applied, step, failed]);
}

/// A transition records result, logs and time; a later one that sets none keeps them.
pub async fn a_transition_records_its_result_and_logs_and_a_later_one_keeps_them(
    store: &dyn Store,
) {
    insert(store, RT, "x", 1, "n1", 100).await;
    let pause = Commit {
        transition: Some(Transition::new(Running, Paused, 30)),
        ..commit("x", Some("n1"), vec![entry(0, Applied), entry(1, Pending)])
    };
    assert!(store.commit(RT, &pause).await.unwrap(), "the pause");
    let got = read(store, RT, "x").await;
    assert_eq!((got.status, got.updated_at), (Paused, 30));
    assert_eq!(got.log, [entry(0, Applied), entry(1, Pending)]);

    assert!(
        wins_claim(store, RT, "x", Paused, "n2", 1_000, 40).await,
        "the approval's claim"
    );
    let result = json!({ "done": true, "a": [1, "x"], "nested": { "z": null } });
    let mut done = Transition::new(Running, Completed, 42);
    done.result = Some(result.clone());
    done.logs = Some(vec!["line 1".into(), "wörld ✓".into()]);
    let finish = Commit {
        transition: Some(done),
        ..commit("x", Some("n2"), vec![entry(1, Applied)])
    };
    assert!(store.commit(RT, &finish).await.unwrap(), "the completion");
    let got = read(store, RT, "x").await;
    assert_eq!((got.status, got.updated_at), (Completed, 42));
    assert_eq!(got.result, Some(result.clone()));
    assert_eq!(got.error, None);
    assert_eq!(got.logs, ["line 1", "wörld ✓"]);
    assert_eq!(got.log, [entry(0, Applied), entry(1, Applied)]);

    let back = Commit {
        transition: Some(Transition::new(Completed, RolledBack, 50)),
        ..commit("x", None, vec![entry(0, Reverted), entry(1, Reverted)])
    };
    assert!(store.commit(RT, &back).await.unwrap(), "the rollback");
    let got = read(store, RT, "x").await;
    assert_eq!((got.status, got.updated_at), (RolledBack, 50));
    assert_eq!(got.result, Some(result), "a rollback keeps the result");
    assert_eq!(got.logs, ["line 1", "wörld ✓"], "a rollback keeps the logs");
    assert_eq!(got.log, [entry(0, Reverted), entry(1, Reverted)]);
}

/// A transition to `error` records its message, and a later transition keeps it.
pub async fn an_error_transition_records_its_message(store: &dyn Store) {
    insert(store, RT, "x", 1, "n1", FAR).await;
    let mut failed = entry(0, EntryState::Error);
    failed.error = Some("boom".into());
    let mut t = Transition::new(Running, Error, 9);
    t.error = Some("Error: boom\n    at line 3".into());
    t.logs = Some(vec!["before the failure".into()]);
    let c = Commit {
        transition: Some(t),
        ..commit("x", Some("n1"), vec![failed.clone()])
    };
    assert!(store.commit(RT, &c).await.unwrap(), "the failure");
    let got = read(store, RT, "x").await;
    assert_eq!((got.status, got.updated_at), (Error, 9));
    assert_eq!(got.error.as_deref(), Some("Error: boom\n    at line 3"));
    assert_eq!(got.result, None);
    assert_eq!(got.logs, ["before the failure"]);
    assert_eq!(got.log, [failed]);
    let back = transition("x", None, Error, RolledBack, 12);
    assert!(store.commit(RT, &back).await.unwrap(), "the rollback");
    let got = read(store, RT, "x").await;
    assert_eq!(got.status, RolledBack);
    assert_eq!(got.error.as_deref(), Some("Error: boom\n    at line 3"));
}

/// A commit whose expected status no longer holds returns false and writes nothing at all.
pub async fn a_commit_with_a_stale_status_writes_nothing_not_even_its_entries(store: &dyn Store) {
    insert(store, RT, "e", 1, "n1", 100).await;
    let before = read(store, RT, "e").await;
    // Expecting `paused` while the execution runs.
    let wrong = Commit {
        transition: Some(Transition::new(Paused, Rejected, 20)),
        ..commit("e", None, vec![entry(5, Applied)])
    };
    assert!(!store.commit(RT, &wrong).await.unwrap(), "expected paused");
    assert_eq!(read(store, RT, "e").await, before, "after a stale commit");

    let pause = Commit {
        transition: Some(Transition::new(Running, Paused, 5)),
        ..commit("e", Some("n1"), vec![entry(0, Pending)])
    };
    assert!(store.commit(RT, &pause).await.unwrap(), "the pause");
    let before = read(store, RT, "e").await;
    // A second node still thinks it is running.
    let mut t = Transition::new(Running, Error, 9);
    t.error = Some("late".into());
    let stale = Commit {
        transition: Some(t),
        ..commit("e", None, vec![entry(0, Applied), entry(1, Applied)])
    };
    assert!(!store.commit(RT, &stale).await.unwrap(), "expected running");
    assert_eq!(read(store, RT, "e").await, before, "after a stale commit");
    // The same pause again loses: the execution no longer runs.
    assert!(!store.commit(RT, &pause).await.unwrap(), "a second pause");
    assert_eq!(read(store, RT, "e").await, before, "after a second pause");
    // A rejection wins; a rollback still expecting `paused` loses, though the rejected
    // execution could be rolled back.
    let reject = transition("e", None, Paused, Rejected, 10);
    assert!(store.commit(RT, &reject).await.unwrap(), "the rejection");
    let before = read(store, RT, "e").await;
    let rollback = Commit {
        transition: Some(Transition::new(Paused, RolledBack, 11)),
        ..commit("e", None, vec![entry(0, Reverted)])
    };
    assert!(
        !store.commit(RT, &rollback).await.unwrap(),
        "expected paused"
    );
    assert_eq!(read(store, RT, "e").await, before, "after a stale rollback");
}

/// A commit conditional on a node that never held the lease returns false and writes nothing.
pub async fn a_commit_by_a_node_that_does_not_hold_the_lease_writes_nothing(store: &dyn Store) {
    insert(store, RT, "x", 10, "n1", FAR).await;
    let before = read(store, RT, "x").await;
    let entries = commit("x", Some("n2"), vec![entry(0, Applied), entry(1, Applied)]);
    assert!(!store.commit(RT, &entries).await.unwrap(), "n2's entries");
    let pause = transition("x", Some("n2"), Running, Paused, 20);
    assert!(!store.commit(RT, &pause).await.unwrap(), "n2's pause");
    assert_eq!(read(store, RT, "x").await, before, "after n2's commits");
    let pause = transition("x", Some("n1"), Running, Paused, 20);
    assert!(store.commit(RT, &pause).await.unwrap(), "n1's pause");
    assert_eq!(read(store, RT, "x").await.status, Paused);
}

/// After a takeover the old owner's commits write nothing and the new owner's are written.
pub async fn a_commit_by_a_node_that_lost_its_lease_writes_nothing(store: &dyn Store) {
    insert(store, RT, "e", 1, "n1", 100).await;
    assert!(
        wins_claim(store, RT, "e", Running, "n2", 500, 200).await,
        "the takeover of an expired lease"
    );
    let before = read(store, RT, "e").await;
    assert_eq!(before.updated_at, 200, "a claim stamps its time");
    let late = commit("e", Some("n1"), vec![entry(0, Applied)]);
    assert!(!store.commit(RT, &late).await.unwrap(), "n1's late entries");
    let late_end = Commit {
        transition: Some(Transition::new(Running, Completed, 300)),
        ..late
    };
    assert!(!store.commit(RT, &late_end).await.unwrap(), "n1's late end");
    let late_pause = transition("e", Some("n1"), Running, Paused, 300);
    assert!(
        !store.commit(RT, &late_pause).await.unwrap(),
        "n1's late pause"
    );
    assert_eq!(
        read(store, RT, "e").await,
        before,
        "after n1's late commits"
    );
    let fresh = commit("e", Some("n2"), vec![entry(0, Applied)]);
    assert!(
        store.commit(RT, &fresh).await.unwrap(),
        "the new owner's entries"
    );
    let pause = transition("e", Some("n2"), Running, Paused, 300);
    assert!(
        store.commit(RT, &pause).await.unwrap(),
        "the new owner's pause"
    );
    let got = read(store, RT, "e").await;
    assert_eq!((got.status, got.log), (Paused, vec![entry(0, Applied)]));
}

/// A commit to an execution missing from its runtime returns false and creates nothing.
pub async fn a_commit_on_a_missing_execution_writes_nothing(store: &dyn Store) {
    let c = commit("ghost", None, vec![entry(0, Applied)]);
    assert!(!store.commit(RT, &c).await.unwrap(), "ownerless entries");
    assert!(
        !store.commit("other", &c).await.unwrap(),
        "in another runtime"
    );
    let owned = commit("ghost", Some("n1"), vec![entry(0, Applied)]);
    assert!(!store.commit(RT, &owned).await.unwrap(), "owned entries");
    let ended = Commit {
        transition: Some(Transition::new(Running, Completed, 5)),
        ..c.clone()
    };
    assert!(!store.commit(RT, &ended).await.unwrap(), "a transition");
    assert_eq!(store.execution(RT, "ghost").await.unwrap(), None);
    assert!(store.executions(RT, None, None).await.unwrap().is_empty());
    // The same id in another runtime is another execution.
    insert(store, "other", "ghost", 1, "n1", FAR).await;
    assert!(
        !store.commit(RT, &c).await.unwrap(),
        "beside another runtime's"
    );
    assert!(read(store, "other", "ghost").await.log.is_empty());
    assert_eq!(store.execution(RT, "ghost").await.unwrap(), None);
}

/// An illegal transition, in a commit or a claim, is an error naming it and writes nothing.
pub async fn an_illegal_transition_is_an_error_and_writes_nothing(store: &dyn Store) {
    insert(store, RT, "e", 1, "n", 100).await;
    let before = read(store, RT, "e").await;
    let c = Commit {
        transition: Some(Transition::new(Running, Rejected, 5)),
        ..commit("e", None, vec![entry(0, Applied)])
    };
    let err = store.commit(RT, &c).await.unwrap_err();
    assert_illegal(&err, Running, Rejected);
    assert_eq!(
        read(store, RT, "e").await,
        before,
        "after an illegal commit"
    );

    move_through(store, RT, "e", &[Completed], 10).await;
    let before = read(store, RT, "e").await;
    let c = Commit {
        transition: Some(Transition::new(Completed, Running, 20)),
        ..commit("e", None, vec![entry(0, Applied)])
    };
    assert_illegal(&store.commit(RT, &c).await.unwrap_err(), Completed, Running);
    let any = lease("n", 1_000);
    let err = store
        .claim(RT, "e", Completed, &any, 30, &before.connectors)
        .await
        .unwrap_err();
    assert_illegal(&err, Completed, Running);
    assert_eq!(read(store, RT, "e").await, before, "after illegal changes");
}

/// Asserts that `err` is the store's refusal of the transition `from -> to`.
fn assert_illegal(err: &StoreError, from: ExecutionStatus, to: ExecutionStatus) {
    match err {
        StoreError::IllegalTransition { from: f, to: t } => {
            assert_eq!((*f, *t), (from, to), "the error must name {from} -> {to}")
        }
        other => panic!("expected the refusal of {from} -> {to}, got {other:?}"),
    }
}

/// Every status pair, tried through the store on an execution brought to `from` by legal
/// steps: the store writes exactly the transitions the contract allows (written out here,
/// not read from the table) and refuses every other one, writing nothing.
pub async fn every_status_transition_is_written_exactly_when_the_contract_allows_it(
    store: &dyn Store,
) {
    use ExecutionStatus::*;
    const ALLOWED: &[(ExecutionStatus, ExecutionStatus)] = &[
        (Running, Completed),
        (Running, Paused),
        (Running, Error),
        (Paused, Running),
        (Paused, Rejected),
        (Paused, RolledBack),
        (Completed, RolledBack),
        (Error, RolledBack),
        (Rejected, RolledBack),
        (Running, Cancelled),
        (Cancelled, RolledBack),
    ];
    let path_to = |status: ExecutionStatus| -> &'static [ExecutionStatus] {
        match status {
            Running => &[],
            Paused => &[Paused],
            Completed => &[Completed],
            Error => &[Error],
            Rejected => &[Paused, Rejected],
            RolledBack => &[Completed, RolledBack],
            Cancelled => &[Cancelled],
        }
    };
    let mut n = 0;
    for from in ExecutionStatus::ALL {
        for to in ExecutionStatus::ALL {
            // running -> running is a take-over: only a claim makes it (its own case).
            if (from, to) == (Running, Running) {
                continue;
            }
            n += 1;
            let id = format!("t{n}");
            insert(store, RT, &id, 1, "n", FAR).await;
            move_through(store, RT, &id, path_to(from), 2).await;
            let before = read(store, RT, &id).await;
            assert_eq!(before.status, from);
            let owner = (from == Running).then_some("n");
            let result = store.commit(RT, &transition(&id, owner, from, to, 3)).await;
            if ALLOWED.contains(&(from, to)) {
                assert!(
                    result.as_ref().is_ok_and(|w| *w),
                    "{from} -> {to} must be written: {result:?}"
                );
                assert_eq!(read(store, RT, &id).await.status, to);
            } else {
                let err = result.expect_err(&format!("{from} -> {to} must be refused"));
                assert_illegal(&err, from, to);
                assert_eq!(read(store, RT, &id).await, before, "{from} -> {to} wrote");
            }
        }
    }
}
