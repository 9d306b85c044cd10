//! Listing summaries and the audit export's read: pages without logs, windows in the store.

use super::{entry, execution, insert_execution, move_through, RT};
use codemode::{
    Actor, Decision, DecisionKind, EntryState, ExecutionStatus, ExecutionSummary, Store,
    CODE_PREVIEW_CHARS,
};
use EntryState::{Applied, Error as Failed, Executing, Pending, Reverted};
use ExecutionStatus::{Completed, Paused};

/// The ids of a page of summaries.
async fn page(
    store: &dyn Store,
    status: Option<ExecutionStatus>,
    before: Option<&str>,
    limit: usize,
) -> Vec<ExecutionSummary> {
    store
        .execution_summaries(RT, status, before, limit)
        .await
        .unwrap_or_else(|e| panic!("listing summaries failed: {e}"))
}

fn ids(list: &[ExecutionSummary]) -> Vec<&str> {
    list.iter().map(|s| s.id.as_str()).collect()
}

/// Summaries list newest first (ties: last inserted first) in pages that continue after the
/// cursor, optionally of one status; each counts its entries, calls and pending actions and
/// carries only the start of its code.
pub async fn summaries_page_newest_first_with_counts_and_no_log(store: &dyn Store) {
    for (id, at) in [("s1", 10), ("s2", 20), ("s3", 20), ("s4", 5), ("s5", 30)] {
        let mut e = execution(id, at);
        e.log = vec![entry(0, Applied), entry(1, Applied)];
        if id == "s5" {
            e.code = "x".repeat(CODE_PREVIEW_CHARS + 1);
            let mut step = entry(2, Applied);
            step.connector = "codemode".into();
            step.method = "step".into();
            e.log.push(step);
            e.log.push(entry(3, Pending));
            e.log.push(entry(4, Pending));
        }
        insert_execution(store, RT, &e, 50).await;
    }
    move_through(store, RT, "s5", &[Paused], 31).await;
    move_through(store, RT, "s1", &[Completed], 32).await;

    let all = page(store, None, None, 50).await;
    assert_eq!(ids(&all), ["s5", "s3", "s2", "s1", "s4"]);
    let s5 = &all[0];
    assert_eq!(s5.code, "x".repeat(CODE_PREVIEW_CHARS), "the code's start");
    assert!(s5.code_cut, "a longer code is marked cut");
    assert_eq!((s5.entries, s5.calls, s5.pending), (5, 4, 2));
    assert_eq!(s5.status, Paused);
    assert_eq!((s5.created_at, s5.updated_at), (30, 31));
    assert_eq!(s5.connectors, ["github", "stripe"]);
    let s1 = all.iter().find(|s| s.id == "s1").unwrap();
    assert_eq!(s1.code, execution("s1", 0).code);
    assert!(!s1.code_cut);
    assert_eq!((s1.entries, s1.calls, s1.pending), (2, 2, 0));
    assert_eq!(s1.status, Completed);

    let first = page(store, None, None, 2).await;
    assert_eq!(ids(&first), ["s5", "s3"]);
    let second = page(store, None, Some("s3"), 2).await;
    assert_eq!(ids(&second), ["s2", "s1"], "the page after s3");
    let last = page(store, None, Some("s1"), 2).await;
    assert_eq!(ids(&last), ["s4"]);
    assert!(page(store, None, Some("s4"), 2).await.is_empty());
    assert!(
        page(store, None, Some("gone"), 2).await.is_empty(),
        "an unknown cursor ends the listing"
    );
    let running = page(store, Some(ExecutionStatus::Running), None, 50).await;
    assert_eq!(ids(&running), ["s3", "s2", "s4"]);
    let running = page(store, Some(ExecutionStatus::Running), Some("s3"), 1).await;
    assert_eq!(ids(&running), ["s2"]);
    assert!(page(store, Some(Completed), Some("s5"), 5)
        .await
        .iter()
        .all(|s| s.status == Completed));
}

/// The audit read returns the executions touched in `[since, until)`, oldest first, at most
/// the limit, each with its decisions and only its applied and reverted entries and those a
/// decision concerned, without results, code or console output.
pub async fn the_audit_read_filters_its_window_and_entries_in_the_store(store: &dyn Store) {
    for (id, at) in [("a1", 100), ("a2", 200), ("a3", 300), ("a4", 400)] {
        let mut e = execution(id, at);
        let mut rejected = entry(4, Pending);
        rejected.decisions = vec![Decision::new(
            DecisionKind::Reject,
            Actor::cli(),
            at + 2,
            vec![],
        )];
        e.log = vec![
            entry(0, Applied),
            entry(1, Reverted),
            entry(2, Failed),
            entry(3, Executing),
            rejected,
            entry(5, Pending),
        ];
        e.logs = vec!["console".into()];
        e.decisions = vec![Decision::new(
            DecisionKind::Approve,
            Actor::cli(),
            at + 1,
            vec![0],
        )];
        insert_execution(store, RT, &e, 50).await;
        move_through(store, RT, id, &[Completed], at + 50).await;
    }
    let read = |since, until, limit| store.audit_executions(RT, since, until, limit);
    let got = read(240, 400, 10).await.unwrap();
    let got_ids: Vec<&str> = got.iter().map(|e| e.id.as_str()).collect();
    // a2 was updated at 250 (inside), a3 created at 300; a4 was created at `until`.
    assert_eq!(got_ids, ["a2", "a3"]);
    for e in &got {
        let states: Vec<EntryState> = e.log.iter().map(|l| l.state).collect();
        assert_eq!(
            states,
            [Applied, Reverted, Pending],
            "only applied and reverted entries and those a decision concerned"
        );
        assert!(e.log.iter().all(|l| l.result.is_none()), "no results");
        assert_eq!(e.log[0].args, entry(0, Applied).args, "args as recorded");
        assert!(e.logs.is_empty() && e.code.is_empty() && e.result.is_none());
        assert_eq!(e.decisions.len(), 1, "decisions are kept");
        assert_eq!(e.status, Completed);
    }
    let capped = read(0, i64::MAX, 3).await.unwrap();
    let capped: Vec<&str> = capped.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(
        capped,
        ["a1", "a2", "a3"],
        "oldest first, at most the limit"
    );
    assert!(read(500, i64::MAX, 10).await.unwrap().is_empty());
}

