//! Runs every scenario file against the PostgreSQL store: one scratch database for the run,
//! a runtime name per scenario so that no case sees another's history.
//!
//! Without a server (and without `CI`) it prints a loud SKIPPED line; with `CI` set an
//! unreachable server fails the test.

use codemode_conformance::{run_scenario, Scenario};
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
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 25,
        "expected the whole suite, found {} files",
        files.len()
    );
    let mut failures = Vec::new();
    for (i, file) in files.iter().enumerate() {
        let name = file.file_stem().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(file).unwrap();
        let scenario: Scenario = match toml::from_str(&text) {
            Ok(s) => s,
            Err(e) => {
                failures.push(format!("{name}: does not parse: {e}"));
                continue;
            }
        };
        let runtime = format!("conformance-{i}");
        match run_scenario(&scenario, store.clone(), &runtime).await {
            Ok(()) => println!("ok   {name} (postgres)"),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    store.close();
    assert!(
        failures.is_empty(),
        "{} scenario(s) failed on PostgreSQL:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
