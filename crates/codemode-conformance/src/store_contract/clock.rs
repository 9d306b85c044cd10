//! The clock tape: what `Date.now()` read in an execution's passes, kept for its replays.

use super::{commit, insert, read, wins_claim, RT};
use codemode::{
    ClockRun, ClockTape, Commit, EntryState, ExecutionStatus, StepMark, Store, Transition,
};
use EntryState::Executing;
use ExecutionStatus::{Completed, Paused, Running};

fn tape(runs: &[(i64, u64)], steps: &[(u64, u64, u64)]) -> ClockTape {
    ClockTape {
        now: runs.iter().map(|&(ms, n)| ClockRun(ms, n)).collect(),
        steps: steps.iter().map(|&(s, r, d)| StepMark(s, r, d)).collect(),
    }
}

/// A commit that carries a tape replaces the recorded one, with or without a status change;
/// one that carries none keeps it; a refused commit writes none; a claim reads it back.
pub async fn a_commit_records_the_clock_tape_and_a_claim_reads_it_back(store: &dyn Store) {
    insert(store, RT, "c", 1, "n1", 100).await;
    assert_eq!(
        read(store, RT, "c").await.clock,
        ClockTape::default(),
        "a new execution"
    );

    let first = tape(&[(1_700_000_000_000, 3)], &[]);
    let write = Commit {
        clock: Some(first.clone()),
        ..commit("c", Some("n1"), vec![super::entry(0, Executing)])
    };
    assert!(
        store.commit(RT, &write).await.unwrap(),
        "a write's mark with the tape"
    );
    assert_eq!(read(store, RT, "c").await.clock, first);

    let plain = commit("c", Some("n1"), vec![super::entry(1, Executing)]);
    assert!(store.commit(RT, &plain).await.unwrap(), "entries only");
    assert_eq!(
        read(store, RT, "c").await.clock,
        first,
        "a commit without a tape keeps it"
    );

    let refused = Commit {
        clock: Some(tape(&[(9, 9)], &[])),
        ..commit("c", Some("someone else"), Vec::new())
    };
    assert!(
        !store.commit(RT, &refused).await.unwrap(),
        "another node's commit"
    );
    assert_eq!(
        read(store, RT, "c").await.clock,
        first,
        "a refused commit writes no tape"
    );

    let second = tape(
        &[(1_700_000_000_000, 3), (1_700_000_000_001, 1)],
        &[(2, 4, 7)],
    );
    let pause = Commit {
        transition: Some(Transition::new(Running, Paused, 30)),
        clock: Some(second.clone()),
        ..commit("c", Some("n1"), Vec::new())
    };
    assert!(
        store.commit(RT, &pause).await.unwrap(),
        "the pause with the tape"
    );
    assert_eq!(read(store, RT, "c").await.clock, second);

    let claimed = super::claim(
        store,
        RT,
        "c",
        Paused,
        &super::lease("n2", 1_000),
        40,
        &super::execution("c", 0).connectors,
    )
    .await;
    let codemode::Claim::Won(won) = claimed else {
        panic!("the approval's claim lost: {claimed:?}")
    };
    assert_eq!(
        won.clock, second,
        "a claim reads the tape in its transaction"
    );

    let done = Commit {
        transition: Some(Transition::new(Running, Completed, 50)),
        ..commit("c", Some("n2"), Vec::new())
    };
    assert!(store.commit(RT, &done).await.unwrap(), "the completion");
    assert_eq!(
        read(store, RT, "c").await.clock,
        second,
        "a transition without a tape keeps it"
    );
    assert!(!wins_claim(store, RT, "c", Paused, "n3", 2_000, 60).await);
}
