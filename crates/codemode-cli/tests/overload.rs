//! Load beyond capacity: runs past `limits.max_running` wait in a line of `limits.max_queued`,
//! and past that are refused at once with 503 and `Retry-After`; a client that goes away
//! mid-run leaves nothing running past the pass's time limit.

mod common;

use common::{serve, KeepAlive};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Starts `codemode serve` in `dir` with these `[limits]`.
fn serve_with_limits(dir: &std::path::Path, limits: &str) -> common::Server {
    std::fs::write(dir.join("codemode.toml"), format!("[limits]\n{limits}\n")).unwrap();
    serve(dir, &["--listen", "127.0.0.1:0"], &[])
}

/// The executions the server reports as running.
fn running(base: &str) -> Vec<Value> {
    let list = KeepAlive::open(base).get("/api/executions");
    list.as_array()
        .map(|l| {
            l.iter()
                .filter(|e| e["status"] == "running")
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// Waits until the server reports a running execution, and returns it.
fn until_running(base: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(e) = running(base).into_iter().next() {
            return e;
        }
        assert!(Instant::now() < deadline, "no run began");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// `POST /api/run {code}` on a new connection, closed after the answer: the status line and
/// headers (lower-cased) and the JSON body.
fn run_raw(base: &str, code: &str) -> (String, Value) {
    let host = base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(host).unwrap();
    let body = serde_json::json!({ "code": code }).to_string();
    let request = format!(
        "POST /api/run HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    (
        head.to_ascii_lowercase(),
        serde_json::from_str(body).unwrap_or(Value::Null),
    )
}

#[test]
fn past_the_running_runs_and_the_line_a_run_is_refused_with_retry_after() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve_with_limits(
        dir.path(),
        "max_running = 1\nmax_queued = 0\ntimeout_ms = 1500",
    );
    let mut first = KeepAlive::open(&server.base);
    let runaway = std::thread::spawn(move || first.run("while (true) {}"));
    until_running(&server.base);

    let (head, body) = run_raw(&server.base, "return 1");
    assert!(head.starts_with("http/1.1 503"), "{head}");
    assert!(head.contains("\r\nretry-after: 1"), "{head}");
    let error = body["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("limits.max_running") && error.contains("nothing was run"),
        "{body}"
    );
    let executions = KeepAlive::open(&server.base).get("/api/executions");
    assert_eq!(
        executions.as_array().map(Vec::len),
        Some(1),
        "a refused run leaves no execution: {executions}"
    );

    let outcome = runaway.join().unwrap();
    assert_eq!(outcome["status"], "error", "{outcome}");
    // The place is free again.
    let after = KeepAlive::open(&server.base).run("return 2");
    assert_eq!(after["status"], "completed", "{after}");
    assert_eq!(after["result"], 2);
}

#[test]
fn a_run_waits_in_line_for_a_place_and_then_runs() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve_with_limits(
        dir.path(),
        "max_running = 1\nmax_queued = 4\ntimeout_ms = 1000",
    );
    let mut first = KeepAlive::open(&server.base);
    let runaway = std::thread::spawn(move || first.run("while (true) {}"));
    until_running(&server.base);
    let mut second = KeepAlive::open(&server.base);
    let queued = second.run("return 'after the line'");
    assert_eq!(queued["status"], "completed", "{queued}");
    assert_eq!(queued["result"], "after the line");
    assert_eq!(runaway.join().unwrap()["status"], "error");
}

#[test]
fn a_client_that_goes_away_mid_run_leaves_nothing_running_past_the_time_limit() {
    let dir = tempfile::tempdir().unwrap();
    let limit_ms = 1_000;
    let server = serve_with_limits(
        dir.path(),
        &format!("max_running = 1\ntimeout_ms = {limit_ms}"),
    );
    let host = server.base.trim_start_matches("http://").to_string();
    let mut stream = TcpStream::connect(&host).unwrap();
    let body =
        serde_json::json!({ "code": "await tasks.list_tasks({}); while (true) {}" }).to_string();
    let request = format!(
        "POST /api/run HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let execution = until_running(&server.base);
    drop(stream);

    let id = execution["id"].as_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_millis(limit_ms) + Duration::from_secs(10);
    let ended = loop {
        let e = KeepAlive::open(&server.base).get(&format!("/api/executions/{id}"));
        if e["status"] != "running" {
            break e;
        }
        assert!(Instant::now() < deadline, "the run is still running: {e}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(ended["status"], "error", "{ended}");
    let error = ended["error"].as_str().unwrap_or_default();
    assert!(error.contains("Time limit"), "{ended}");
    let ran_for = ended["updatedAt"].as_i64().unwrap() - ended["createdAt"].as_i64().unwrap();
    assert!(
        ran_for < limit_ms as i64 + 1_000,
        "the pass ran {ran_for} ms, past its {limit_ms} ms limit"
    );
    assert!(running(&server.base).is_empty());
    // Its place was given back.
    let after = KeepAlive::open(&server.base).run("return 3");
    assert_eq!(after["status"], "completed", "{after}");
}
