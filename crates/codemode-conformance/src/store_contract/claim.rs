//! Claims: moving an execution to `running` under a new lease, as a compare-and-set that
//! exactly one caller wins.

use super::{
    claim, commit, entry, execution, insert, insert_execution, lease, read, transition, wins_claim,
    RT,
};
use codemode::{Claim, EntryState, ExecutionStatus, Store};
use ExecutionStatus::{Paused, Running};

/// The trace context the paused executions of these cases keep.
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// Inserts `id` (recording the connectors github and stripe, with an applied and a pending
/// entry, and a trace context) and pauses it at 5.
async fn paused_with_a_log(store: &dyn Store, id: &str) {
    let mut e = execution(id, 1);
    e.log = vec![entry(0, EntryState::Applied), entry(1, EntryState::Pending)];
    e.traceparent = Some(TRACEPARENT.into());
    insert_execution(store, RT, &e, 1_000).await;
    let pause = transition(id, Some("n"), Running, Paused, 5);
    assert!(store.commit(RT, &pause).await.unwrap(), "the pause");
}

/// A won claim returns the execution as claimed, log and trace context included, exactly as
/// a read then shows it; a refused one returns the execution as it is; an unknown id is `Unknown`.
pub async fn a_claim_returns_the_execution_it_won_or_the_one_it_was_refused(store: &dyn Store) {
    paused_with_a_log(store, "e").await;
    let before = read(store, RT, "e").await;
    assert_eq!(
        before.traceparent.as_deref(),
        Some(TRACEPARENT),
        "the trace context"
    );
    let all = before.connectors.clone();
    let l = lease("n2", 500);
    match claim(store, RT, "e", Running, &l, 10, &all).await {
        Claim::Refused(got) => {
            assert_eq!(got, before, "a refused claim shows the execution as it is")
        }
        other => panic!("a running claim of a paused run gave {other:?}"),
    }
    match claim(store, RT, "e", Paused, &l, 10, &all).await {
        Claim::Won(got) => {
            assert_eq!((got.status, got.updated_at), (Running, 10));
            assert_eq!(got.log, before.log, "the claimed execution's log");
            assert_eq!(
                got,
                read(store, RT, "e").await,
                "the claimed execution, read back"
            );
        }
        other => panic!("a paused claim of a paused run gave {other:?}"),
    }
    for (runtime, id) in [(RT, "missing"), ("other", "e")] {
        let got = claim(store, runtime, id, Paused, &l, 10, &all).await;
        assert_eq!(got, Claim::Unknown, "a claim of {id} in {runtime:?}");
    }
}

/// A claim is refused, writing nothing, while a connector the execution recorded is not
/// available; extra available connectors, in any order, do not matter.
pub async fn a_claim_is_refused_while_a_connector_the_execution_recorded_is_unavailable(
    store: &dyn Store,
) {
    paused_with_a_log(store, "e").await;
    let before = read(store, RT, "e").await;
    let l = lease("n2", 500);
    for available in [vec![], vec!["github"], vec!["stripe", "slack"]] {
        let available: Vec<String> = available.into_iter().map(String::from).collect();
        match claim(store, RT, "e", Paused, &l, 10, &available).await {
            Claim::Refused(got) => assert_eq!(got, before),
            other => panic!("a claim with only {available:?} available gave {other:?}"),
        }
        assert_eq!(read(store, RT, "e").await, before, "after a refused claim");
    }
    let available = ["slack", "stripe", "github"].map(String::from);
    assert!(
        matches!(
            claim(store, RT, "e", Paused, &l, 10, &available).await,
            Claim::Won(_)
        ),
        "a claim with every recorded connector available, and one more"
    );
}

/// Of two claims on one paused execution only the first wins, and only the winner can write.
pub async fn only_one_of_two_claims_on_a_paused_execution_wins(store: &dyn Store) {
    insert(store, RT, "e", 1, "n1", 100).await;
    let pause = transition("e", Some("n1"), Running, Paused, 5);
    assert!(store.commit(RT, &pause).await.unwrap(), "the pause");
    assert!(
        wins_claim(store, RT, "e", Paused, "a", 1_000, 10).await,
        "the first claim must win"
    );
    assert!(
        !wins_claim(store, RT, "e", Paused, "b", 1_000, 10).await,
        "the second claim must lose"
    );
    let got = read(store, RT, "e").await;
    assert_eq!((got.status, got.updated_at), (Running, 10));
    let by_a = commit("e", Some("a"), vec![]);
    assert!(
        store.commit(RT, &by_a).await.unwrap(),
        "the winner's commit"
    );
    let by_b = commit("e", Some("b"), vec![]);
    assert!(
        !store.commit(RT, &by_b).await.unwrap(),
        "the loser's commit"
    );
}

