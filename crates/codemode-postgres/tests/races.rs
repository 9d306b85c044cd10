//! Compare-and-set races between two nodes (two stores, two pools) on one database.

mod common;

use codemode::{Commit, ExecutionStatus, Store, Transition};
use codemode_postgres::PostgresStore;
use common::{available, execution, lease};
use std::sync::Arc;
use tokio::sync::Barrier;

const RT: &str = "race";

/// Inserts `n` executions and pauses them; returns their ids.
async fn paused(store: &PostgresStore, prefix: &str, n: usize) -> Vec<String> {
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        let id = format!("{prefix}{i}");
        store
            .insert_execution(RT, &execution(&id, i as i64), &lease("maker", 1), 100_000)
            .await
            .unwrap();
        let c = Commit {
            execution_id: id.clone(),
            owner: Some("maker".into()),
            entries: vec![],
            transition: Some(Transition::new(
                ExecutionStatus::Running,
                ExecutionStatus::Paused,
                i as i64,
            )),
            clock: None,
        };
        assert!(store.commit(RT, &c).await.unwrap());
        ids.push(id);
    }
    ids
}

/// Whether `owner`'s claim of `id` from `from` at `now_ms`, for a lease until `until_ms`,
/// wins.
async fn claim_wins(
    store: PostgresStore,
    id: String,
    from: ExecutionStatus,
    owner: &str,
    until_ms: i64,
    now_ms: i64,
) -> bool {
    store
        .claim(RT, &id, from, &lease(owner, until_ms), now_ms, &available())
        .await
        .unwrap()
        .is_won()
}

