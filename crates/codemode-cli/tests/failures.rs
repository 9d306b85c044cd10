//! Failures stay local and are reported: a connector that fails to start or loads with
//! warnings leaves the rest serving and shows in `/healthz` and the banner; unknown store
//! schemes are errors; the printed hints work as printed; a closed stdout ends the CLI
//! quietly; no MCP server process outlives `codemode serve`.

mod common;

use common::{cli, serve, BIN};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The MCP test server of `codemode-mcp`, built beside this binary.
fn mcp_test_server() -> PathBuf {
    let status = Command::new(env!("CARGO"))
        .args([
            "build",
            "-q",
            "-p",
            "codemode-mcp",
            "--bin",
            "codemode-mcp-test-server",
        ])
        .status()
        .expect("run cargo");
    assert!(status.success(), "cannot build the MCP test server");
    Path::new(BIN).with_file_name("codemode-mcp-test-server")
}

/// An OpenAPI document whose second operation's body is a reference that leads nowhere.
const BROKEN_SPEC: &str = r##"{
  "openapi": "3.0.3",
  "info": { "title": "Half", "version": "1" },
  "paths": {
    "/a": { "get": { "operationId": "fine", "responses": { "200": { "description": "ok" } } } },
    "/b": { "post": { "operationId": "broken",
      "requestBody": { "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Gone" } } } },
      "responses": { "200": { "description": "ok" } } } }
  }
}"##;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_mcp_command_and_a_broken_operation_leave_the_rest_serving() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("half.json"), BROKEN_SPEC).unwrap();
    std::fs::write(
        dir.path().join("codemode.toml"),
        "demo = true\n\
         [connectors.dead]\ntype = \"mcp\"\ncommand = \"/nonexistent/mcp-server\"\n\
         [connectors.half]\ntype = \"openapi\"\nspec = \"./half.json\"\nbase_url = \"http://127.0.0.1:9\"\n",
    )
    .unwrap();
    let server = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let c = common::client();
    let (status, health) = common::get(&c, format!("{}/healthz", server.base)).await;
    assert_eq!(status, 200);
    assert_eq!(health["ok"], false, "{health}");
    assert_eq!(health["degraded"], true, "{health}");
    assert_eq!(health["failed"][0]["connector"], "dead", "{health}");
    assert!(health["failed"][0]["error"]
        .as_str()
        .unwrap()
        .contains("/nonexistent/mcp-server"));
    assert_eq!(health["warnings"][0]["connector"], "half", "{health}");
    assert!(
        health["warnings"][0]["warning"]
            .as_str()
            .unwrap()
            .contains("broken"),
        "{health}"
    );
    let names = health["connectors"].as_array().unwrap();
    assert!(
        names.contains(&json!("half")) && names.contains(&json!("tasks")),
        "{health}"
    );
    assert!(!names.contains(&json!("dead")), "{health}");

    let (_, listed) = common::post(
        &c,
        format!("{}/api/run", server.base),
        json!({"code": "return [typeof half.fine, 'broken' in half, (await tasks.list_tasks({})).tasks.length]"}),
    )
    .await;
    assert_eq!(listed["status"], "completed", "{listed}");
    assert_eq!(listed["result"], json!(["function", false, 0]), "{listed}");

    // The connector that failed is still a global: its calls, and the tool description, say why.
    let (_, dead) = common::post(
        &c,
        format!("{}/api/run", server.base),
        json!({"code": "return await dead.list_things()"}),
    )
    .await;
    let error = dead["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("Error: connector dead failed to start: ")
            && error.contains("/nonexistent/mcp-server"),
        "{dead}"
    );
    let (_, tool) = common::get(&c, format!("{}/api/tool", server.base)).await;
    let description = tool["description"].as_str().unwrap_or_default();
    assert!(
        description.contains("- dead: unavailable, it failed to start (")
            && description.contains("every call on it throws"),
        "{description}"
    );
}

