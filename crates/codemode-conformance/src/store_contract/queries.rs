//! Retention, stale executions and pending actions.

use super::{
    entry, execution, insert, insert_execution, listed, move_through, read, wins_claim, FAR, RT,
};
use codemode::{EntryState, ExecutionStatus, Store};
use EntryState::{Applied, Pending};
use ExecutionStatus::{Completed, Error, Paused, Rejected, RolledBack, Running};

/// Insert and prune drop the oldest terminal executions beyond `keep`, never running or paused.
pub async fn retention_prunes_the_oldest_terminal_executions_and_never_running_or_paused(
    store: &dyn Store,
) {
    let runs: [(&str, &[ExecutionStatus]); 7] = [
        ("old-running", &[]),
        ("old-paused", &[Paused]),
        ("t1", &[Completed]),
        ("t2", &[Error]),
        ("t3", &[Paused, Rejected]),
        ("t4", &[Completed, RolledBack]),
        ("t5", &[Error]),
    ];
    for (i, (id, path)) in runs.iter().enumerate() {
        let mut e = execution(id, i as i64);
        e.log = vec![entry(0, Applied)];
        let pruned = insert_execution(store, RT, &e, 100);
        assert_eq!(pruned.await, 0, "inserting {id} under keep 100");
        move_through(store, RT, id, path, 50).await;
    }
    // Inserting a new run keeps the newest 2 terminal ones: t1, t2 and t3 go.
    let pruned = insert_execution(store, RT, &execution("new", 10), 2).await;
    assert_eq!(pruned, 3, "terminal executions beyond the newest 2");
    assert_eq!(
        listed(store, RT, None, None).await,
        ["new", "t5", "t4", "old-paused", "old-running"]
    );
    assert_eq!(store.execution(RT, "t1").await.unwrap(), None);
    // keep 0 prunes every terminal one and still no running or paused one.
    assert_eq!(store.prune_executions(RT, 0).await.unwrap(), 2);
    assert_eq!(store.prune_executions(RT, 0).await.unwrap(), 0);
    assert_eq!(
        listed(store, RT, None, None).await,
        ["new", "old-paused", "old-running"]
    );
}

/// Keeping every execution (`keep` = `usize::MAX`, retention off) prunes nothing and still
/// writes an insert's log; a later insert with a bound prunes as usual.
pub async fn retention_off_keeps_every_execution(store: &dyn Store) {
    for i in 0..3 {
        let id = format!("all-{i}");
        let mut e = execution(&id, i);
        e.log = vec![entry(0, Applied)];
        let pruned = insert_execution(store, RT, &e, usize::MAX);
        assert_eq!(pruned.await, 0, "inserting {id} with retention off");
        move_through(store, RT, &id, &[Completed], 50).await;
        assert_eq!(read(store, RT, &id).await.log, e.log, "{id}'s log");
    }
    assert_eq!(store.prune_executions(RT, usize::MAX).await.unwrap(), 0);
    assert_eq!(
        listed(store, RT, None, None).await,
        ["all-2", "all-1", "all-0"]
    );
    let pruned = insert_execution(store, RT, &execution("bounded", 9), 1).await;
    assert_eq!(pruned, 2, "terminal executions beyond the newest 1");
}

/// Among terminal executions created at the same ms, retention keeps the last inserted.
pub async fn retention_breaks_created_at_ties_by_insertion_order(store: &dyn Store) {
    for id in ["first", "second", "third"] {
        insert(store, RT, id, 7, "n", FAR).await;
        move_through(store, RT, id, &[Completed], 8).await;
    }
    assert_eq!(store.prune_executions(RT, 1).await.unwrap(), 2);
    assert_eq!(listed(store, RT, None, None).await, ["third"]);
}

