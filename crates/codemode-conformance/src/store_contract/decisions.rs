//! Decisions: who decided what and when, kept on the execution and on its entries, and the
//! cancel that takes a run from the pass holding it.

use super::{commit, entry, insert, lease, read, transition, FAR, RT};
use codemode::{
    Actor, ApprovalScope, Claim, Commit, Decision, DecisionKind, EntryState, ExecutionStatus,
    Store, Transition,
};
use serde_json::json;

/// A decision of `kind` by `by` at `at` about `seqs`.
fn decision(kind: DecisionKind, by: &str, at: i64, seqs: Vec<u64>) -> Decision {
    Decision::new(kind, Actor::new(by), at, seqs)
}

/// A transition's decision is appended to the execution's, in order, only when the change is
/// written; entries keep their own decisions and approved arguments exactly.
pub async fn decisions_and_approved_args_are_kept_in_order(store: &dyn Store) {
    insert(store, RT, "e", 1, "n", FAR).await;
    let mut pending = entry(0, EntryState::Pending);
    pending.approved_args = Some(json!({ "title": "edited", "z": 1, "a": [2] }));
    let mut approve = decision(DecisionKind::Approve, "alice", 10, vec![0]);
    approve.scope = Some(ApprovalScope::Execution);
    approve.methods = vec!["github.create_issue".into()];
    pending.decisions = vec![approve.for_entry()];
    let pause = Commit {
        transition: Some(Transition::new(
            ExecutionStatus::Running,
            ExecutionStatus::Paused,
            5,
        )),
        ..commit("e", Some("n"), vec![pending.clone()])
    };
    assert!(store.commit(RT, &pause).await.unwrap());
    let got = read(store, RT, "e").await;
    assert!(got.decisions.is_empty(), "no decision yet: {got:?}");
    assert_eq!(
        got.log,
        [pending.clone()],
        "approved args and decisions kept"
    );

    // A change that loses its compare-and-set records no decision.
    let stale = Commit {
        transition: Some(
            Transition::new(ExecutionStatus::Running, ExecutionStatus::Completed, 6)
                .with_decision(decision(DecisionKind::Cancel, "mallory", 6, vec![])),
        ),
        ..commit("e", None, Vec::new())
    };
    assert!(!store.commit(RT, &stale).await.unwrap());
    assert!(read(store, RT, "e").await.decisions.is_empty());

    let reject = decision(DecisionKind::Reject, "cli", 20, vec![0]);
    let rejected = Commit {
        transition: Some(
            Transition::new(ExecutionStatus::Paused, ExecutionStatus::Rejected, 20)
                .with_decision(reject.clone()),
        ),
        ..commit("e", None, Vec::new())
    };
    assert!(store.commit(RT, &rejected).await.unwrap());
    let rollback = decision(DecisionKind::Rollback, "bob", 30, vec![]);
    let rolled = Commit {
        transition: Some(
            Transition::new(ExecutionStatus::Rejected, ExecutionStatus::RolledBack, 30)
                .with_decision(rollback.clone()),
        ),
        ..commit("e", None, Vec::new())
    };
    assert!(store.commit(RT, &rolled).await.unwrap());
    let got = read(store, RT, "e").await;
    assert_eq!(got.decisions, [reject, rollback], "appended in order");
    assert_eq!(got.log, [pending], "the entries are untouched");
    let listed = store.executions(RT, None, None).await.unwrap();
    assert_eq!(
        listed[0].decisions, got.decisions,
        "a listing carries them too"
    );
}

/// An ownerless `running -> cancelled` is written while the pass's lease is live (any other
/// ownerless change waits for it), drops the lease, and the pass's next commit fails.
pub async fn a_cancel_takes_the_run_from_the_pass_holding_it(store: &dyn Store) {
    insert(store, RT, "e", 1, "pass", FAR).await;
    let error = transition(
        "e",
        None,
        ExecutionStatus::Running,
        ExecutionStatus::Error,
        2,
    );
    assert!(
        !store.commit(RT, &error).await.unwrap(),
        "an ownerless error must wait for the lease"
    );
    let cancel = Commit {
        transition: Some(
            Transition::new(ExecutionStatus::Running, ExecutionStatus::Cancelled, 3)
                .with_decision(decision(DecisionKind::Cancel, "bob", 3, vec![])),
        ),
        ..commit("e", None, Vec::new())
    };
    assert!(store.commit(RT, &cancel).await.unwrap(), "the cancel");
    let got = read(store, RT, "e").await;
    assert_eq!(got.status, ExecutionStatus::Cancelled);
    assert_eq!(got.decisions[0].by, Actor::new("bob"));
    let late = commit("e", Some("pass"), vec![entry(0, EntryState::Executing)]);
    assert!(
        !store.commit(RT, &late).await.unwrap(),
        "the pass lost its lease"
    );
    let end = transition(
        "e",
        Some("pass"),
        ExecutionStatus::Running,
        ExecutionStatus::Completed,
        4,
    );
    assert!(!store.commit(RT, &end).await.unwrap());
    assert_eq!(
        read(store, RT, "e").await,
        got,
        "nothing written after the cancel"
    );
}

/// A cancelled run can be held (by the node whose pass it was) to record what its writes
/// did: entries committed under the hold are written, the status and decisions stay, and
/// another hold waits until it is released.
pub async fn a_cancelled_run_is_held_to_record_its_writes(store: &dyn Store) {
    insert(store, RT, "e", 1, "pass", FAR).await;
    let mark = commit("e", Some("pass"), vec![entry(0, EntryState::Executing)]);
    assert!(store.commit(RT, &mark).await.unwrap(), "the write's mark");
    let cancel = Commit {
        transition: Some(
            Transition::new(ExecutionStatus::Running, ExecutionStatus::Cancelled, 3)
                .with_decision(decision(DecisionKind::Cancel, "bob", 3, vec![])),
        ),
        ..commit("e", None, Vec::new())
    };
    assert!(store.commit(RT, &cancel).await.unwrap(), "the cancel");
    let cancelled = read(store, RT, "e").await;
    let held = store
        .hold(RT, "e", ExecutionStatus::Cancelled, &lease("pass", FAR), 4)
        .await
        .unwrap();
    assert_eq!(
        held,
        Claim::Won(cancelled.clone()),
        "the hold reads the run"
    );
    let rival = store
        .hold(RT, "e", ExecutionStatus::Cancelled, &lease("other", FAR), 5)
        .await
        .unwrap();
    assert!(matches!(rival, Claim::Refused(_)), "a second hold waits");
    let done = commit("e", Some("pass"), vec![entry(0, EntryState::Applied)]);
    assert!(store.commit(RT, &done).await.unwrap(), "the outcome");
    assert!(store.release(RT, "e", "pass").await.unwrap(), "the release");
    let got = read(store, RT, "e").await;
    assert_eq!(got.log, vec![entry(0, EntryState::Applied)]);
    assert_eq!(got.status, ExecutionStatus::Cancelled);
    assert_eq!(got.decisions, cancelled.decisions);
    let after = store
        .hold(RT, "e", ExecutionStatus::Cancelled, &lease("other", FAR), 6)
        .await
        .unwrap();
    assert!(after.is_won(), "released: a rollback can hold it");
}