#[test]
fn the_banner_names_failures_warnings_and_the_configured_connectors() {
    let dir = tempfile::tempdir().unwrap();
    let bin = mcp_test_server();
    let mcp = format!("items={} --bad-schema", bin.display());
    let args = [
        "--listen",
        "127.0.0.1:0",
        "--mcp",
        &mcp,
        "--mcp",
        "dead=/nonexistent/mcp-server",
    ];
    let server = serve(dir.path(), &args, &[]);
    let deadline = Instant::now() + Duration::from_secs(10);
    let banner = loop {
        let text = server.stderr.lock().unwrap().clone();
        if text.contains(" pending") || Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(banner.contains("connector dead FAILED"), "{banner}");
    assert!(banner.contains("connector items warning"), "{banner}");
    assert!(
        banner.contains("connectors:") && banner.contains("items"),
        "{banner}"
    );
    assert!(
        !banner.contains("tasks."),
        "the demo is not loaded: {banner}"
    );
    // The example line runs as printed, against this server.
    let line = banner
        .lines()
        .find(|l| l.contains(" run -e "))
        .unwrap()
        .trim();
    let ran = Command::new("sh")
        .arg("-c")
        .arg(line)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        ran.status.success(),
        "{line}: {}",
        String::from_utf8_lossy(&ran.stderr)
    );
    assert!(
        String::from_utf8_lossy(&ran.stdout).starts_with("completed"),
        "{line}"
    );
}

