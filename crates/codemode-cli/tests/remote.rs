//! `--server URL`: the CLI manages executions of a running server through its HTTP API.

mod common;

use common::{serve, BIN};
use serde_json::Value;
use std::process::{Command, Output, Stdio};

fn remote(dir: &std::path::Path, args: &[&str], token: Option<&str>) -> Output {
    let mut cmd = Command::new(BIN);
    // No --store: a database here would be a different one; the CLI must not need it.
    cmd.current_dir(dir).args(args).stdin(Stdio::null());
    match token {
        Some(t) => cmd.env("CM_REMOTE_TOKEN", t),
        None => cmd.env_remove("CM_REMOTE_TOKEN"),
    };
    cmd.output().expect("run codemode")
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "not JSON: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn the_cli_approves_through_a_server_with_a_token() {
    let server_dir = tempfile::tempdir().unwrap();
    let server = serve(
        server_dir.path(),
        &["--listen", "0.0.0.0:0", "--token-env", "CM_TOKEN"],
        &[("CM_TOKEN", "remote-s3cret")],
    );
    let port = server.base.rsplit(':').next().unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let cli_dir = tempfile::tempdir().unwrap();
    let dir = cli_dir.path();
    let with = |args: &[&str]| {
        let mut all = vec!["--server", url.as_str(), "--token-env", "CM_REMOTE_TOKEN"];
        all.extend_from_slice(args);
        all.into_iter().map(str::to_string).collect::<Vec<_>>()
    };
    let run = |args: &[&str], token| {
        let a = with(args);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        remote(dir, &a, token)
    };

    let out = run(
        &[
            "--json",
            "run",
            "-e",
            "return (await tasks.create_task({ title: 'from afar' })).title",
        ],
        Some("remote-s3cret"),
    );
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let paused = json(&out);
    assert_eq!(paused["status"], "paused");
    let id = paused["executionId"].as_str().unwrap().to_string();

    let pending = json(&run(&["--json", "pending"], Some("remote-s3cret")));
    assert_eq!(pending[0]["executionId"], id.as_str(), "{pending}");

    // A wrong token is refused with a hint.
    let out = run(&["approve", &id], Some("wrong"));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("401") && err.contains("--token-env"), "{err}");

    let out = run(&["--json", "approve", &id], Some("remote-s3cret"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let done = json(&out);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"], "from afar");

    // Approving again: a conflict, said plainly.
    let out = run(&["approve", &id], Some("remote-s3cret"));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("already handled") && err.contains("409"),
        "{err}"
    );

    let out = run(&["show", &id], Some("remote-s3cret"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("tasks.create_task") && text.contains("applied"),
        "{text}"
    );
    let listed = json(&run(
        &["--json", "executions", "--limit", "5"],
        Some("remote-s3cret"),
    ));
    assert_eq!(listed[0]["id"], id.as_str(), "{listed}");

    let report = json(&run(&["--json", "rollback", &id], Some("remote-s3cret")));
    assert_eq!(report["status"], "rolled_back", "{report}");

    // Reject through the server.
    let paused = json(&run(
        &[
            "--json",
            "run",
            "-e",
            "await tasks.create_task({ title: 'no' })",
        ],
        Some("remote-s3cret"),
    ));
    let id2 = paused["executionId"].as_str().unwrap();
    let out = run(&["reject", id2, "0"], Some("remote-s3cret"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown = json(&run(&["--json", "show", id2], Some("remote-s3cret")));
    assert_eq!(shown["status"], "rejected");

    // Snippets, discovery and maintenance go through the server too.
    let ok = |args: &[&str]| {
        let out = run(args, Some("remote-s3cret"));
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        json(&out)
    };
    let done = ok(&[
        "--json",
        "run",
        "-e",
        "return (await tasks.list_tasks({})).tasks.length",
    ]);
    let source = done["executionId"].as_str().unwrap().to_string();
    let saved = ok(&[
        "--json",
        "snippet",
        "save",
        "count-tasks",
        "--from",
        &source,
    ]);
    assert_eq!(saved["name"], "count-tasks", "{saved}");
    let listed = ok(&["--json", "snippets"]);
    assert_eq!(listed[0]["name"], "count-tasks", "{listed}");
    let found = ok(&["--json", "search", "create task"]);
    assert_eq!(found["results"][0]["path"], "tasks.create_task", "{found}");
    let described = ok(&["--json", "describe", "tasks.create_task"]);
    assert!(
        described["types"].as_str().unwrap().contains("title"),
        "{described}"
    );
    let types = ok(&["--json", "types"]);
    assert!(types["types"]
        .as_str()
        .unwrap()
        .contains("declare const tasks"));
    let expired = ok(&["--json", "expire", "--max-age-ms", "3600000"]);
    assert_eq!(expired["expired"], serde_json::json!([]), "{expired}");
    let pruned = ok(&["--json", "prune", "--keep", "1"]);
    assert!(pruned["deleted"].as_u64().unwrap() >= 1, "{pruned}");
    let deleted = ok(&["--json", "snippet", "delete", "count-tasks"]);
    assert_eq!(deleted["deleted"], "count-tasks", "{deleted}");

    // Nothing was written next to the CLI: it never opened a database.
    assert!(!dir.join("codemode.db").exists());

    // Unknown ids and unreachable servers are clear errors.
    let out = run(&["show", "nope"], Some("remote-s3cret"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("404"));
    let out = remote(dir, &["--server", "http://127.0.0.1:1", "pending"], None);
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot reach"));
}