/// A pruned execution's log goes with it: its id, inserted again, starts with an empty log.
pub async fn a_pruned_execution_leaves_no_log_behind(store: &dyn Store) {
    let mut e = execution("t", 1);
    e.log = vec![entry(0, Applied), entry(1, Pending)];
    insert_execution(store, RT, &e, 50).await;
    move_through(store, RT, "t", &[Paused, Rejected], 2).await;
    assert_eq!(store.prune_executions(RT, 0).await.unwrap(), 1);
    assert_eq!(store.execution(RT, "t").await.unwrap(), None);
    insert(store, RT, "t", 3, "n", FAR).await;
    assert!(
        read(store, RT, "t").await.log.is_empty(),
        "a reused id's log"
    );
    move_through(store, RT, "t", &[Paused], 4).await;
    assert!(store.pending(RT, None).await.unwrap().is_empty());
}

/// Stale: paused, or running with an expired lease, updated strictly before `before_ms`.
pub async fn stale_finds_old_paused_and_expired_running_executions_only(store: &dyn Store) {
    let (before, now) = (5_000, 10_000);
    // Running, old, lease expired at 2_000: stale once `now` is past it.
    insert(store, RT, "run-expired", 1, "n", 2_000).await;
    // Running, old, lease still held: not stale.
    insert(store, RT, "run-held", 1, "n", 20_000).await;
    // Running, lease expired, but updated recently: not stale.
    insert(store, RT, "run-recent", 6_000, "n", 2_000).await;
    // Paused at 1_000: stale; paused at 7_000: not.
    for (id, at) in [("paused-old", 1_000), ("paused-recent", 7_000)] {
        insert(store, RT, id, 1, "n", FAR).await;
        move_through(store, RT, id, &[Paused], at).await;
    }
    // Terminal and old: never stale.
    insert(store, RT, "done", 1, "n", FAR).await;
    move_through(store, RT, "done", &[Completed], 1).await;
    // Paused and old, created before all the others though inserted last: listed first.
    insert(store, RT, "paused-first", 0, "n", FAR).await;
    move_through(store, RT, "paused-first", &[Paused], 500).await;

    let stale = |before, now| store.stale_executions(RT, before, now);
    let expected = [
        ("paused-first", Paused),
        ("run-expired", Running),
        ("paused-old", Paused),
    ]
    .map(|(id, s)| (id.to_string(), s));
    assert_eq!(stale(before, now).await.unwrap(), expected);
    // A lease holds through its last ms.
    let held = vec![expected[0].clone(), expected[2].clone()];
    assert_eq!(stale(before, 2_000).await.unwrap(), held, "at 2_000");
    assert_eq!(stale(before, 2_001).await.unwrap(), expected, "at 2_001");
    // Updated strictly before `before_ms`: paused-old was updated at 1_000.
    let early = vec![expected[0].clone(), expected[1].clone()];
    assert_eq!(stale(1_000, now).await.unwrap(), early, "before 1_000");
    assert_eq!(stale(1_001, now).await.unwrap(), expected, "before 1_001");
    let none = store.stale_executions("other", before, now).await.unwrap();
    assert!(
        none.is_empty(),
        "another runtime's stale executions: {none:?}"
    );
}

