//! Per-tool settings from configuration (`[connectors.NAME.tools.TOOL]`), and the guard that
//! keeps another Code Mode server's code tool out, against the real test server.

mod support;

use codemode::{Connector, ReplayPolicy};
use codemode_mcp::{McpConfig, McpConnector};
use serde_json::{json, Value};
use std::sync::Arc;
use support::{ctx, TEST_SERVER};

/// A config for the test server read through the same serde schema as `codemode.toml`.
fn config(extra: Value) -> Result<McpConfig, String> {
    let mut table = json!({"name": "items", "command": TEST_SERVER});
    for (k, v) in extra.as_object().unwrap() {
        table[k] = v.clone();
    }
    serde_json::from_value(table).map_err(|e| e.to_string())
}

#[tokio::test]
async fn overrides_set_replay_description_and_approval() {
    let config = config(json!({
        "rename": {"list_items": "all_items"},
        "tools": {
            "get_item": {"replay": "reexecute", "description": "One item, fetched fresh."},
            "list_items": {"description": "Every item (by its server name)."},
            "create_item": {"requires_approval": false},
            "get_secret": {"requires_approval": true}
        },
        "approval": {"require": ["create_*"]}
    }))
    .unwrap();
    let c = McpConnector::connect(config).await.unwrap();
    let tools = c.tools();
    let by = |n: &str| tools.iter().find(|t| t.name == n).unwrap().clone();
    let get = by("get_item");
    assert_eq!(get.replay, ReplayPolicy::Reexecute);
    assert!(!get.requires_approval);
    assert_eq!(get.description.as_deref(), Some("One item, fetched fresh."));
    assert_eq!(
        by("all_items").description.as_deref(),
        Some("Every item (by its server name).")
    );
    // The per-tool setting wins over the `approval` pattern.
    assert!(!by("create_item").requires_approval);
    assert!(by("delete_item").requires_approval);
    assert_eq!(by("delete_item").replay, ReplayPolicy::Log);

    let warnings = c.warnings();
    assert_eq!(
        warnings,
        ["MCP connector `items`: tools.get_secret is not used: no tool has that method or original name"]
    );
    // The same warnings through the trait, for a host holding `Arc<dyn Connector>`.
    let shared: Arc<dyn Connector> = Arc::new(c);
    assert_eq!(shared.warnings(), warnings);
    let made = shared
        .execute("create_item", json!({"name": "pen"}), ctx(0))
        .await
        .unwrap();
    assert_eq!(made["name"], "pen");
}

#[tokio::test]
async fn reexecute_with_approval_is_a_config_error_naming_the_key() {
    let bad = config(json!({"tools": {"delete_item": {"replay": "reexecute"}}})).unwrap();
    let err = McpConnector::connect(bad).await.unwrap_err().to_string();
    assert!(
        err.starts_with("MCP connector `items`: tools.delete_item: replay = \"reexecute\" cannot be combined with requiring approval")
            && err.contains("requires_approval = false"),
        "{err}"
    );
    let fine = config(json!({"tools": {
        "get_item": {"replay": "reexecute"},
        "get-item": {"description": "twice"}
    }}));
    // `get-item` names no tool here (no `--collide`), so this one loads with a warning.
    let c = McpConnector::connect(fine.unwrap()).await.unwrap();
    assert!(c.warnings()[0].contains("tools.get-item is not used"));
}

#[tokio::test]
async fn two_keys_for_one_tool_are_an_error() {
    let config = config(json!({
        "rename": {"list_items": "all_items"},
        "tools": {"list_items": {"description": "a"}, "all_items": {"description": "b"}}
    }))
    .unwrap();
    let err = McpConnector::connect(config).await.unwrap_err().to_string();
    assert_eq!(
        err,
        "MCP connector `items`: tools.all_items and tools.list_items both name the tool `all_items`; keep one"
    );
}

