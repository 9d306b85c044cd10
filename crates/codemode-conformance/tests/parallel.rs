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

/// As the reference (0.5.5) has it: a call still in flight when the code settles is finished
/// by the host and recorded, and the code never sees its result, so a continuation chained on
/// it never runs; the outcome names the call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_the_code_does_not_await_finishes_and_its_continuation_never_runs() {
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
    let done = runtime.call(code).await.unwrap();
    let Outcome::Completed { result, logs, .. } = &done else {
        panic!("{done:?}");
    };
    assert_eq!(*result, serde_json::json!(5));
    assert_eq!(logs.len(), 1, "{logs:?}");
    assert!(
        logs[0].contains("before 1 call it made had answered it: shop.get_item at seq 0"),
        "{logs:?}"
    );
    let log = runtime
        .execution(done.execution_id())
        .await
        .unwrap()
        .unwrap()
        .log;
    let recorded: Vec<(&str, codemode::EntryState)> =
        log.iter().map(|e| (e.method.as_str(), e.state)).collect();
    assert_eq!(recorded, [("get_item", codemode::EntryState::Applied)]);
    assert!(
        shop.writes().is_empty(),
        "the continuation ran: {:?}",
        shop.writes()
    );
}
