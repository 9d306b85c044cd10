//! Runs every scenario file against the SQLite store, a fresh file per scenario.

use codemode::Store;
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scenario_holds_on_sqlite() {
    let tmp = tempfile::tempdir().unwrap();
    let failures = codemode_conformance::run_all("sqlite", |i| {
        let path = tmp.path().join(format!("{i}.db"));
        async move { Arc::new(codemode_sqlite::SqliteStore::open(&path).unwrap()) as Arc<dyn Store> }
    })
    .await;
    assert!(
        failures.is_empty(),
        "{} scenario(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
