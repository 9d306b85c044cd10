//! Waiting in the call: over MCP (the official TypeScript SDK client, no elicitation) a paused
//! run waits for an approval made through the API and returns the outcome in the same call;
//! `{executionId}` picks a run up without running it again. Over HTTP: `run?wait_ms`, cancel,
//! and approve with edited arguments or a standing scope. Skipped (with a message) when node
//! or the fixtures are not installed.

mod common;

use common::{client, get, post, serve};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Starts the waiting MCP client on `calls`; its stdout lines arrive on the receiver.
fn start_client(
    fx: &Path,
    url: &str,
    calls: &[Value],
) -> (std::process::Child, mpsc::Receiver<String>) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/js/mcp_wait.mjs");
    let mut child = Command::new("node")
        .arg(script)
        .arg(fx)
        .arg(url)
        .arg("--")
        .args(calls.iter().map(Value::to_string))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("run node");
    let (tx, rx) = mpsc::channel();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    (child, rx)
}

/// The next line of the client starting with `prefix`, within `limit`.
fn line_with(rx: &mpsc::Receiver<String>, prefix: &str, limit: Duration) -> String {
    let until = Instant::now() + limit;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) if line.starts_with(prefix) => return line,
            Ok(_) => continue,
            Err(e) => panic!("no line starting with {prefix:?} within {limit:?}: {e}"),
        }
    }
}

const WRITE: &str = "const t = await tasks.create_task({ title: 'waited' }); return t.title;";

/// A server in a fresh directory whose config waits `wait_ms` for decisions (see
/// [`config`]); the directory lives as long as the caller keeps it.
fn serve_waiting(wait_ms: u64) -> (tempfile::TempDir, common::Server) {
    let dir = tempfile::tempdir().unwrap();
    config(dir.path(), wait_ms);
    let server = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    (dir, server)
}

