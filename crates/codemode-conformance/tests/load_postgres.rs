//! The two-node load test: a separate driver process (`pg-load`) starts executions on two
//! node processes (`pg-node listen`) sharing one PostgreSQL database and approves each one
//! on the node that did not start it. Nothing approved may be lost, nothing applied twice.

use codemode_postgres::ScratchDatabase;
use serde_json::Value;
use std::process::Command;

const LOAD: &str = env!("CARGO_BIN_EXE_pg-load");
const NODE: &str = env!("CARGO_BIN_EXE_pg-node");
const EXECUTIONS: usize = 200;
const CONCURRENCY: usize = 16;

/// Runs `pg-load` on `url`; its exit status and its `result` line.
async fn load(
    url: &str,
    executions: usize,
    concurrency: usize,
    fault: Option<&str>,
) -> (bool, Value) {
    let mut command = Command::new(LOAD);
    command
        .args(["--url", url, "--node", NODE])
        .args(["--executions", &executions.to_string()])
        .args(["--concurrency", &concurrency.to_string()]);
    if let Some(fault) = fault {
        command.env("PG_NODE_FAULT", fault);
    }
    let output = tokio::task::spawn_blocking(move || command.output().expect("run pg-load"))
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&output.stderr));
    let result = stdout
        .lines()
        .find_map(|l| l.strip_prefix("result "))
        .map(|json| serde_json::from_str(json).expect("the result line is JSON"))
        .unwrap_or_else(|| panic!("pg-load printed no result line: {stdout}"));
    (output.status.success(), result)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_under_load_lose_and_double_nothing() {
    let Some(db) = ScratchDatabase::for_tests("two_nodes_under_load")
        .await
        .expect("the PostgreSQL test server")
    else {
        return;
    };
    let (success, result) = load(db.url(), EXECUTIONS, CONCURRENCY, None).await;
    assert_eq!(result["executions"], EXECUTIONS, "{result}");
    assert_eq!(result["approved"], EXECUTIONS, "{result}");
    assert_eq!(result["failures"], 0, "{result}");
    assert_eq!(result["lost"], 0, "approved but never applied: {result}");
    assert_eq!(result["doubled"], 0, "applied twice: {result}");
    assert_eq!(result["stray"], 0, "{result}");
    // The approval went to the other node, and that node ran the action.
    assert_eq!(
        result["applied_on_the_approving_node"], EXECUTIONS,
        "{result}"
    );
    assert!(success, "{result}");
}

/// The counts are not vacuous: a node that never applies, or applies twice, is caught.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_load_test_catches_lost_and_doubled_actions() {
    let Some(db) = ScratchDatabase::for_tests("load_test_catches_faults")
        .await
        .expect("the PostgreSQL test server")
    else {
        return;
    };
    let (success, result) = load(db.url(), 10, 4, Some("lose")).await;
    assert!(!success, "{result}");
    assert_eq!(result["lost"], 10, "{result}");
    assert_eq!(result["doubled"], 0, "{result}");
    let (success, result) = load(db.url(), 10, 4, Some("double")).await;
    assert!(!success, "{result}");
    assert_eq!(result["lost"], 0, "{result}");
    assert_eq!(result["doubled"], 10, "{result}");
}
