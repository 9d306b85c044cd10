//! `--log-format json`: each log line is one JSON object, carrying the execution id it is about.

mod common;

use common::{post, serve};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_are_one_object_a_line_with_the_execution_id() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(
        dir.path(),
        &["--listen", "127.0.0.1:0", "--log-format", "json"],
        &[("CODEMODE_LOG", "info")],
    );
    let c = common::client();
    let (_, outcome) = post(
        &c,
        format!("{}/api/run", server.base),
        json!({ "code": "return 1" }),
    )
    .await;
    let id = outcome["executionId"].as_str().unwrap().to_string();

    // The server logs the run's end once its event is handled: wait for that line.
    let deadline = Instant::now() + Duration::from_secs(20);
    let ended = loop {
        let text = server.stderr.lock().unwrap().clone();
        let lines: Vec<Value> = text
            .lines()
            .filter(|l| l.starts_with('{'))
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
            .collect();
        if let Some(line) = lines
            .iter()
            .find(|l| l["execution_id"] == id.as_str() && l["status"] == "completed")
        {
            break line.clone();
        }
        assert!(Instant::now() < deadline, "no JSON line for {id}:\n{text}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(ended["level"], "INFO", "{ended}");
    assert!(ended["timestamp"].is_string(), "{ended}");
}
