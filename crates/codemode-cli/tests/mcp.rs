//! The official MCP TypeScript SDK client against `codemode serve`, over stdio and HTTP.
//! Skipped (with a message) when node or the fixtures are not installed.

mod common;

use common::{cli, serve, BIN};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn client(fixtures: &Path, mode: &str, target: &[&str], codes: &[&str]) -> Value {
    client_with(fixtures, mode, target, codes, None)
}

fn client_with(
    fixtures: &Path,
    mode: &str,
    target: &[&str],
    codes: &[&str],
    elicit: Option<&str>,
) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/js/mcp_client.mjs");
    let mut cmd = Command::new("node");
    if let Some(answer) = elicit {
        cmd.env("ELICIT", answer);
    }
    let out = cmd
        .arg(script)
        .arg(fixtures)
        .arg(mode)
        .args(target)
        .arg("--")
        .args(codes)
        .output()
        .expect("run node");
    assert!(
        out.status.success(),
        "client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn check_listing_and_calls(v: &Value) -> String {
    let tools = v["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0]["name"], "codemode");
    assert!(tools[0]["description"].as_str().unwrap().len() > 20);
    let done = &v["calls"][0];
    assert_eq!(done["structuredContent"]["status"], "completed", "{done}");
    assert_eq!(done["structuredContent"]["result"], 3);
    let paused = &v["calls"][1];
    assert_eq!(paused["structuredContent"]["status"], "paused", "{paused}");
    let text = paused["content"][0]["text"].as_str().unwrap();
    // The hint names the real binary, its store or server flags and the execution id.
    let id = paused["structuredContent"]["executionId"].as_str().unwrap();
    assert!(text.contains(&format!(" approve {id}")), "{text}");
    paused["structuredContent"]["executionId"]
        .as_str()
        .unwrap()
        .to_string()
}

const CODES: [&str; 2] = [
    "async () => 1 + 2",
    "return await tasks.create_task({ title: 'from mcp' })",
];

#[test]
fn sdk_client_over_stdio() {
    let Some(fx) = common::fixtures() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let store = format!("sqlite:{}", db.display());
    // The paused call returns at once instead of waiting for a decision.
    let config = dir.path().join("codemode.toml");
    std::fs::write(&config, "[approvals]\nwait_ms = 0\n").unwrap();
    let config = config.to_str().unwrap();
    let v = client(
        &fx,
        "stdio",
        &[
            BIN, "serve", "--stdio", "--store", &store, "--config", config,
        ],
        &CODES,
    );
    let id = check_listing_and_calls(&v);
    let out = cli(dir.path(), &db, &["--json", "approve", &id]);
    let done: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(done["status"], "completed");
    assert_eq!(done["result"]["title"], "from mcp");
}

#[test]
fn sdk_client_over_http() {
    let Some(fx) = common::fixtures() else { return };
    let dir = tempfile::tempdir().unwrap();
    // The paused call returns at once instead of waiting for a decision.
    std::fs::write(
        dir.path().join("codemode.toml"),
        "[approvals]\nwait_ms = 0\n",
    )
    .unwrap();
    let server = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let url = format!("{}/mcp", server.base);
    let v = client(&fx, "http", &[&url], &CODES);
    let id = check_listing_and_calls(&v);
    let out = cli(dir.path(), &server.db, &["--json", "approve", &id]);
    let done: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(done["status"], "completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_server_as_a_connector() {
    let Some(fx) = common::fixtures() else { return };
    let everything = fx.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let dir = tempfile::tempdir().unwrap();
    let flag = format!("everything=node {} stdio", everything.display());
    let server = serve(
        dir.path(),
        &["--listen", "127.0.0.1:0", "--demo", "--mcp", &flag],
        &[],
    );
    let c = common::client();
    let (_, health) = common::get(&c, format!("{}/healthz", server.base)).await;
    assert_eq!(
        health["connectors"],
        serde_json::json!(["tasks", "everything", "state"]),
        "{health}"
    );
    let (_, out) = common::post(
        &c,
        format!("{}/api/run", server.base),
        serde_json::json!({ "code": "return await everything.echo({ message: 'hi' })" }),
    )
    .await;
    assert_eq!(out["status"], "completed", "{out}");
    assert!(out["result"].to_string().contains("hi"), "{out}");
}

/// `codemode serve --mcp everything=…`: server-everything and the workspace `state` together
/// do not fit the description's budget of 2,000 tokens (they took ~2,430 before it), so one is
/// declared whole and the other left out and named.
#[test]
fn the_description_over_server_everything_keeps_to_its_budget() {
    use codemode::discovery::{estimated_tokens, DEFAULT_DESCRIPTION_TOKENS};
    let Some(fx) = common::fixtures() else { return };
    let everything = fx.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("d.db").display());
    let flag = format!("everything=node {} stdio", everything.display());
    let target = [BIN, "serve", "--stdio", "--store", &store, "--mcp", &flag];
    let v = client(&fx, "stdio", &target, &[]);
    let description = v["tools"][0]["description"].as_str().unwrap();
    let tokens = estimated_tokens(description);
    eprintln!(
        "codemode serve over server-everything and state: description of {} chars, ~{tokens} tokens",
        description.chars().count()
    );
    assert!(tokens <= DEFAULT_DESCRIPTION_TOKENS, "{description}");
    assert!(
        description.contains("- everything (") && description.contains("- state (9 methods)"),
        "{description}"
    );
    // (connector, two of its methods as declared): each whole or not at all.
    let methods = [
        ("everything", ["  echo(", "  get_sum("]),
        ("state", ["  readFile(", "  remove("]),
    ];
    let mut declared = Vec::new();
    let mut left_out = Vec::new();
    for (connector, [first, second]) in methods {
        match (description.contains(first), description.contains(second)) {
            (true, true) => declared.push(connector),
            (false, false) => left_out.push(connector),
            _ => panic!("{connector} is declared in part:\n{description}"),
        }
    }
    assert_eq!((declared.len(), left_out.len()), (1, 1), "{description}");
    assert!(
        description.contains(&format!("Declarations of the methods of {} (", declared[0]))
            && description.contains(&format!(
                "the methods of {0}. Discover them from your code: codemode.describe(\"{0}\")",
                left_out[0]
            )),
        "{description}"
    );
}

/// Creates a task through the client twice: accepting the elicitation completes the run in the
/// same tool call, declining leaves it rejected. The rejected execution's id.
fn accept_then_decline(fx: &Path, mode: &str, target: &[&str], title: &str) -> String {
    let code = format!("const t = await tasks.create_task({{ title: {title:?} }}); return t.title");
    let v = client_with(fx, mode, target, &[&code], Some("accept"));
    let done = &v["calls"][0]["structuredContent"];
    assert_eq!(done["status"], "completed", "{v}");
    assert_eq!(done["result"], title);
    assert!(
        v["asked"][0]
            .as_str()
            .unwrap()
            .contains("tasks.create_task"),
        "{v}"
    );

    let v = client_with(fx, mode, target, &[&code], Some("decline"));
    let rejected = &v["calls"][0]["structuredContent"];
    assert_eq!(rejected["status"], "rejected", "{v}");
    rejected["executionId"].as_str().unwrap().to_string()
}

/// The execution `id` as the CLI shows it from the database.
fn shown(dir: &Path, db: &Path, id: &str) -> Value {
    let out = cli(dir, db, &["--json", "show", id]);
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_pause_is_resolved_by_elicitation() {
    let Some(fx) = common::fixtures() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let store = format!("sqlite:{}", db.display());
    let target = [BIN, "serve", "--stdio", "--store", &store];
    let id = accept_then_decline(&fx, "stdio", &target, "asked");
    assert_eq!(shown(dir.path(), &db, &id)["status"], "rejected");
}

#[test]
fn a_pause_is_resolved_by_elicitation_over_streamable_http() {
    let Some(fx) = common::fixtures() else { return };
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let url = format!("{}/mcp", server.base);
    let id = accept_then_decline(&fx, "http", &[&url], "asked over http");
    assert_eq!(shown(dir.path(), &server.db, &id)["status"], "rejected");
}

/// A pass that pauses on three writes at once asks the user once, listing all three:
/// accepting runs them all, declining rejects them all; either way one question was asked.
#[test]
fn a_batch_of_writes_is_put_to_the_user_in_one_question() {
    let Some(fx) = common::fixtures() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("b.db");
    let store = format!("sqlite:{}", db.display());
    let target = [BIN, "serve", "--stdio", "--store", &store];
    let code = "const done = await Promise.all(['a', 'b', 'c'].map((title) => tasks.create_task({ title }))); \
                return done.map((t) => t.title)";
    let v = client_with(&fx, "stdio", &target, &[code], Some("accept"));
    let done = &v["calls"][0]["structuredContent"];
    assert_eq!(done["status"], "completed", "{v}");
    assert_eq!(done["result"], serde_json::json!(["a", "b", "c"]));
    let asked = v["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "one question for the batch: {asked:?}");
    let question = asked[0].as_str().unwrap();
    assert!(question.contains("3 actions"), "{question}");
    for title in ["\"a\"", "\"b\"", "\"c\""] {
        assert!(question.contains(title), "{question}");
    }

    let v = client_with(&fx, "stdio", &target, &[code], Some("decline"));
    let rejected = &v["calls"][0]["structuredContent"];
    assert_eq!(rejected["status"], "rejected", "{v}");
    assert_eq!(v["asked"].as_array().unwrap().len(), 1, "{v}");
    let id = rejected["executionId"].as_str().unwrap();
    assert_eq!(shown(dir.path(), &db, id)["status"], "rejected");
}

#[test]
fn wrap_puts_an_mcp_server_behind_the_code_tool() {
    let Some(fx) = common::fixtures() else { return };
    let everything = fx.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let everything = everything.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("w.db").display());
    let target = [
        BIN,
        "wrap",
        "--store",
        &store,
        "--name",
        "everything",
        "--",
        "node",
        everything,
        "stdio",
    ];
    let v = client(
        &fx,
        "stdio",
        &target,
        &["return await everything.echo({ message: 'wrapped' })"],
    );
    assert_eq!(v["tools"].as_array().unwrap().len(), 1);
    assert_eq!(v["tools"][0]["name"], "codemode");
    let done = &v["calls"][0]["structuredContent"];
    assert_eq!(done["status"], "completed", "{v}");
    assert!(done["result"].to_string().contains("wrapped"), "{v}");
}

#[test]
fn wrap_description_replaces_the_code_tools_description_with_its_placeholders_filled() {
    let Some(fx) = common::fixtures() else { return };
    let everything = fx.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let everything = everything.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("w.db").display());
    let target = [
        BIN,
        "wrap",
        "--store",
        &store,
        "--name",
        "everything",
        "--description",
        "Code over the everything server.\n{{types}}\nExample:\n{{example}}",
        "--",
        "node",
        everything,
        "stdio",
    ];
    let v = client(&fx, "stdio", &target, &[]);
    let description = v["tools"][0]["description"].as_str().unwrap();
    assert!(
        description.starts_with("Code over the everything server."),
        "{description}"
    );
    assert!(
        description.contains("declare const everything"),
        "{description}"
    );
    assert!(description.contains("echo("), "{description}");
    assert!(description.contains("codemode.search("), "{description}");
    assert!(!description.contains("{{"), "{description}");

    let bad = std::process::Command::new(BIN)
        .args([
            "wrap",
            "--store",
            &store,
            "--description",
            "{{nope}}",
            "--",
            "node",
        ])
        .arg(everything)
        .arg("stdio")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("nope"), "{err}");
}
