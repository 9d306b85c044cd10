//! The compare-and-set paths: commit and claim, with leases.

mod common;

use codemode::{Commit, EntryState, ExecutionStatus, Store, StoreError, Transition};
use common::{entry, execution, lease, store, RT};
use serde_json::json;
use ExecutionStatus::*;

fn commit(id: &str, owner: Option<&str>, entries: Vec<codemode::LogEntry>) -> Commit {
    Commit {
        execution_id: id.into(),
        owner: owner.map(str::to_string),
        entries,
        transition: None,
    }
}

#[tokio::test]
async fn commit_upserts_entries_by_seq() {
    let (_d, _p, s) = store();
    s.insert_execution(RT, &execution("e", 1), &lease("n1", 100), 50)
        .await
        .unwrap();
    let executing = entry(0, EntryState::Executing);
    assert!(s
        .commit(RT, &commit("e", Some("n1"), vec![executing]))
        .await
        .unwrap());
    let mut applied = entry(0, EntryState::Applied);
    applied.result = Some(json!(null));
    let step = codemode::LogEntry {
        seq: 1,
        connector: "codemode".into(),
        method: "step".into(),
        args: json!(["now"]),
        result: Some(json!(1234)),
        error: None,
        requires_approval: false,
        ephemeral: false,
        state: EntryState::Applied,
    };
    assert!(s
        .commit(
            RT,
            &commit("e", Some("n1"), vec![applied.clone(), step.clone()])
        )
        .await
        .unwrap());
    let got = s.execution(RT, "e").await.unwrap().unwrap();
    assert_eq!(got.log, vec![applied, step]);
    // A null result is kept apart from no result.
    assert_eq!(got.log[0].result, Some(json!(null)));
    assert_eq!(got.status, Running);
}

#[tokio::test]
async fn commit_with_transition_records_result_error_logs_and_clears_the_lease() {
    let (_d, _p, s) = store();
    s.insert_execution(RT, &execution("e", 1), &lease("n1", 100), 50)
        .await
        .unwrap();
    let mut t = Transition::new(Running, Completed, 42);
    t.result = Some(json!({"ok": true}));
    t.logs = Some(vec!["line 1".into(), "line 2".into()]);
    let c = Commit {
        transition: Some(t),
        ..commit("e", Some("n1"), vec![entry(0, EntryState::Applied)])
    };
    assert!(s.commit(RT, &c).await.unwrap());
    let got = s.execution(RT, "e").await.unwrap().unwrap();
    assert_eq!(got.status, Completed);
    assert_eq!(got.result, Some(json!({"ok": true})));
    assert_eq!(got.logs, ["line 1", "line 2"]);
    assert_eq!(got.updated_at, 42);
    assert_eq!(got.log.len(), 1);
    // Rolling back keeps the recorded result and logs (None leaves them as they are).
    let back = Commit {
        transition: Some(Transition::new(Completed, RolledBack, 50)),
        ..commit("e", None, vec![entry(0, EntryState::Reverted)])
    };
    assert!(s.commit(RT, &back).await.unwrap());
    let got = s.execution(RT, "e").await.unwrap().unwrap();
    assert_eq!(got.status, RolledBack);
    assert_eq!(got.result, Some(json!({"ok": true})));
    assert_eq!(got.logs, ["line 1", "line 2"]);
    assert_eq!(got.log[0].state, EntryState::Reverted);
}

#[tokio::test]
async fn commit_with_stale_from_writes_nothing_not_even_its_entries() {
    let (_d, _p, s) = store();
    s.insert_execution(RT, &execution("e", 1), &lease("n1", 100), 50)
        .await
        .unwrap();
    let pause = Commit {
        transition: Some(Transition::new(Running, Paused, 5)),
        ..commit("e", Some("n1"), vec![entry(0, EntryState::Pending)])
    };
    assert!(s.commit(RT, &pause).await.unwrap());
    let before = s.execution(RT, "e").await.unwrap().unwrap();
    // A second node still thinks it is running.
    let mut t = Transition::new(Running, Error, 9);
    t.error = Some("late".into());
    let stale = Commit {
        transition: Some(t),
        ..commit(
            "e",
            None,
            vec![entry(0, EntryState::Applied), entry(1, EntryState::Applied)],
        )
    };
    assert!(!s.commit(RT, &stale).await.unwrap());
    assert_eq!(s.execution(RT, "e").await.unwrap().unwrap(), before);
}

#[tokio::test]
async fn commit_by_a_node_that_lost_the_lease_writes_nothing() {
    let (_d, _p, s) = store();
    s.insert_execution(RT, &execution("e", 1), &lease("n1", 100), 50)
        .await
        .unwrap();
    // n1's lease expires; n2 takes the run over.
    assert!(s
        .claim(RT, "e", Running, &lease("n2", 500), 200)
        .await
        .unwrap());
    let before = s.execution(RT, "e").await.unwrap().unwrap();
    let late = commit("e", Some("n1"), vec![entry(0, EntryState::Applied)]);
    assert!(!s.commit(RT, &late).await.unwrap());
    let late_end = Commit {
        transition: Some(Transition::new(Running, Completed, 300)),
        ..late
    };
    assert!(!s.commit(RT, &late_end).await.unwrap());
    assert_eq!(s.execution(RT, "e").await.unwrap().unwrap(), before);
    // The new owner writes fine.
    assert!(s
        .commit(
            RT,
            &commit("e", Some("n2"), vec![entry(0, EntryState::Applied)])
        )
        .await
        .unwrap());
}