#[test]
fn bad_values_are_refused_when_read() {
    let err = config(json!({"tools": {"get_item": {"replay": "sometimes"}}})).unwrap_err();
    assert!(
        err.contains("sometimes") && err.contains("reexecute"),
        "{err}"
    );
    let err = config(json!({"tools": {"get_item": {"requires_aproval": false}}})).unwrap_err();
    assert!(err.contains("requires_aproval"), "{err}");
    let err = config(json!({"tools": {"get_item": {"requires_approval": "no"}}})).unwrap_err();
    assert!(err.contains("boolean"), "{err}");
}

#[tokio::test]
async fn another_code_mode_servers_code_tool_is_left_out() {
    let c = McpConnector::connect(config(json!({"args": ["--code-tool"]})).unwrap())
        .await
        .unwrap();
    assert!(!c.tools().iter().any(|t| t.name == "codemode"));
    assert!(c.tools().iter().any(|t| t.name == "get_item"));
    assert_eq!(
        c.warnings(),
        ["MCP connector `items`: tool \"codemode\" is left out: it takes code to run (named like a code runner, or its input has a string `code` or `script`), and exposing it would let code run code, past the log and the approvals (a Code Mode server wrapped as a connector would run itself); connect to the servers behind it instead; if this server is safe to run code in, set allow_code_tools = true in [connectors.items]"]
    );
}

#[tokio::test]
async fn allow_code_tools_lets_a_code_tool_in() {
    let c = McpConnector::connect(
        config(json!({"args": ["--only-code-tool"], "allow_code_tools": true})).unwrap(),
    )
    .await
    .unwrap();
    assert!(c.tools().iter().any(|t| t.name == "codemode"));
    assert!(c.warnings().is_empty(), "{:?}", c.warnings());
}

#[tokio::test]
async fn a_server_with_only_a_code_tool_fails_to_start() {
    let err = McpConnector::connect(config(json!({"args": ["--only-code-tool"]})).unwrap())
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "MCP connector `items`: every tool it lists (\"codemode\") is left out: it takes code to run (named like a code runner, or its input has a string `code` or `script`), and exposing it would let code run code, past the log and the approvals (a Code Mode server wrapped as a connector would run itself); connect to the servers behind it instead; if this server is safe to run code in, set allow_code_tools = true in [connectors.items]"
    );
}

/// `result = { fields = [...] }` and `result = { pick = "/..." }` cut a tool's results before
/// the code sees them, in a real run (the log keeps the cut value, so a replay agrees); a
/// pointer that is not one is a config error naming the key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn result_shapes_cut_what_the_code_sees() {
    let shaped = config(json!({"tools": {
        "create_item": {"requires_approval": false, "result": {"fields": ["name"]}},
        "list_items": {"result": {"pick": "/0"}}
    }}))
    .unwrap();
    let c = McpConnector::connect(shaped).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = codemode_sqlite::SqliteStore::open(dir.path().join("s.db")).unwrap();
    let executor = codemode_quickjs::QuickJsExecutor::new(Default::default());
    let rt = codemode::Runtime::builder(Arc::new(store), Arc::new(executor))
        .connector(c)
        .build()
        .unwrap();
    let out = rt
        .call("async () => { const made = await items.create_item({ name: 'pen' }); const first = await items.list_items({}); return { made, first } }")
        .await
        .unwrap();
    let codemode::Outcome::Completed { result, .. } = out else {
        panic!("{out:?}")
    };
    assert_eq!(result["made"], json!({"name": "pen"}), "{result}");
    // The first item itself (with its id), not the list: the pointer picked it.
    assert_eq!(result["first"]["name"], "pen", "{result}");
    assert!(result["first"]["id"].is_number(), "{result}");

    let bad = config(json!({"tools": {"list_items": {"result": {"pick": "items"}}}})).unwrap();
    let err = McpConnector::connect(bad).await.unwrap_err().to_string();
    assert!(
        err.contains("tools.list_items.result.pick") && err.contains("\"/items\""),
        "{err}"
    );
}
