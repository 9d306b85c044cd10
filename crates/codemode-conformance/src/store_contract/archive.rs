//! The audit archive: a pruned or deleted execution's audit record outlives it, until the
//! archive's own retention by age drops it.

use super::{entry, execution, insert_execution, move_through, RT};
use codemode::ExecutionStatus::Completed;
use codemode::{Actor, Decision, DecisionKind, Deletion, EntryState, Execution, Store};
use serde_json::json;

const DAY_MS: i64 = 24 * 60 * 60 * 1000;

/// An execution created at `at` with an approved write applied, a rejected call and a failed
/// one, and the decisions on both.
fn decided(id: &str, at: i64) -> Execution {
    let mut e = execution(id, at);
    let mut write = entry(0, EntryState::Applied);
    write.requires_approval = true;
    write.approved_args = Some(json!({ "title": "approved", "z": 1, "a": [true, null] }));
    write.decisions = vec![Decision::new(
        DecisionKind::Approve,
        Actor::new("alice"),
        at + 1,
        vec![0],
    )];
    let mut rejected = entry(1, EntryState::Pending);
    rejected.decisions = vec![Decision::new(
        DecisionKind::Reject,
        Actor::new("bob"),
        at + 2,
        vec![1],
    )];
    e.log = vec![write, rejected, entry(2, EntryState::Error)];
    e.decisions = vec![
        Decision::new(DecisionKind::Approve, Actor::new("alice"), at + 1, vec![0]),
        Decision::new(DecisionKind::Reject, Actor::new("bob"), at + 2, vec![1]),
    ];
    e.logs = vec!["console output".into()];
    e.traceparent = Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into());
    e
}

/// An execution pruned and another deleted keep their decisions and entries in the audit
/// read exactly as before, within its window and limit; an archived record older than the
/// audit retention (90 days by default) is gone after the next prune (an explicit one or an
/// insert's, retention by count on or off), a younger one stays.
pub async fn the_audit_trail_outlives_pruning_and_deletion_until_its_max_age(store: &dyn Store) {
    let now = codemode::now_ms();
    for (id, at) in [
        ("ancient", now - 100 * DAY_MS),
        ("pruned", now - 10 * DAY_MS),
        ("deleted", now - 9 * DAY_MS),
    ] {
        insert_execution(store, RT, &decided(id, at), 1_000).await;
        move_through(store, RT, id, &[Completed], at + 50).await;
    }
    let read = |since, until, limit| store.audit_executions(RT, since, until, limit);
    let before = read(0, i64::MAX, 10).await.unwrap();
    let ids = |v: &[Execution]| v.iter().map(|e| e.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&before), ["ancient", "pruned", "deleted"]);
    assert_eq!(
        before[1].log.len(),
        2,
        "the applied write and the rejected call"
    );

    for id in ["ancient", "deleted"] {
        let gone = store.delete_execution(RT, id, now).await.unwrap();
        assert_eq!(gone, Deletion::Deleted(Completed), "deleting {id}");
    }
    assert!(store.execution(RT, "deleted").await.unwrap().is_none());
    let after_delete = read(0, i64::MAX, 10).await.unwrap();
    assert_eq!(
        after_delete, before,
        "a deleted execution's audit record reads exactly as before"
    );

    // A young run, so that keeping one prunes "pruned" (older than the 7 days that protect
    // an approved write); the prune also drops the archived record of "ancient".
    insert_execution(store, RT, &execution("young", now - 1_000), 1_000).await;
    move_through(store, RT, "young", &[Completed], now - 900).await;
    let pruned = store.prune_executions(RT, 1).await.unwrap();
    assert_eq!(pruned, 1, "only \"pruned\" goes");
    assert!(store.execution(RT, "pruned").await.unwrap().is_none());

    let after_prune = read(0, i64::MAX, 10).await.unwrap();
    assert_eq!(ids(&after_prune), ["pruned", "deleted", "young"]);
    assert_eq!(
        &after_prune[..2],
        &before[1..],
        "pruned and deleted executions read exactly as before; the record 100 days old is gone"
    );
    let capped = read(0, i64::MAX, 2).await.unwrap();
    assert_eq!(ids(&capped), ["pruned", "deleted"], "the limit counts both");
    let window = read(now - 9 * DAY_MS, now - 2_000, 10).await.unwrap();
    assert_eq!(
        ids(&window),
        ["deleted"],
        "the window applies to the archive"
    );
    let ancient = read(0, now - 50 * DAY_MS, 10).await.unwrap();
    assert!(ancient.is_empty(), "the expired record is not read");

    // The prune on each insert expires old records too, even with retention by count off.
    insert_execution(store, RT, &decided("old", now - 95 * DAY_MS), 1_000).await;
    move_through(store, RT, "old", &[Completed], now - 95 * DAY_MS + 50).await;
    let gone = store.delete_execution(RT, "old", now).await.unwrap();
    assert_eq!(gone, Deletion::Deleted(Completed));
    assert_eq!(ids(&read(0, now - 50 * DAY_MS, 10).await.unwrap()), ["old"]);
    insert_execution(store, RT, &execution("next", now), usize::MAX).await;
    assert!(
        read(0, now - 50 * DAY_MS, 10).await.unwrap().is_empty(),
        "an insert's prune drops the record older than the audit retention"
    );
    assert_eq!(
        ids(&read(0, i64::MAX, 10).await.unwrap()),
        ["pruned", "deleted", "young", "next"]
    );
}