/// Runs `a` and `b` on two tasks released by one barrier; returns both answers.
async fn race<A, B>(a: A, b: B) -> (bool, bool)
where
    A: std::future::Future<Output = bool> + Send + 'static,
    B: std::future::Future<Output = bool> + Send + 'static,
{
    let barrier = Arc::new(Barrier::new(2));
    let (ba, bb) = (barrier.clone(), barrier);
    let ta = tokio::spawn(async move {
        ba.wait().await;
        a.await
    });
    let tb = tokio::spawn(async move {
        bb.wait().await;
        b.await
    });
    (ta.await.unwrap(), tb.await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_claim_one_paused_execution_exactly_one_wins_1000_times() {
    let (db, a) = setup_or_skip!("two_nodes_claim_one_paused_execution");
    let b = PostgresStore::connect(db.url()).await.unwrap();
    let ids = paused(&a, "c", 1000).await;
    let mut wins = [0usize; 2];
    for id in ids {
        let (sa, sb) = (a.clone(), b.clone());
        let (ia, ib) = (id.clone(), id.clone());
        let (wa, wb) = race(
            claim_wins(sa, ia, ExecutionStatus::Paused, "A", i64::MAX, 0),
            claim_wins(sb, ib, ExecutionStatus::Paused, "B", i64::MAX, 0),
        )
        .await;
        assert!(wa ^ wb, "{id}: exactly one claim must win (A {wa}, B {wb})");
        wins[usize::from(wb)] += 1;
        let owner = if wa { "A" } else { "B" };
        // The winner owns the run: the loser cannot write to it.
        let got = a.execution(RT, &id).await.unwrap().unwrap();
        assert_eq!(got.status, ExecutionStatus::Running);
        let loser = if wa { "B" } else { "A" };
        let c = Commit {
            execution_id: id.clone(),
            owner: Some(loser.into()),
            entries: vec![common::entry(0, codemode::EntryState::Applied)],
            transition: None,
            clock: None,
        };
        assert!(!b.commit(RT, &c).await.unwrap(), "{id}: {owner} owns it");
    }
    println!("claims won: A {}, B {}", wins[0], wins[1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_and_reject_at_once_exactly_one_wins() {
    let (db, a) = setup_or_skip!("approve_and_reject_at_once_exactly_one_wins");
    let b = PostgresStore::connect(db.url()).await.unwrap();
    for id in paused(&a, "r", 300).await {
        let (sa, sb) = (a.clone(), b.clone());
        let (ia, ib) = (id.clone(), id.clone());
        let (approved, rejected) = race(
            claim_wins(sa, ia, ExecutionStatus::Paused, "A", i64::MAX, 0),
            async move {
                let c = Commit {
                    execution_id: ib,
                    owner: None,
                    entries: vec![],
                    transition: Some(Transition::new(
                        ExecutionStatus::Paused,
                        ExecutionStatus::Rejected,
                        1,
                    )),
                    clock: None,
                };
                sb.commit(RT, &c).await.unwrap()
            },
        )
        .await;
        assert!(
            approved ^ rejected,
            "{id}: approve {approved}, reject {rejected}"
        );
        let status = a.execution(RT, &id).await.unwrap().unwrap().status;
        let expected = if approved {
            ExecutionStatus::Running
        } else {
            ExecutionStatus::Rejected
        };
        assert_eq!(status, expected);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_take_over_an_expired_run_exactly_one_wins() {
    let (db, a) = setup_or_skip!("two_nodes_take_over_an_expired_run");
    let b = PostgresStore::connect(db.url()).await.unwrap();
    for i in 0..300 {
        let id = format!("t{i}");
        // A dead node's run: its lease ended at 10.
        a.insert_execution(RT, &execution(&id, 0), &lease("dead", 10), 100_000)
            .await
            .unwrap();
        let (sa, sb) = (a.clone(), b.clone());
        let (ia, ib) = (id.clone(), id.clone());
        let (wa, wb) = race(
            claim_wins(sa, ia, ExecutionStatus::Running, "A", 1000, 11),
            claim_wins(sb, ib, ExecutionStatus::Running, "B", 1000, 11),
        )
        .await;
        assert!(wa ^ wb, "{id}: A {wa}, B {wb}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_opening_a_new_database_at_once_migrate_it_once() {
    let Some(db) = codemode_postgres::ScratchDatabase::for_tests("concurrent migration")
        .await
        .unwrap()
    else {
        return;
    };
    let opens = (0..4).map(|_| PostgresStore::connect(db.url()));
    for store in futures::future::join_all(opens).await {
        store.unwrap();
    }
    let client = common::raw(db.url()).await;
    let v: i64 = client
        .query_one("SELECT version FROM codemode_schema_version", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(v, codemode_postgres::SCHEMA_VERSION);
}

/// Two nodes inserting and finishing runs at once, each insert pruning past a small `keep`:
/// the prunes never deadlock on the old rows they would both delete, and retention holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_inserts_that_prune_never_deadlock() {
    let (db, a) = setup_or_skip!("concurrent_inserts_that_prune");
    let b = PostgresStore::connect(db.url()).await.unwrap();
    const TASKS: usize = 16;
    const RUNS: usize = 40;
    const KEEP: usize = 5;
    let stores = [a, b];
    let barrier = Arc::new(Barrier::new(TASKS));
    let tasks = (0..TASKS).map(|t| {
        let (store, barrier) = (stores[t % 2].clone(), barrier.clone());
        tokio::spawn(async move {
            barrier.wait().await;
            for r in 0..RUNS {
                let id = format!("p{t}-{r}");
                let at = (r * TASKS + t) as i64;
                store
                    .insert_execution(RT, &execution(&id, at), &lease("n", i64::MAX), KEEP)
                    .await
                    .map_err(|e| format!("inserting {id}: {e}"))?;
                let done = Commit {
                    execution_id: id.clone(),
                    owner: Some("n".into()),
                    entries: vec![],
                    transition: Some(Transition::new(
                        ExecutionStatus::Running,
                        ExecutionStatus::Completed,
                        at,
                    )),
                    clock: None,
                };
                let committed = store.commit(RT, &done).await;
                committed.map_err(|e| format!("completing {id}: {e}"))?;
            }
            Ok::<(), String>(())
        })
    });
    for task in futures::future::join_all(tasks).await {
        task.unwrap().unwrap();
    }
    // The last insert's prune may have been left to another; an explicit prune settles it.
    stores[0].prune_executions(RT, KEEP).await.unwrap();
    let left = stores[0].executions(RT, None, None).await.unwrap();
    assert_eq!(left.len(), KEEP, "terminal executions kept");
}
