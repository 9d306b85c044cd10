//! Settings wired from `codemode.toml` and the command line into the runtime and the API:
//! call caps, the approval conflict, the tool description, the API's defaults.

mod common;

use common::BIN;
use serde_json::json;
use std::path::Path;
use std::process::{Command, Output};

/// Runs `codemode ARGS` in `dir` (its `codemode.toml`, a store of its own).
fn codemode(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .current_dir(dir)
        .args(["--store", "sqlite:wiring.db"])
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run codemode")
}

/// Writes `config` as `codemode.toml` in a new directory and runs `pending` there: its stderr.
fn start_error(config: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("codemode.toml"), config).unwrap();
    let out = codemode(dir.path(), &["pending"]);
    assert!(!out.status.success(), "{config} was accepted");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn call_caps_of_zero_are_config_errors_naming_the_key() {
    let err = start_error("demo = true\n[limits]\nmax_in_flight = 0\n");
    assert!(err.contains("limits.max_in_flight = 0"), "{err}");
    let err = start_error("demo = true\n[limits]\nmax_in_flight_per_execution = 0\n");
    assert!(
        err.contains("limits.max_in_flight_per_execution = 0"),
        "{err}"
    );
    let api = "[connectors.api]\ntype = \"openapi\"\nspec = \"api.json\"\n";
    let err = start_error(&format!("{api}max_in_flight = 0\n"));
    assert!(err.contains("connectors.api.max_in_flight = 0"), "{err}");
    let err = start_error(&format!("{api}timeout_ms = 0\n"));
    assert!(err.contains("connectors.api.timeout_ms = 0"), "{err}");
    // A negative cap does not parse; the error says the line and the key.
    let err = start_error("demo = true\n[limits]\nmax_in_flight = -1\n");
    assert!(
        err.contains("line 3") && err.contains("max_in_flight"),
        "{err}"
    );
}

#[test]
fn call_caps_from_the_file_run_parallel_calls() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("codemode.toml"),
        "demo = true\n[limits]\nmax_in_flight = 1\nmax_in_flight_per_execution = 2\n",
    )
    .unwrap();
    let code = "const all = await Promise.all([1, 2, 3].map(() => tasks.list_tasks({}))); return all.length;";
    let out = codemode(dir.path(), &["--json", "run", "-e", code]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let outcome: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(outcome["result"], 3, "{outcome}");
}

/// The demo is a connector kind: a `type = "demo"` table is the demo `tasks`, started with
/// the tables the binary opens for it.
#[test]
fn a_demo_table_is_the_demo_connector() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("codemode.toml"),
        "[connectors.tasks]\ntype = \"demo\"\nhint = \"my list\"\n",
    )
    .unwrap();
    let code =
        "await tasks.add_note({ text: 'n' }); return (await tasks.list_tasks({})).notes.length;";
    let out = codemode(dir.path(), &["--json", "run", "-e", code]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let outcome: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(outcome["result"], 1, "{outcome}");
    let err = start_error("[connectors.tasks]\ntype = \"demo\"\nsize = 3\n");
    assert!(
        err.contains("connectors.tasks: unknown field `size`"),
        "{err}"
    );
}

#[tokio::test]
async fn approving_a_seq_that_is_not_pending_conflicts_and_bad_arguments_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server = common::serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let c = common::client();
    let base = &server.base;
    let code = "const t = await tasks.create_task({ title: 'a' }); return t.title;";
    let (_, outcome) = common::post(&c, format!("{base}/api/run"), json!({ "code": code })).await;
    assert_eq!(outcome["status"], "paused", "{outcome}");
    let id = outcome["executionId"].as_str().unwrap();
    let approve = format!("{base}/api/executions/{id}/approve");

    let (status, body) = common::post(&c, approve.clone(), json!({ "seqs": [5] })).await;
    assert_eq!(status, 409, "{body}");
    let error = body["error"].as_str().unwrap();
    assert!(
        error.contains("seq 5 is not a pending action") && error.contains("[0]"),
        "{error}"
    );

    let (status, body) = common::post(&c, approve.clone(), json!({ "args": { "title": 7 } })).await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = common::post(&c, approve.clone(), json!({ "seqs": [] })).await;
    assert_eq!(status, 400, "{body}");

    // Nothing changed: the action is still pending and can be approved.
    let (status, body) = common::post(&c, approve, json!({ "seqs": [0] })).await;
    assert_eq!((status, &body["result"]), (200, &json!("a")), "{body}");
}

/// `tools/list` from `codemode serve --stdio` in `dir`: the `codemode` tool's description.
fn mcp_tool_description(dir: &Path) -> String {
    use std::io::{BufRead, BufReader, Write};
    let mut child = Command::new(BIN)
        .current_dir(dir)
        .args(["--store", "sqlite:wiring.db", "serve", "--stdio"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {},
        "clientInfo": {"name": "wiring", "version": "0"}}});
    writeln!(stdin, "{init}").unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    lines.next().unwrap().unwrap();
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .unwrap();
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    )
    .unwrap();
    let answer: serde_json::Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    answer["result"]["tools"][0]["description"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn the_tool_description_comes_from_the_config() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("codemode.toml"),
        "demo = true\n[tool]\ndescription = \"Write code for our tasks.\\n{{types}}\\nFor example:\\n{{ example }}\"\n",
    )
    .unwrap();
    let server = common::serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let (status, tool) = common::get(&common::client(), format!("{}/api/tool", server.base)).await;
    assert_eq!(status, 200, "{tool}");
    let description = tool["description"].as_str().unwrap();
    assert!(
        description.starts_with("Write code for our tasks.\n"),
        "{description}"
    );
    assert!(description.contains("create_task"), "{description}");
    assert!(
        description.contains("codemode.search(") && !description.contains("{{"),
        "{description}"
    );
    assert_eq!(mcp_tool_description(dir.path()), description);

    let err = start_error("demo = true\n[tool]\ndescription = \"Code. {{tools}}\"\n");
    assert!(
        err.contains("{{tools}}") && err.contains("[tool] description"),
        "{err}"
    );
}