#[test]
fn unknown_store_schemes_are_errors_naming_the_accepted_forms() {
    let dir = tempfile::tempdir().unwrap();
    for store in ["mysql://u@h/db", "redis:x"] {
        let out = Command::new(BIN)
            .current_dir(dir.path())
            .args(["--store", store, "executions"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{store} was accepted");
        assert!(
            err.contains("unknown store scheme") && err.contains("postgres://"),
            "{err}"
        );
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "a store file was created"
    );
    let out = Command::new(BIN)
        .current_dir(dir.path())
        .args(["-v", "executions"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("created a new store") && err.contains("codemode.db"),
        "{err}"
    );
    assert!(err.contains("using --store sqlite:"), "{err}");
}

#[test]
fn the_printed_approve_line_works_as_printed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("my store.db");
    let out = cli(
        dir.path(),
        &db,
        &[
            "--demo",
            "run",
            "-e",
            "return await tasks.create_task({ title: 'hinted' })",
        ],
    );
    assert_eq!(out.status.code(), Some(3));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("approve: "))
        .expect("an approve line");
    assert!(!line.contains("{id}") && !line.contains("SEQ"), "{line}");
    let other = tempfile::tempdir().unwrap();
    let ran = Command::new("sh")
        .arg("-c")
        .arg(line)
        .current_dir(other.path())
        .output()
        .unwrap();
    assert!(
        ran.status.success(),
        "{line}: {}",
        String::from_utf8_lossy(&ran.stderr)
    );
    assert!(
        String::from_utf8_lossy(&ran.stdout).contains("hinted"),
        "{line}"
    );
}

#[test]
fn a_reader_that_closes_early_ends_the_cli_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new("bash")
        .arg("-c")
        .arg(format!("'{BIN}' --store sqlite:./s.db --demo types | head -c 10 >/dev/null; exit ${{PIPESTATUS[0]}}"))
        .current_dir(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&status.stderr);
    assert_eq!(status.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Whether `pid` is still a live process (a zombie counts as gone).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_mcp_server_process_outlives_serve() {
    let bin = mcp_test_server();
    for signals in [&["TERM"][..], &["INT"][..]] {
        let dir = tempfile::tempdir().unwrap();
        let mcp = format!("items={} --spawn-child", bin.display());
        let mut server = serve(dir.path(), &["--listen", "127.0.0.1:0", "--mcp", &mcp], &[]);
        let c = common::client();
        let code = "return [await items.pid({}), await items.child_pid({})]";
        let (_, out) = common::post(
            &c,
            format!("{}/api/run", server.base),
            json!({"code": code}),
        )
        .await;
        assert_eq!(out["status"], "completed", "{out}");
        let pids: Vec<u32> = out["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| text_of(v).trim().parse().unwrap())
            .collect();
        assert!(pids.iter().all(|&p| alive(p)), "{pids:?}");
        for s in signals {
            server.signal(s);
        }
        assert_eq!(server.wait_exit(Duration::from_secs(10)), Some(0));
        let deadline = Instant::now() + Duration::from_secs(1);
        while pids.iter().any(|&p| alive(p)) {
            assert!(
                Instant::now() < deadline,
                "left running after {signals:?}: {pids:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_error_a_client_sees_is_json_with_its_status() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let c = common::client();
    let base = &server.base;
    let table: [(&str, String, u16); 7] = [
        ("GET", format!("{base}/no/such/route"), 404),
        ("GET", format!("{base}/api/no-such-route"), 404),
        ("DELETE", format!("{base}/healthz"), 405),
        ("GET", format!("{base}/api/run"), 405),
        ("GET", format!("{base}/api/executions?limit=-1"), 400),
        ("GET", format!("{base}/api/executions?limit=x"), 400),
        ("POST", format!("{base}/api/executions/nope/resume"), 404),
    ];
    for (method, url, want) in table {
        let r = c
            .request(method.parse().unwrap(), &url)
            .header("content-type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let body: Value = r.json().await.unwrap_or(Value::Null);
        assert_eq!(status, want, "{method} {url}: {body}");
        assert!(
            body["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{method} {url}: {body}"
        );
    }
}

#[test]
fn an_mcp_command_is_split_as_a_shell_would() {
    let dir = tempfile::tempdir().unwrap();
    let spaced = dir.path().join("a folder");
    std::fs::create_dir(&spaced).unwrap();
    let bin = spaced.join("mcp server");
    std::fs::copy(mcp_test_server(), &bin).unwrap();
    let db = dir.path().join("codemode.db");
    let flag = format!("items='{}'", bin.display());
    let out = cli(
        dir.path(),
        &db,
        &["run", "--mcp", &flag, "-e", "return typeof items"],
    );
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{flag}: {stderr}");
    assert!(stdout.contains("object"), "{flag}: {stdout}");

    let out = cli(
        dir.path(),
        &db,
        &["run", "--mcp", "items='unclosed", "-e", "return 1"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("--mcp items=") && stderr.contains("close every quote"),
        "{stderr}"
    );
}

#[test]
fn the_largest_timeout_is_far_away_not_a_wrapped_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("codemode.db");
    let max = u64::MAX.to_string();
    for isolation in ["process", "thread"] {
        std::fs::write(
            dir.path().join("codemode.toml"),
            format!("[sandbox]\nisolation = \"{isolation}\"\n"),
        )
        .unwrap();
        let out = cli(
            dir.path(),
            &db,
            &["run", "--timeout-ms", &max, "-e", "return 6 * 7"],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{isolation}: {stderr}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("42"), "{isolation}: {stdout}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_limit_is_checked_alike_on_both_paged_routes() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let c = common::client();
    for (route, max) in [("executions", 500), ("pending", 1000)] {
        for bad in ["0", "-1", "x", "1.5", ""] {
            let url = format!("{}/api/{route}?limit={bad}", server.base);
            let (status, body) = common::get(&c, url.clone()).await;
            assert_eq!(status, 400, "{url}: {body}");
            let error = body["error"].as_str().unwrap_or_default();
            assert!(
                error.contains(&format!("from 1 to {max}")) && error.contains("Link header"),
                "{url}: {body}"
            );
        }
        // A huge page is cut to the largest one, not refused or wrapped.
        let url = format!("{}/api/{route}?limit=1000000000000", server.base);
        let (status, body) = common::get(&c, url.clone()).await;
        assert_eq!(status, 200, "{url}: {body}");
        assert!(body.is_array(), "{url}: {body}");
    }
}