/// Pruning keeps a finished execution that holds an approved write still applied and was
/// updated within the retention's minimum age (7 days by default), however many runs come
/// after it; a rolled-back one, one older than that, or one without applied writes goes.
pub async fn retention_keeps_recent_approved_writes_for_their_audit_and_rollback(
    store: &dyn Store,
) {
    let now = codemode::now_ms();
    let approved = |id: &str, at: i64| {
        let mut e = execution(id, at);
        let mut write = entry(0, Applied);
        write.requires_approval = true;
        e.log = vec![write];
        e
    };
    insert_execution(store, RT, &approved("write", now - 3_000), 50).await;
    move_through(store, RT, "write", &[Completed], now - 2_900).await;
    insert_execution(store, RT, &approved("undone", now - 2_800), 50).await;
    move_through(
        store,
        RT,
        "undone",
        &[Completed, ExecutionStatus::RolledBack],
        now - 2_700,
    )
    .await;
    insert_execution(store, RT, &approved("ancient", 1_000), 50).await;
    move_through(store, RT, "ancient", &[Completed], 1_100).await;
    for i in 0..5 {
        let id = format!("trivial-{i}");
        insert_execution(store, RT, &execution(&id, now - 1_000 + i), 50).await;
        move_through(store, RT, &id, &[Completed], now - 900 + i).await;
    }
    let pruned = store.prune_executions(RT, 2).await.unwrap();
    assert_eq!(pruned, 5, "undone, ancient and three trivial runs go");
    let left = page(store, None, None, 50).await;
    assert_eq!(ids(&left), ["trivial-4", "trivial-3", "write"]);
    // The prune on every insert keeps it too.
    insert_execution(store, RT, &execution("next", now), 1).await;
    move_through(store, RT, "next", &[Completed], now).await;
    insert_execution(store, RT, &execution("last", now + 1), 1).await;
    let left = page(store, None, None, 50).await;
    assert_eq!(ids(&left), ["last", "next", "write"]);
    let kept = store.execution(RT, "write").await.unwrap().unwrap();
    assert_eq!(kept.log[0].state, Applied, "its log is whole");
}

/// Pruning keeps a recent finished execution holding a write that needed no approval (a
/// call to a tool that is not read-only) still applied, as it keeps approved ones: a person
/// may still roll it back. One whose applied calls were all read-only goes. The flag reads
/// back as written.
pub async fn retention_keeps_recent_writes_that_needed_no_approval(store: &dyn Store) {
    let now = codemode::now_ms();
    let with = |id: &str, at: i64, read_only: bool| {
        let mut e = execution(id, at);
        let mut call = entry(0, Applied);
        call.read_only = read_only;
        e.log = vec![call];
        e
    };
    insert_execution(store, RT, &with("write", now - 3_000, false), 50).await;
    move_through(store, RT, "write", &[Completed], now - 2_900).await;
    insert_execution(store, RT, &with("read", now - 2_800, true), 50).await;
    move_through(store, RT, "read", &[Completed], now - 2_700).await;
    let read = store.execution(RT, "read").await.unwrap().unwrap();
    assert!(
        read.log[0].read_only,
        "a read-only entry reads back read-only"
    );
    for i in 0..4 {
        let id = format!("trivial-{i}");
        insert_execution(store, RT, &execution(&id, now - 1_000 + i), 50).await;
        move_through(store, RT, &id, &[Completed], now - 900 + i).await;
    }
    let pruned = store.prune_executions(RT, 2).await.unwrap();
    assert_eq!(pruned, 3, "the read-only run and two trivial runs go");
    let left = page(store, None, None, 50).await;
    assert_eq!(ids(&left), ["trivial-3", "trivial-2", "write"]);
    // The prune on every insert keeps it too.
    insert_execution(store, RT, &execution("next", now), 1).await;
    move_through(store, RT, "next", &[Completed], now).await;
    insert_execution(store, RT, &execution("last", now + 1), 1).await;
    let left = page(store, None, None, 50).await;
    assert_eq!(ids(&left), ["last", "next", "write"]);
    let kept = store.execution(RT, "write").await.unwrap().unwrap();
    let call = &kept.log[0];
    assert_eq!(call.state, Applied, "its log is whole");
    assert!(!call.requires_approval && !call.read_only, "{call:?}");
}
