//! Shutting `codemode serve` down: in-flight passes finish, connected MCP clients do not hold
//! the server up, and a second signal exits at once.

mod common;

use common::{cli, serve};
use serde_json::{json, Value};
use std::time::Duration;

/// A pass that keeps the sandbox busy for about `ms` milliseconds, then returns "done".
fn busy(ms: u64) -> String {
    format!("const t = Date.now(); while (Date.now() - t < {ms}) {{}} return 'done';")
}

/// Waits until the server reports a running execution (the pass under test has begun).
fn until_running(base: &str) {
    let mut c = common::KeepAlive::open(base);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let list = c.get("/api/executions");
        if list
            .as_array()
            .is_some_and(|l| l.iter().any(|e| e["status"] == "running"))
        {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "no run began: {list}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn an_in_flight_pass_finishes_before_the_server_exits() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let mut c = common::KeepAlive::open(&server.base);
    let run = std::thread::spawn(move || c.run(&busy(1_500)));
    until_running(&server.base);
    server.signal("TERM");
    let outcome = run.join().unwrap();
    assert_eq!(outcome["status"], "completed", "{outcome}");
    assert_eq!(outcome["result"], "done");
    assert_eq!(server.wait_exit(Duration::from_secs(10)), Some(0));
}

#[tokio::test]
async fn a_connected_mcp_client_does_not_hold_up_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let c = common::client();
    let mcp = format!("{}/mcp", server.base);
    let session = common::mcp_session(&c, &mcp, "shutdown-test").await;
    // The event stream a client keeps open for server messages: it never ends on its own.
    let stream = c
        .get(&mcp)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status().as_u16(), 200);

    server.signal("INT");
    let code = tokio::task::spawn_blocking(move || server.wait_exit(Duration::from_secs(10)))
        .await
        .unwrap();
    assert_eq!(code, Some(0), "the open MCP stream held the server up");
    drop(stream);
}

#[test]
fn a_second_signal_exits_at_once_and_leaves_the_execution_running() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = serve(
        dir.path(),
        &["--listen", "127.0.0.1:0", "--timeout-ms", "60000"],
        &[],
    );
    let mut c = common::KeepAlive::open(&server.base);
    let runaway =
        std::thread::spawn(move || c.post("/api/run", &json!({"code": "while (true) {}"})));
    until_running(&server.base);
    server.signal("INT");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        server.wait_exit(Duration::from_millis(200)),
        None,
        "the first signal waits for the pass"
    );
    server.signal("INT");
    assert_eq!(server.wait_exit(Duration::from_secs(10)), Some(130));
    let stderr = server.stderr.lock().unwrap().clone();
    assert!(stderr.contains("Ctrl-C again exits now"), "{stderr}");
    assert!(stderr.contains("exiting now"), "{stderr}");
    // The client saw its connection close without an answer.
    assert!(runaway.join().is_err());

    let out = cli(dir.path(), &server.db, &["--json", "executions"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list[0]["status"], "running", "{list}");
}