#[tokio::test]
async fn the_api_defaults_for_expire_prune_and_pending() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("codemode.toml"),
        "demo = true\nmax_executions = 2\n",
    )
    .unwrap();
    let server = common::serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let c = common::client();
    let base = &server.base;
    let mut paused = Vec::new();
    for title in ["a", "b"] {
        let code = format!("await tasks.create_task({{ title: '{title}' }});");
        let (_, o) = common::post(&c, format!("{base}/api/run"), json!({ "code": code })).await;
        paused.push(o["executionId"].as_str().unwrap().to_string());
    }
    let (status, only) =
        common::get(&c, format!("{base}/api/pending?executionId={}", paused[1])).await;
    assert_eq!(status, 200, "{only}");
    assert_eq!(only.as_array().unwrap().len(), 1, "{only}");
    assert_eq!(only[0]["executionId"], paused[1].as_str());
    let (_, all) = common::get(&c, format!("{base}/api/pending")).await;
    assert_eq!(all.as_array().unwrap().len(), 2, "{all}");

    // No body: runs paused for under a day stay paused.
    let r = c
        .post(format!("{base}/api/expire"))
        .header("content-type", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["expired"], json!([]), "{body}");
    let (_, o) = common::post(&c, format!("{base}/api/expire"), json!({ "max_age_ms": 0 })).await;
    assert_eq!(o["expired"].as_array().unwrap().len(), 2, "{o}");

    for _ in 0..3 {
        common::post(&c, format!("{base}/api/run"), json!({ "code": "return 1" })).await;
    }
    // No body: prune keeps the retention limit, max_executions.
    let r = c
        .post(format!("{base}/api/prune"))
        .header("content-type", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["kept"], 2, "{body}");
    let (_, listed) = common::get(&c, format!("{base}/api/executions")).await;
    assert_eq!(listed.as_array().unwrap().len(), 2, "{listed}");
}

#[test]
fn decisions_from_the_cli_on_a_local_store_record_the_actor_cli() {
    let dir = tempfile::tempdir().unwrap();
    let run = |code: &str| -> String {
        let out = codemode(dir.path(), &["--demo", "--json", "run", "-e", code]);
        let o: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        o["executionId"].as_str().unwrap().to_string()
    };
    let show = |id: &str| -> serde_json::Value {
        let out = codemode(dir.path(), &["--demo", "--json", "show", id]);
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let approved = run("await tasks.create_task({ title: 'a' });");
    let out = codemode(dir.path(), &["--demo", "approve", &approved]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = codemode(dir.path(), &["--demo", "rollback", &approved]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let e = show(&approved);
    let by: Vec<_> = e["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["kind"].clone(), d["by"].clone()))
        .collect();
    assert_eq!(
        by,
        vec![
            (json!("approve"), json!("cli")),
            (json!("rollback"), json!("cli"))
        ],
        "{e}"
    );

    let rejected = run("await tasks.create_task({ title: 'b' });");
    let out = codemode(dir.path(), &["--demo", "reject", &rejected, "0"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let e = show(&rejected);
    assert_eq!(e["decisions"][0]["by"], "cli", "{e}");
}

#[test]
fn the_runtime_name_and_a_snippet_input_schema_from_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = |args: &[&str]| -> serde_json::Value {
        let out = codemode(d, args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let o = run(&[
        "--demo",
        "--json",
        "--runtime",
        "team",
        "run",
        "-e",
        "return 1",
    ]);
    let id = o["executionId"].as_str().unwrap();
    // Another runtime on the same store does not see it; the same name does, from the file too.
    let out = codemode(d, &["--demo", "--json", "show", id]);
    assert!(!out.status.success());
    std::fs::write(d.join("codemode.toml"), "demo = true\nruntime = \"team\"\n").unwrap();
    assert_eq!(run(&["--json", "show", id])["status"], "completed");

    let schema =
        r#"{"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]}"#;
    std::fs::write(d.join("schema.json"), schema).unwrap();
    let o = run(&["--json", "run", "-e", "return input?.n ?? 0"]);
    let from = o["executionId"].as_str().unwrap();
    let args = ["--json", "snippet", "save", "double", "--from", from];
    let saved = run(&[&args[..], &["--input-schema", "@schema.json"]].concat());
    assert_eq!(saved["inputSchema"]["required"], json!(["n"]), "{saved}");
    let saved = run(&[&args[..], &["--replace", "--input-schema", schema]].concat());
    assert_eq!(saved["inputSchema"]["required"], json!(["n"]), "{saved}");
    let refused = run(&[
        "--json",
        "run",
        "-e",
        "return await codemode.run('double', {})",
    ]);
    assert!(refused.to_string().contains("n"), "{refused}");
    assert_ne!(refused["result"], json!(0), "{refused}");
    let out = codemode(
        d,
        &[&args[..], &["--replace", "--input-schema", "{nope"]].concat(),
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("--input-schema"));
}