/// A takeover claim wins only after the lease's last ms, and then moves the lease to the claimer.
pub async fn a_claim_on_a_running_execution_waits_for_its_lease_to_expire(store: &dyn Store) {
    insert(store, RT, "e", 1, "n1", 100).await;
    let before = read(store, RT, "e").await;
    for now in [50, 99, 100] {
        let won = wins_claim(store, RT, "e", Running, "n2", 500, now).await;
        assert!(!won, "a claim at {now} of a lease until 100");
    }
    assert_eq!(read(store, RT, "e").await, before, "after lost claims");
    assert!(
        wins_claim(store, RT, "e", Running, "n2", 500, 101).await,
        "a claim at 101 of a lease until 100"
    );
    let got = read(store, RT, "e").await;
    assert_eq!((got.status, got.updated_at), (Running, 101));
    // n2's lease now holds until 500, n1's is gone.
    assert!(
        !wins_claim(store, RT, "e", Running, "n3", 900, 400).await,
        "a claim while n2's lease holds"
    );
    let c = commit("e", Some("n1"), vec![]);
    assert!(
        !store.commit(RT, &c).await.unwrap(),
        "n1's commit after losing its lease"
    );
    let c = commit("e", Some("n2"), vec![]);
    assert!(
        store.commit(RT, &c).await.unwrap(),
        "n2's commit under its lease"
    );
    assert!(
        wins_claim(store, RT, "e", Running, "n3", 900, 501).await,
        "a claim once n2's lease expired"
    );
    assert_eq!(read(store, RT, "e").await.updated_at, 501);
}

/// A claim from a status the execution is not in, or of a missing one, loses and changes nothing.
pub async fn a_claim_from_another_status_or_on_a_missing_execution_loses(store: &dyn Store) {
    insert(store, RT, "e", 1, "n1", 100).await;
    let before = read(store, RT, "e").await;
    for now in [50, 1_000] {
        let won = wins_claim(store, RT, "e", Paused, "n2", 5_000, now).await;
        assert!(!won, "a paused claim at {now} of a running run");
    }
    assert_eq!(read(store, RT, "e").await, before, "after lost claims");
    for from in [Paused, Running] {
        let won = wins_claim(store, RT, "missing", from, "n2", 5_000, 1_000).await;
        assert!(!won, "a {from} claim of a missing run");
        let won = wins_claim(store, "other", "e", from, "n2", 5_000, 1_000).await;
        assert!(!won, "a {from} claim in another runtime");
    }
    assert_eq!(read(store, RT, "e").await, before, "after lost claims");
    assert_eq!(store.execution("other", "e").await.unwrap(), None);

    let pause = transition("e", Some("n1"), Running, Paused, 5);
    assert!(store.commit(RT, &pause).await.unwrap(), "the pause");
    let before = read(store, RT, "e").await;
    assert!(
        !wins_claim(store, RT, "e", Running, "n2", 5_000, 1_000).await,
        "a running claim of a paused run"
    );
    assert_eq!(read(store, RT, "e").await, before, "after a lost claim");
}

/// A paused execution is claimable at once, within its old lease, and its old owner cannot write.
pub async fn leaving_running_releases_the_lease_so_a_paused_execution_is_claimable_at_once(
    store: &dyn Store,
) {
    insert(store, RT, "e", 1, "n1", 1_000).await;
    let pause = transition("e", Some("n1"), Running, Paused, 120);
    assert!(store.commit(RT, &pause).await.unwrap(), "the pause");
    assert!(
        wins_claim(store, RT, "e", Paused, "n3", 900, 130).await,
        "a paused claim within the old lease"
    );
    let got = read(store, RT, "e").await;
    assert_eq!((got.status, got.updated_at), (Running, 130));
    let c = commit("e", Some("n3"), vec![]);
    assert!(store.commit(RT, &c).await.unwrap(), "the claimer's commit");
    let c = commit("e", Some("n1"), vec![]);
    assert!(
        !store.commit(RT, &c).await.unwrap(),
        "the old owner's commit"
    );
}
