//! Runs every scenario file against the SQLite store on a real file.

use codemode_conformance::{run_scenario, Scenario};
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scenario_holds_on_sqlite() {
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
    let tmp = tempfile::tempdir().unwrap();
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
        // A file per scenario: no case sees another's history.
        let path = tmp.path().join(format!("{i}.db"));
        let store = Arc::new(codemode_sqlite::SqliteStore::open(&path).unwrap());
        match run_scenario(&scenario, store, "conformance").await {
            Ok(()) => println!("ok   {name}"),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} scenario(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
