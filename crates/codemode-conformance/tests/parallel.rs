//! Parallel calls replay exactly: every program of `codemode_conformance::parallel` under
//! `CODEMODE_SEEDS` delay seeds (default 50), on SQLite and on PostgreSQL.

use codemode::Store;
use codemode_conformance::parallel::{run_seed, seeds};
use std::sync::Arc;

fn executor() -> Arc<dyn codemode::Executor> {
    Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default()))
}

async fn every_seed(store: Arc<dyn Store>, what: &str) {
    let executor = executor();
    let mut failures = Vec::new();
    for seed in 0..seeds(50) {
        failures.extend(
            run_seed(
                store.clone(),
                executor.clone(),
                &format!("{what}-{seed}"),
                seed,
            )
            .await,
        );
    }
    assert!(
        failures.is_empty(),
        "{} failure(s) on {what}:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_calls_replay_exactly_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = codemode_sqlite::SqliteStore::open(dir.path().join("codemode.db")).unwrap();
    every_seed(Arc::new(store), "sqlite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_calls_replay_exactly_on_postgres() {
    let Some(db) = codemode_postgres::ScratchDatabase::for_tests("parallel_calls_replay_exactly")
        .await
        .expect("the PostgreSQL test server")
    else {
        return;
    };
    let store = Arc::new(
        codemode_postgres::PostgresStore::connect(db.url())
            .await
            .expect("connect"),
    );
    every_seed(store.clone(), "postgres").await;
    store.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_the_code_does_not_await_still_runs_before_the_pass_ends() {
    use codemode::Outcome;
    use codemode_conformance::parallel::Shop;
    let dir = tempfile::tempdir().unwrap();
    let store = codemode_sqlite::SqliteStore::open(dir.path().join("codemode.db")).unwrap();
    let shop = Shop::new(3, 4);
    let runtime = codemode::Runtime::builder(Arc::new(store), executor())
        .connector(shop.connector())
        .build()
        .unwrap();
    let code =
        "shop.get_item({ id: 1 }).then((a) => shop.set_item({ id: a.next, value: 1 })); return 5;";
    let live = runtime.call(code).await.unwrap();
    let Outcome::Paused {
        execution_id,
        pending,
    } = &live
    else {
        panic!("the unawaited write was dropped: {live:?}");
    };
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].args["id"], serde_json::json!(10));
    let done = runtime.approve(execution_id).await.unwrap();
    assert!(
        matches!(&done, Outcome::Completed { result, .. } if *result == serde_json::json!(5)),
        "{done:?}"
    );
    assert_eq!(shop.writes().values().copied().collect::<Vec<_>>(), vec![1]);
}
