//! End-to-end: `codemode serve` and the CLI as child processes on one database.

mod common;

use common::{cli, get, post, serve, BIN};
use serde_json::{json, Value};
use std::process::{Command, Stdio};

#[tokio::test]
async fn pause_over_http_approve_from_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let c = common::client();
    let base = &server.base;

    let (status, health) = get(&c, format!("{base}/healthz")).await;
    assert_eq!(status, 200);
    assert_eq!(health["connectors"], json!(["tasks", "state"]));

    let code = "const t = await tasks.create_task({ title: 'write the report' }); return t.title;";
    let (status, outcome) = post(&c, format!("{base}/api/run"), json!({ "code": code })).await;
    assert_eq!(status, 200, "{outcome}");
    assert_eq!(outcome["status"], "paused", "{outcome}");
    let id = outcome["executionId"].as_str().unwrap().to_string();
    assert_eq!(outcome["pending"][0]["method"], "create_task");

    let (_, pending) = get(&c, format!("{base}/api/pending")).await;
    assert_eq!(pending[0]["executionId"], id.as_str());

    // A second process approves on the same database.
    let out = cli(dir.path(), &server.db, &["--json", "approve", &id]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let approved: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(approved["status"], "completed");
    assert_eq!(approved["result"], "write the report");

    let (status, execution) = get(&c, format!("{base}/api/executions/{id}")).await;
    assert_eq!(status, 200);
    assert_eq!(execution["status"], "completed");
    assert_eq!(execution["log"][0]["state"], "applied");

    // The server sees the task the CLI's approval created.
    let (_, listed) = post(
        &c,
        format!("{base}/api/run"),
        json!({ "code": "return (await tasks.list_tasks({})).tasks.map(t => t.title)" }),
    )
    .await;
    assert_eq!(listed["result"], json!(["write the report"]));

    // Approving again conflicts; unknown ids are 404.
    let (status, body) = post(&c, format!("{base}/api/executions/{id}/approve"), json!({})).await;
    assert_eq!(status, 409, "{body}");
    assert!(body["error"].as_str().unwrap().contains("completed"));
    let (status, body) = get(&c, format!("{base}/api/executions/nope")).await;
    assert_eq!(status, 404);
    assert!(body["error"].is_string());
    let (status, _) = post(&c, format!("{base}/api/executions/nope/approve"), json!({})).await;
    assert_eq!(status, 404);
    let (status, _) = post(
        &c,
        format!("{base}/api/executions/nope/reject"),
        json!({"seq": 0}),
    )
    .await;
    assert_eq!(status, 404);
    let r = c
        .delete(format!("{base}/api/executions/nope"))
        .header("content-type", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);

    // Rollback over HTTP deletes the task.
    let (status, report) = post(
        &c,
        format!("{base}/api/executions/{id}/rollback"),
        json!({}),
    )
    .await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["status"], "rolled_back");
    let out = cli(dir.path(), &server.db, &["show", &id]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("reverted") && text.contains("tasks.create_task"),
        "{text}"
    );
}

