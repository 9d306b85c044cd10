//! The workspace in the product: code writes files through `state`, the HTTP API lists and
//! reads them, and `[workspace]` in codemode.toml renames or turns it off.

mod common;

use common::{get, post, serve};
use serde_json::json;

#[tokio::test]
async fn code_writes_a_file_and_the_api_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let c = common::client();
    let base = &server.base;

    let code = r#"await state.writeFile("/notes/a.txt", "hi"); return (await state.list("/notes")).entries.map(e => e.name);"#;
    let (status, out) = post(&c, format!("{base}/api/run"), json!({ "code": code })).await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["status"], "completed", "{out}");
    assert_eq!(out["result"], json!(["a.txt"]), "{out}");

    let (status, all) = get(&c, format!("{base}/api/workspaces")).await;
    assert_eq!(status, 200, "{all}");
    assert_eq!(all["configured"], "default", "{all}");
    assert_eq!(
        all["workspaces"],
        json!([{"name": "default", "files": 1, "bytes": 2}]),
        "{all}"
    );

    let (status, root) = get(&c, format!("{base}/api/workspace/default/files")).await;
    assert_eq!(status, 200, "{root}");
    assert_eq!(root["dir"], "/");
    assert_eq!(root["entries"][0]["path"], "/notes", "{root}");
    assert_eq!(root["entries"][0]["type"], "directory", "{root}");

    let url = format!("{base}/api/workspace/default/files?dir=/notes");
    let (status, notes) = get(&c, url).await;
    assert_eq!(status, 200, "{notes}");
    assert_eq!(notes["entries"][0]["path"], "/notes/a.txt", "{notes}");
    assert_eq!(notes["entries"][0]["size"], 2, "{notes}");

    let url = format!("{base}/api/workspace/default/file?path=/notes/a.txt");
    let (status, file) = get(&c, url).await;
    assert_eq!(status, 200, "{file}");
    assert_eq!(file["content"], "hi", "{file}");
    assert_eq!(file["path"], "/notes/a.txt");

    // Bad paths are 400 with the reason; a missing file is 404; a directory is not a file.
    let url = format!("{base}/api/workspace/default/file?path=/notes/../../etc/passwd");
    let (status, err) = get(&c, url).await;
    assert_eq!(status, 400, "{err}");
    assert!(
        err["error"].as_str().unwrap().contains("invalid path"),
        "{err}"
    );
    let url = format!("{base}/api/workspace/default/files?dir=/a%5Cb");
    let (status, err) = get(&c, url).await;
    assert_eq!(status, 400, "{err}");
    let (status, err) = get(&c, format!("{base}/api/workspace/default/file")).await;
    assert_eq!(status, 400, "{err}");
    assert!(err["error"].as_str().unwrap().contains("?path="), "{err}");
    let url = format!("{base}/api/workspace/default/file?path=/notes/b.txt");
    let (status, err) = get(&c, url).await;
    assert_eq!(status, 404, "{err}");
    let url = format!("{base}/api/workspace/default/file?path=/notes");
    let (status, err) = get(&c, url).await;
    assert_eq!(status, 400, "{err}");
    assert!(
        err["error"].as_str().unwrap().contains("directory"),
        "{err}"
    );
    let (status, err) = get(&c, format!("{base}/api/workspace/no%20pe/files")).await;
    assert_eq!(status, 400, "{err}");

    // Rolling the execution back undoes the write.
    let id = out["executionId"].as_str().unwrap();
    let (status, rb) = post(
        &c,
        format!("{base}/api/executions/{id}/rollback"),
        json!({}),
    )
    .await;
    assert_eq!(status, 200, "{rb}");
    let url = format!("{base}/api/workspace/default/file?path=/notes/a.txt");
    let (status, _) = get(&c, url).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn the_config_renames_the_global_and_names_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let toml = "demo = true\n[workspace]\nname = \"files\"\nworkspace = \"team-a\"\n";
    std::fs::write(dir.path().join("codemode.toml"), toml).unwrap();
    let server = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let c = common::client();
    let base = &server.base;
    let (_, health) = get(&c, format!("{base}/healthz")).await;
    assert_eq!(health["connectors"], json!(["tasks", "files"]), "{health}");
    let code = r#"await files.writeJson("/x.json", {a: 1}); return typeof state;"#;
    let (_, out) = post(&c, format!("{base}/api/run"), json!({ "code": code })).await;
    assert_eq!(out["result"], "undefined", "{out}");
    let url = format!("{base}/api/workspace/team-a/file?path=/x.json");
    let (status, file) = get(&c, url).await;
    assert_eq!(status, 200, "{file}");
    assert_eq!(file["content"], r#"{"a":1}"#, "{file}");
}

#[tokio::test]
async fn enabled_false_leaves_state_out() {
    let dir = tempfile::tempdir().unwrap();
    let toml = "demo = true\n[workspace]\nenabled = false\n";
    std::fs::write(dir.path().join("codemode.toml"), toml).unwrap();
    let server = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let c = common::client();
    let base = &server.base;
    let (_, health) = get(&c, format!("{base}/healthz")).await;
    assert_eq!(health["connectors"], json!(["tasks"]), "{health}");
    let (status, all) = get(&c, format!("{base}/api/workspaces")).await;
    assert_eq!(status, 200);
    assert_eq!(all, json!({"enabled": false, "workspaces": []}));
    let (status, _) = get(&c, format!("{base}/api/workspace/default/files")).await;
    assert_eq!(status, 404);
}

#[test]
fn a_global_that_is_a_connector_name_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let toml = "[connectors.state]\ntype = \"openapi\"\nspec = \"api.json\"\n";
    std::fs::write(dir.path().join("codemode.toml"), toml).unwrap();
    let db = dir.path().join("c.db");
    let out = common::cli(dir.path(), &db, &["run", "-e", "return 1"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("workspace.name = \"state\""), "{err}");
}