/// Pending actions: pending entries of paused executions, newest first, each in seq order.
pub async fn pending_lists_pending_entries_of_paused_executions_newest_first(store: &dyn Store) {
    for (id, at) in [("older", 1), ("newer", 2), ("still-running", 3)] {
        let mut e = execution(id, at);
        e.log = vec![entry(0, Applied), entry(1, Pending), entry(2, Pending)];
        insert_execution(store, RT, &e, 50).await;
        if id != "still-running" {
            move_through(store, RT, id, &[Paused], 5).await;
        }
    }
    let all = store.pending(RT, None).await.unwrap();
    let got: Vec<_> = all
        .iter()
        .map(|p| (p.execution_id.as_str(), p.seq))
        .collect();
    assert_eq!(
        got,
        [("newer", 1), ("newer", 2), ("older", 1), ("older", 2)]
    );
    let logged = entry(1, Pending);
    assert_eq!(all[0].connector, logged.connector);
    assert_eq!(all[0].method, logged.method);
    assert_eq!(all[0].args, logged.args);
    let args = serde_json::to_string(&all[0].args).unwrap();
    assert_eq!(
        args, r#"{"title":"issue 1","labels":["a","b"],"b":1,"a":2}"#,
        "JSON must keep its keys in the order written"
    );
    let one = store.pending(RT, Some("older")).await.unwrap();
    let got: Vec<_> = one
        .iter()
        .map(|p| (p.execution_id.as_str(), p.seq))
        .collect();
    assert_eq!(got, [("older", 1), ("older", 2)]);
    for id in ["still-running", "missing"] {
        let none = store.pending(RT, Some(id)).await.unwrap();
        assert!(none.is_empty(), "pending actions of {id}: {none:?}");
    }
    assert!(store.pending("other", None).await.unwrap().is_empty());
    // Once approved (claimed back to running), an execution has no pending actions.
    assert!(
        wins_claim(store, RT, "newer", Paused, "n", FAR, 10).await,
        "the approval's claim"
    );
    let left: Vec<_> = store
        .pending(RT, None)
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.execution_id)
        .collect();
    assert_eq!(left, ["older", "older"]);
}

/// Pages of pending actions, each after the last of the page before, list exactly what the
/// full list does, in its order; a cursor whose execution left `paused` still pages on.
pub async fn pending_pages_follow_the_order_of_the_full_list(store: &dyn Store) {
    // Two executions share a created_at, so insertion order breaks the tie.
    for (id, at) in [("a", 1), ("b", 2), ("c", 2), ("d", 3), ("running", 4)] {
        let mut e = execution(id, at);
        e.log = vec![entry(0, Applied), entry(1, Pending), entry(2, Pending)];
        insert_execution(store, RT, &e, 50).await;
        if id != "running" {
            move_through(store, RT, id, &[Paused], 5).await;
        }
    }
    let key = |p: &codemode::PendingAction| (p.execution_id.clone(), p.seq);
    let all: Vec<_> = store
        .pending(RT, None)
        .await
        .unwrap()
        .iter()
        .map(key)
        .collect();
    assert_eq!(all.len(), 8);
    for limit in [1, 3, 8, 50] {
        let mut paged = Vec::new();
        let mut after: Option<(String, u64)> = None;
        loop {
            let page = store
                .pending_page(
                    RT,
                    after.as_ref().map(|(id, seq)| (id.as_str(), *seq)),
                    limit,
                )
                .await
                .unwrap();
            assert!(page.len() <= limit);
            paged.extend(page.iter().map(key));
            match page.last() {
                Some(last) if page.len() == limit => after = Some(key(last)),
                _ => break,
            }
        }
        assert_eq!(paged, all, "pages of {limit}");
    }
    // The cursor's execution is approved meanwhile: the next page starts where it was.
    let first = store.pending_page(RT, None, 3).await.unwrap();
    let cursor = key(&first[2]);
    assert!(wins_claim(store, RT, &cursor.0, Paused, "n", FAR, 10).await);
    let rest: Vec<_> = store
        .pending_page(RT, Some((cursor.0.as_str(), cursor.1)), 50)
        .await
        .unwrap()
        .iter()
        .map(key)
        .collect();
    let expected: Vec<_> = all[3..]
        .iter()
        .filter(|(id, _)| *id != cursor.0)
        .cloned()
        .collect();
    assert_eq!(rest, expected);
    let unknown = store
        .pending_page(RT, Some(("missing", 1)), 50)
        .await
        .unwrap();
    assert!(unknown.is_empty(), "{unknown:?}");
    assert!(store
        .pending_page("other", None, 50)
        .await
        .unwrap()
        .is_empty());
}