#[tokio::test]
async fn commit_on_a_missing_execution_is_refused() {
    let (_d, _p, s) = store();
    let c = commit("ghost", None, vec![entry(0, EntryState::Applied)]);
    assert!(!s.commit(RT, &c).await.unwrap());
    assert!(!s.commit("other", &c).await.unwrap());
    assert_eq!(s.execution(RT, "ghost").await.unwrap(), None);
}

#[tokio::test]
async fn an_illegal_transition_is_an_error_and_writes_nothing() {
    let (_d, _p, s) = store();
    s.insert_execution(RT, &execution("e", 1), &lease("n1", 100), 50)
        .await
        .unwrap();
    let c = Commit {
        transition: Some(Transition::new(Running, Rejected, 5)),
        ..commit("e", None, vec![entry(0, EntryState::Applied)])
    };
    let err = s.commit(RT, &c).await.unwrap_err();
    assert!(matches!(err, StoreError::Backend(ref m) if m.contains("running -> rejected")));
    let got = s.execution(RT, "e").await.unwrap().unwrap();
    assert_eq!(got.status, Running);
    assert!(got.log.is_empty());
    assert!(s
        .claim(RT, "e", Completed, &lease("n", 1), 1)
        .await
        .is_err());
}

#[tokio::test]
async fn two_claims_on_a_paused_run_only_one_wins() {
    let (_d, _p, s) = store();
    s.insert_execution(RT, &execution("e", 1), &lease("n1", 100), 50)
        .await
        .unwrap();
    let pause = Commit {
        transition: Some(Transition::new(Running, Paused, 5)),
        ..commit("e", Some("n1"), vec![])
    };
    assert!(s.commit(RT, &pause).await.unwrap());
    let a = s
        .claim(RT, "e", Paused, &lease("a", 1_000), 10)
        .await
        .unwrap();
    let b = s
        .claim(RT, "e", Paused, &lease("b", 1_000), 10)
        .await
        .unwrap();
    assert!(a && !b);
    let got = s.execution(RT, "e").await.unwrap().unwrap();
    assert_eq!(got.status, Running);
    assert_eq!(got.updated_at, 10);
    // Only the winner holds the lease.
    assert!(s.commit(RT, &commit("e", Some("a"), vec![])).await.unwrap());
    assert!(!s.commit(RT, &commit("e", Some("b"), vec![])).await.unwrap());
}

#[test]
fn claims_race_across_two_connections_and_exactly_one_wins_each() {
    let (_d, path, s) = store();
    const RUNS: usize = 40;
    let setup = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    setup.block_on(async {
        for i in 0..RUNS {
            let id = format!("e{i}");
            s.insert_execution(RT, &execution(&id, 1), &lease("n1", 100), 1_000)
                .await
                .unwrap();
            let pause = Commit {
                transition: Some(Transition::new(Running, Paused, 5)),
                ..commit(&id, None, vec![])
            };
            assert!(s.commit(RT, &pause).await.unwrap());
        }
    });
    let wins: Vec<usize> = std::thread::scope(|scope| {
        let racers: Vec<_> = ["a", "b"]
            .into_iter()
            .map(|node| {
                let path = path.clone();
                scope.spawn(move || {
                    let store = codemode_sqlite::SqliteStore::open(&path).unwrap();
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .build()
                        .unwrap();
                    rt.block_on(async {
                        let mut won = 0;
                        for i in 0..RUNS {
                            let l = lease(node, 1_000);
                            if store
                                .claim(RT, &format!("e{i}"), Paused, &l, 10)
                                .await
                                .unwrap()
                            {
                                won += 1;
                            }
                        }
                        won
                    })
                })
            })
            .collect();
        racers.into_iter().map(|r| r.join().unwrap()).collect()
    });
    assert_eq!(wins.iter().sum::<usize>(), RUNS, "{wins:?}");
}

#[tokio::test]
async fn a_running_claim_needs_an_expired_lease() {
    let (_d, _p, s) = store();
    s.insert_execution(RT, &execution("e", 1), &lease("n1", 100), 50)
        .await
        .unwrap();
    // Still held at 100 (the lease runs until, and including, its last ms).
    assert!(!s
        .claim(RT, "e", Running, &lease("n2", 500), 50)
        .await
        .unwrap());
    assert!(!s
        .claim(RT, "e", Running, &lease("n2", 500), 100)
        .await
        .unwrap());
    assert!(s
        .claim(RT, "e", Running, &lease("n2", 500), 101)
        .await
        .unwrap());
    // A claim from the wrong status fails.
    assert!(!s
        .claim(RT, "e", Paused, &lease("n3", 900), 1_000)
        .await
        .unwrap());
    // Leaving running clears the lease; a paused run is claimable at once.
    let pause = Commit {
        transition: Some(Transition::new(Running, Paused, 120)),
        ..commit("e", Some("n2"), vec![])
    };
    assert!(s.commit(RT, &pause).await.unwrap());
    assert!(s
        .claim(RT, "e", Paused, &lease("n3", 900), 130)
        .await
        .unwrap());
    assert!(!s
        .claim(RT, "missing", Paused, &lease("n3", 900), 130)
        .await
        .unwrap());
}