fn config(dir: &Path, wait_ms: u64) {
    let text = format!("[approvals]\nelicitation = false\nwait_ms = {wait_ms}\n");
    std::fs::write(dir.join("codemode.toml"), text).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_paused_tool_call_waits_for_an_approval_and_returns_the_outcome() {
    let Some(fx) = common::fixtures() else { return };
    let (_dir, server) = serve_waiting(30_000);
    let http = client();
    let url = format!("{}/mcp", server.base);
    let (mut node, rx) = start_client(&fx, &url, &[json!({ "code": WRITE })]);

    // The call is waiting: it reports what it waits for, and the run is paused.
    let first = line_with(&rx, "PROGRESS ", Duration::from_secs(30));
    assert!(
        first.contains("waiting for approval of tasks.create_task"),
        "{first}"
    );
    let (status, pending) = get(&http, format!("{}/api/pending", server.base)).await;
    assert_eq!(status, 200);
    let id = pending[0]["executionId"]
        .as_str()
        .expect("a pending action")
        .to_string();

    // Someone approves through the API; the original call returns the completed outcome.
    let (status, approved) = post(
        &http,
        format!("{}/api/executions/{id}/approve", server.base),
        json!({}),
    )
    .await;
    assert_eq!(status, 200, "{approved}");
    let done: Value = serde_json::from_str(&line_with(&rx, "{", Duration::from_secs(30))).unwrap();
    assert!(node.wait().unwrap().success());
    let call = &done["results"][0];
    assert_eq!(call["structuredContent"]["status"], "completed", "{call}");
    assert_eq!(call["structuredContent"]["result"], "waited");
    assert_eq!(call["structuredContent"]["executionId"], id.as_str());
    assert!(!done["progress"].as_array().unwrap().is_empty());

    // The tool takes `executionId` instead of code.
    let schema = &done["tools"][0]["inputSchema"];
    assert_eq!(
        schema["properties"]["executionId"]["type"], "string",
        "{schema}"
    );
    assert!(schema["required"].is_null(), "{schema}");

    // Picking the run up by id returns the same outcome and runs nothing again; an unknown
    // id is a tool error.
    let (mut node, rx) = start_client(
        &fx,
        &url,
        &[
            json!({ "executionId": id }),
            json!({ "executionId": "no-such-run" }),
        ],
    );
    let again: Value = serde_json::from_str(&line_with(&rx, "{", Duration::from_secs(30))).unwrap();
    assert!(node.wait().unwrap().success());
    let same = &again["results"][0]["structuredContent"];
    assert_eq!(same["status"], "completed", "{again}");
    assert_eq!(same["result"], "waited");
    assert_eq!(same["executionId"], id.as_str());
    let unknown = &again["results"][1];
    assert_eq!(unknown["isError"], true, "{unknown}");
    assert!(unknown["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("no-such-run"));
    let (_, list) = get(&http, format!("{}/api/executions", server.base)).await;
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    let (_, tasks) = post(
        &http,
        format!("{}/api/run", server.base),
        json!({"code": "return (await tasks.list_tasks({})).tasks.length"}),
    )
    .await;
    assert_eq!(tasks["result"], 1, "the task was created once: {tasks}");
}

#[tokio::test(flavor = "multi_thread")]
async fn past_the_wait_the_call_returns_paused_saying_how_to_continue() {
    let Some(fx) = common::fixtures() else { return };
    let (_dir, server) = serve_waiting(300);
    let url = format!("{}/mcp", server.base);
    let (mut node, rx) = start_client(&fx, &url, &[json!({ "code": WRITE })]);
    let done: Value = serde_json::from_str(&line_with(&rx, "{", Duration::from_secs(30))).unwrap();
    assert!(node.wait().unwrap().success());
    let call = &done["results"][0];
    assert_eq!(call["structuredContent"]["status"], "paused", "{call}");
    let id = call["structuredContent"]["executionId"].as_str().unwrap();
    let text = call["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains(&format!("{{\"executionId\": \"{id}\"}}")),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn http_run_waits_and_approve_checks_edited_arguments_and_scope_and_cancel_refuses_finished_runs(
) {
    let (_dir, server) = serve_waiting(200);
    let http = client();
    let base = &server.base;
    // wait_ms is clamped to approvals.wait_ms (200 ms): nobody decides, so it answers paused.
    let started = Instant::now();
    let (status, paused) = post(
        &http,
        format!("{base}/api/run?wait_ms=60000"),
        json!({ "code": WRITE }),
    )
    .await;
    assert_eq!(status, 200, "{paused}");
    assert_eq!(paused["status"], "paused", "{paused}");
    assert!(started.elapsed() < Duration::from_secs(20));
    let id = paused["executionId"].as_str().unwrap();
    let approve = format!("{base}/api/executions/{id}/approve");

    let (status, bad) = post(&http, approve.clone(), json!({ "args": { "title": 5 } })).await;
    assert_eq!(status, 400, "{bad}");
    assert!(bad["error"].as_str().unwrap().contains("title"), "{bad}");
    let standing = json!({ "scope": "execution", "methods": ["tasks.list_tasks"] });
    let (status, bad) = post(&http, approve.clone(), standing).await;
    assert_eq!(status, 400, "{bad}");
    assert!(
        bad["error"].as_str().unwrap().contains("tasks.list_tasks"),
        "{bad}"
    );
    let (status, _) = post(
        &http,
        format!("{base}/api/executions/{id}/cancel"),
        json!({}),
    )
    .await;
    assert_eq!(status, 409, "a paused run is rejected, not cancelled");

    // Nothing ran on the refusals; the edited arguments are what runs.
    let edited = json!({ "args": { "title": "edited" }, "scope": "execution" });
    let (status, done) = post(&http, approve, edited).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"], "edited");
    let (status, refused) = post(
        &http,
        format!("{base}/api/executions/{id}/cancel"),
        json!({}),
    )
    .await;
    assert_eq!(status, 409, "{refused}");
    let (status, _) = post(
        &http,
        format!("{base}/api/executions/nope/cancel"),
        json!({}),
    )
    .await;
    assert_eq!(status, 404);
}

/// A result picked up by `executionId` is cut to the model's budget like the first call's,
/// and kept whole in the workspace under the name its last log line gives.
#[tokio::test(flavor = "multi_thread")]
async fn a_picked_up_result_is_cut_to_the_budget_and_kept_whole() {
    let Some(fx) = common::fixtures() else { return };
    let (_dir, server) = serve_waiting(1_000);
    let http = client();
    let base = &server.base;
    let code = "return Array.from({ length: 3000 }, (_, i) => ({ id: i, name: 'item ' + i }))";
    let (status, ran) = post(&http, format!("{base}/api/run"), json!({ "code": code })).await;
    assert_eq!(status, 200, "{ran}");
    let id = ran["executionId"].as_str().unwrap().to_string();
    let whole = ran["result"].to_string().len();
    assert!(
        whole > 24_000 * 2,
        "the result is larger than the budget: {whole}"
    );

    let url = format!("{base}/mcp");
    let (mut node, rx) = start_client(&fx, &url, &[json!({ "executionId": id })]);
    let done: Value = serde_json::from_str(&line_with(&rx, "{", Duration::from_secs(30))).unwrap();
    assert!(node.wait().unwrap().success());
    let picked = &done["results"][0]["structuredContent"];
    assert_eq!(picked["status"], "completed", "{picked}");
    let cut = picked["result"].to_string().len();
    assert!(cut < whole / 2, "cut to the budget: {cut} of {whole}");
    let saved = format!("/results/{id}.json");
    let last = picked["logs"].as_array().unwrap().last().unwrap();
    assert!(last.as_str().unwrap().contains(&saved), "{last}");
    let (status, file) = get(
        &http,
        format!("{base}/api/workspace/default/file?path={saved}"),
    )
    .await;
    assert_eq!(status, 200, "{file}");
    let text = file["content"].as_str().unwrap_or_default();
    let kept: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    assert_eq!(kept, ran["result"], "the whole result is in the workspace");
}

/// A result returned after the call waited for an approval is cut to the model's budget like
/// the first call's, and kept whole in the workspace under the name its last log line gives.
#[tokio::test(flavor = "multi_thread")]
async fn a_result_after_waiting_for_approval_is_cut_to_the_budget_and_kept_whole() {
    let Some(fx) = common::fixtures() else { return };
    let (_dir, server) = serve_waiting(30_000);
    let http = client();
    let base = &server.base;
    let code = "await tasks.create_task({ title: 'big' }); \
                return Array.from({ length: 3000 }, (_, i) => ({ id: i, name: 'item ' + i }));";
    let (mut node, rx) = start_client(&fx, &format!("{base}/mcp"), &[json!({ "code": code })]);
    let waiting = line_with(&rx, "PROGRESS ", Duration::from_secs(30));
    assert!(waiting.contains("tasks.create_task"), "{waiting}");
    let (status, pending) = get(&http, format!("{base}/api/pending")).await;
    assert_eq!(status, 200);
    let id = pending[0]["executionId"].as_str().unwrap().to_string();
    let (status, approved) = post(
        &http,
        format!("{base}/api/executions/{id}/approve"),
        json!({}),
    )
    .await;
    assert_eq!(status, 200, "{approved}");

    let done: Value = serde_json::from_str(&line_with(&rx, "{", Duration::from_secs(30))).unwrap();
    assert!(node.wait().unwrap().success());
    let answer = &done["results"][0]["structuredContent"];
    assert_eq!(answer["status"], "completed", "{answer}");
    let (status, record) = get(&http, format!("{base}/api/executions/{id}")).await;
    assert_eq!(status, 200, "{record}");
    let whole = record["result"].to_string().len();
    let cut = answer["result"].to_string().len();
    assert!(
        whole > 24_000 * 2,
        "the result is larger than the budget: {whole}"
    );
    assert!(cut < whole / 2, "cut to the budget: {cut} of {whole}");
    let saved = format!("/results/{id}.json");
    let last = answer["logs"].as_array().unwrap().last().unwrap();
    assert!(last.as_str().unwrap().contains(&saved), "{last}");
    let (status, file) = get(
        &http,
        format!("{base}/api/workspace/default/file?path={saved}"),
    )
    .await;
    assert_eq!(status, 200, "{file}");
    let kept: Value =
        serde_json::from_str(file["content"].as_str().unwrap_or_default()).unwrap_or(Value::Null);
    assert_eq!(
        kept, record["result"],
        "the whole result is in the workspace"
    );
}

/// `limits.max_result_tokens` is the budget of MCP results: a first call's result of about
/// 12,000 characters, within the default budget (24,000), is cut under a budget of 500 tokens.
#[tokio::test(flavor = "multi_thread")]
async fn limits_max_result_tokens_sets_the_budget_of_mcp_results() {
    let Some(fx) = common::fixtures() else { return };
    let dir = tempfile::tempdir().unwrap();
    let text = "[approvals]\nelicitation = false\n[limits]\nmax_result_tokens = 500\n";
    std::fs::write(dir.path().join("codemode.toml"), text).unwrap();
    let server = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let code = "return Array.from({ length: 500 }, (_, i) => ({ id: i, name: 'item ' + i }))";
    let url = format!("{}/mcp", server.base);
    let (mut node, rx) = start_client(&fx, &url, &[json!({ "code": code })]);
    let done: Value = serde_json::from_str(&line_with(&rx, "{", Duration::from_secs(30))).unwrap();
    assert!(node.wait().unwrap().success());
    let answer = &done["results"][0]["structuredContent"];
    assert_eq!(answer["status"], "completed", "{answer}");
    let cut = answer["result"].to_string().len();
    assert!(cut <= 2_000, "cut to 500 tokens (2,000 characters): {cut}");
    let last = answer["logs"].as_array().unwrap().last().unwrap();
    let id = answer["executionId"].as_str().unwrap();
    assert!(
        last.as_str()
            .unwrap()
            .contains(&format!("/results/{id}.json")),
        "{last}"
    );
}

/// An MCP client that cancels its tool call (`notifications/cancelled`) while the code spins
/// in a loop that calls nothing: the execution ends `cancelled` at once (not at the
/// wall-time limit), with the call it made before kept in its log.
#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_client_cancel_stops_a_loop_that_calls_nothing() {
    let Some(fx) = common::fixtures() else { return };
    let (_dir, server) = serve_waiting(30_000);
    let http = client();
    let base = &server.base;
    let code = "await tasks.list_tasks({}); for (;;) {}";
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/js/mcp_cancel.mjs");
    let started = Instant::now();
    let out = Command::new("node")
        .arg(script)
        .arg(&fx)
        .arg(format!("{base}/mcp"))
        .arg("1000")
        .arg(code)
        .stderr(Stdio::inherit())
        .output()
        .expect("run node");
    assert!(out.status.success());
    let line: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(line["aborted"], true, "{line}");
    let until = Instant::now() + Duration::from_secs(10);
    let execution = loop {
        let (_, list) = get(&http, format!("{base}/api/executions")).await;
        let e = list[0].clone();
        if e["status"] != "running" {
            break e;
        }
        assert!(Instant::now() < until, "still running: {e}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(execution["status"], "cancelled", "{execution}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    let (_, e) = get(
        &http,
        format!(
            "{base}/api/executions/{}",
            execution["id"].as_str().unwrap()
        ),
    )
    .await;
    assert_eq!(e["log"].as_array().unwrap().len(), 1, "{e}");
    assert_eq!(e["decisions"][0]["kind"], "cancel", "{e}");
}

/// While the code runs, the calling client gets progress notifications of its calls and
/// console lines as they happen, in order, with increasing progress values.
#[tokio::test(flavor = "multi_thread")]
async fn a_running_call_reports_its_calls_and_console_lines_as_progress() {
    let Some(fx) = common::fixtures() else { return };
    let (_dir, server) = serve_waiting(30_000);
    let code = "await tasks.list_tasks({}); console.log('half way'); const t = Date.now(); while (Date.now() - t < 1500) {} await tasks.list_tasks({}); return 2";
    let (mut node, rx) = start_client(
        &fx,
        &format!("{}/mcp", server.base),
        &[json!({ "code": code })],
    );
    // Both arrive while the code still spins, before the result.
    let mut seen = String::new();
    while !(seen.contains("tasks.list_tasks done in") && seen.contains("console: half way")) {
        let line = line_with(&rx, "", Duration::from_secs(30));
        assert!(
            line.starts_with("PROGRESS "),
            "the result came first: {line}\n{seen}"
        );
        seen.push_str(&line);
        seen.push('\n');
    }
    assert!(
        seen.find("list_tasks started (#0)").unwrap() < seen.find("console: half way").unwrap(),
        "{seen}"
    );
    let done: Value = serde_json::from_str(&line_with(&rx, "{", Duration::from_secs(30))).unwrap();
    assert!(node.wait().unwrap().success());
    assert_eq!(done["results"][0]["structuredContent"]["result"], 2);
    let values: Vec<f64> = done["progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["progress"].as_f64().unwrap())
        .collect();
    assert!(values.windows(2).all(|w| w[0] < w[1]), "{values:?}");
    let all = done["progress"].to_string();
    assert!(
        all.contains("(#1)"),
        "the second call is reported too: {all}"
    );
}