#[tokio::test]
async fn bad_bodies_are_json_errors() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("codemode.toml"),
        "[limits]\nmax_body_bytes = 4096\n",
    )
    .unwrap();
    let server = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let c = common::client();
    let base = &server.base;

    let r = c
        .post(format!("{base}/api/run"))
        .header("content-type", "application/json")
        .body("not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    assert!(r.json::<Value>().await.unwrap()["error"].is_string());

    let (status, body) = post(&c, format!("{base}/api/run"), json!({ "code": 42 })).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["error"].as_str().unwrap().contains("code"), "{body}");

    let big = "x".repeat(8 * 1024);
    let (status, body) = post(&c, format!("{base}/api/run"), json!({ "code": big })).await;
    assert_eq!(status, 413, "{body}");

    // Rejecting: wrong seq conflicts, the right one rejects.
    let (_, outcome) = post(
        &c,
        format!("{base}/api/run"),
        json!({ "code": "await tasks.create_task({ title: 'no' })" }),
    )
    .await;
    let id = outcome["executionId"].as_str().unwrap();
    let (status, _) = post(
        &c,
        format!("{base}/api/executions/{id}/reject"),
        json!({"seq": 7}),
    )
    .await;
    assert_eq!(status, 409);
    let (status, body) = post(
        &c,
        format!("{base}/api/executions/{id}/reject"),
        json!({"seq": 0}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (_, e) = get(&c, format!("{base}/api/executions/{id}")).await;
    assert_eq!(e["status"], "rejected");
}

/// A route that ignores its body still reads it, so the connection stays open even when the
/// body arrives after the headers.
#[test]
fn a_body_a_route_ignores_keeps_the_connection_alive() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let mut c = common::KeepAlive::open(&server.base);
    let paused = c.run("return await tasks.create_task({ title: 'late body' })");
    let id = paused["executionId"].as_str().unwrap().to_string();
    for (step, status) in [("approve", "completed"), ("rollback", "rolled_back")] {
        let head = c.head("POST", &format!("/api/executions/{id}/{step}"), Some(2));
        c.write(head.as_bytes()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        c.write(b"{}").unwrap();
        let answer = c.answer().unwrap();
        assert_eq!(answer["status"], status, "{step}: {answer}");
        // The same connection answers the next request.
        let head = c.head("GET", "/healthz", None);
        let health = c.write(head.as_bytes()).and_then(|()| c.answer());
        assert!(health.is_ok(), "{step}: the server closed the connection");
    }
}

#[tokio::test]
async fn off_loopback_requires_the_token() {
    let dir = tempfile::tempdir().unwrap();
    // Without a token, a non-loopback bind is refused.
    let out = Command::new(BIN)
        .current_dir(dir.path())
        .args(["serve", "--listen", "0.0.0.0:0"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("token"));

    let server = serve(
        dir.path(),
        &["--listen", "0.0.0.0:0", "--token-env", "CM_TEST_TOKEN"],
        &[("CM_TEST_TOKEN", "s3cret")],
    );
    let port = server.base.rsplit(':').next().unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let c = common::client();
    assert_eq!(get(&c, format!("{base}/healthz")).await.0, 200);
    let (status, body) = get(&c, format!("{base}/api/pending")).await;
    assert_eq!(status, 401);
    assert!(body["error"].is_string());
    let r = c
        .post(format!("{base}/mcp"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    let r = c
        .get(format!("{base}/api/pending"))
        .bearer_auth("wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    let r = c
        .get(format!("{base}/api/pending"))
        .bearer_auth("s3cret")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
}

#[test]
fn bad_config_names_the_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("codemode.toml"),
        "store = \"sqlite:x.db\"\n\n[limits]\ntimeout = 5\n",
    )
    .unwrap();
    let out = Command::new(BIN)
        .current_dir(dir.path())
        .arg("pending")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("codemode.toml"), "{err}");
    assert!(err.contains("line 4"), "{err}");
    assert!(err.contains("timeout"), "{err}");

    std::fs::write(
        dir.path().join("other.toml"),
        "[limits]\nmemory_mb = \"lots\"\n",
    )
    .unwrap();
    let out = Command::new(BIN)
        .current_dir(dir.path())
        .args(["--config", "other.toml", "pending"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("other.toml") && err.contains("memory_mb"),
        "{err}"
    );
}

#[test]
fn cli_run_pause_approve_and_unknown_id() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state").join("c.db");
    let out = cli(
        dir.path(),
        &db,
        &[
            "--json",
            "run",
            "-e",
            "await tasks.add_note({text:'a'}); return await tasks.create_task({title:'b'})",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let paused: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = paused["executionId"].as_str().unwrap();
    let out = cli(dir.path(), &db, &["pending"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("tasks.create_task"));
    let out = cli(dir.path(), &db, &["approve", id]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("completed"));
    let out = cli(
        dir.path(),
        &db,
        &["snippet", "save", "make_b", "--from", id],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = cli(dir.path(), &db, &["--json", "snippets"]);
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list[0]["name"], "make_b");
    let out = cli(dir.path(), &db, &["approve", "does-not-exist"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("does-not-exist"));
}

/// The approve line printed for a pause is a command that works as printed, from anywhere:
/// it names this binary and the store.
#[test]
fn the_printed_approve_line_works_from_another_directory() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state").join("c.db");
    let out = cli(
        dir.path(),
        &db,
        &[
            "run",
            "-e",
            "return await tasks.create_task({title:'hinted'})",
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("approve: "))
        .unwrap_or_else(|| panic!("no approve line in:\n{text}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let elsewhere = tempfile::tempdir().unwrap();
    let out = Command::new(words[0])
        .args(&words[1..])
        .current_dir(elsewhere.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{line}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("hinted"));
}

#[test]
fn a_busy_port_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let addr = server.base.trim_start_matches("http://").to_string();
    let out = Command::new(BIN)
        .current_dir(dir.path())
        .args(["serve", "--listen", &addr, "--store", "sqlite:other.db"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&addr), "{err}");
}

#[tokio::test]
async fn a_connector_that_fails_leaves_the_others_serving() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("codemode.toml"),
        "demo = true\n[connectors.broken]\ntype = \"openapi\"\nspec = \"./missing.yaml\"\n\n[connectors.secret]\ntype = \"openapi\"\nspec = \"./missing.yaml\"\nauth = { type = \"bearer\", token_env = \"CM_TEST_UNSET_TOKEN\" }\n",
    )
    .unwrap();
    let server = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let c = common::client();
    let (status, health) = get(&c, format!("{}/healthz", server.base)).await;
    assert_eq!(status, 200);
    assert_eq!(health["connectors"], json!(["tasks", "state"]));
    let failed = health["failed"].to_string();
    assert!(
        failed.contains("broken") && failed.contains("missing.yaml"),
        "{failed}"
    );
    assert!(
        failed.contains("connectors.secret.auth.token_env")
            && failed.contains("CM_TEST_UNSET_TOKEN"),
        "{failed}"
    );
    let (_, outcome) = post(
        &c,
        format!("{}/api/run", server.base),
        json!({"code": "async () => 1"}),
    )
    .await;
    assert_eq!(outcome["status"], "completed");
}
