//! Runs every scenario file against the PostgreSQL store: one scratch database for the run,
//! a runtime name per scenario so that no case sees another's history.
//!
//! Without a server (and without `CI`) it prints a loud SKIPPED line; with `CI` set an
//! unreachable server fails the test.

use codemode::Store;
use codemode_postgres::{PostgresStore, ScratchDatabase};
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scenario_holds_on_postgres() {
    let Some(db) = ScratchDatabase::for_tests("every_scenario_holds_on_postgres")
        .await
        .expect("the PostgreSQL test server")
    else {
        return;
    };
    let store = Arc::new(PostgresStore::connect(db.url()).await.expect("connect"));
    let shared = store.clone();
    let failures = codemode_conformance::run_all("postgres", move |_| {
        let s = shared.clone();
        async move { s as Arc<dyn Store> }
    })
    .await;
    store.close();
    assert!(
        failures.is_empty(),
        "{} scenario(s) failed on PostgreSQL:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
