//! Tools the connector cannot use as they are: renamed or left out with a warning, while the
//! rest of the server loads and a runtime builds with it.

mod support;

use codemode::policy::RevertRule;
use codemode::{Connector, Outcome, Runtime};
use codemode_mcp::McpConnector;
use serde_json::json;
use std::sync::Arc;
use support::{ctx, test_server};

fn names(c: &McpConnector) -> Vec<String> {
    c.tools().into_iter().map(|t| t.name).collect()
}

#[tokio::test]
async fn colliding_names_get_a_suffix_and_a_warning() {
    let c = McpConnector::connect(test_server(&["--collide"]))
        .await
        .unwrap();
    let names = names(&c);
    assert!(names.contains(&"get_item".to_string()), "{names:?}");
    assert!(names.contains(&"get_item_2".to_string()), "{names:?}");
    let warnings = c.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("MCP connector `items`: tools \"get_item\" and \"get-item\"")
            && warnings[0].contains("`get_item_2`")
            && warnings[0].contains("rename"),
        "{warnings:?}"
    );
    // Each name reaches its own tool.
    let dashed = c.execute("get_item_2", json!({}), ctx(0)).await.unwrap();
    assert_eq!(dashed, json!("the dashed one"));
    let err = c
        .execute("get_item", json!({"id": 9}), ctx(1))
        .await
        .unwrap_err();
    assert!(err.0.contains("no item 9"), "{err}");
}

#[tokio::test]
async fn rename_chooses_the_name() {
    let mut config = test_server(&["--collide"]);
    config.rename.insert("get-item".into(), "get_dashed".into());
    config.rename.insert("plain".into(), "words".into());
    let c = McpConnector::connect(config).await.unwrap();
    assert!(c.warnings().is_empty(), "{:?}", c.warnings());
    let names = names(&c);
    assert!(
        names.contains(&"get_dashed".to_string())
            && names.contains(&"words".to_string())
            && !names.contains(&"plain".to_string())
            && !names.contains(&"get_item_2".to_string()),
        "{names:?}"
    );
    let dashed = c.execute("get_dashed", json!({}), ctx(0)).await.unwrap();
    assert_eq!(dashed, json!("the dashed one"));
    let words = c.execute("words", json!({}), ctx(1)).await.unwrap();
    assert_eq!(words, json!("just words"));
}

#[tokio::test]
async fn a_schema_that_does_not_compile_leaves_its_tool_out() {
    let mut config = test_server(&["--bad-schema"]);
    // A revert rule that uses the left-out tool is dropped too, with its own warning.
    config.settings.reverts = vec![RevertRule::new("create_item", "broken", json!({})).unwrap()];
    let c = Arc::new(McpConnector::connect(config).await.unwrap());
    let names = names(&c);
    assert!(!names.contains(&"broken".to_string()), "{names:?}");
    assert!(names.contains(&"get_item".to_string()), "{names:?}");
    let warnings = c.warnings();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].starts_with("MCP connector `items`: tool \"broken\" is left out")
            && warnings[0].contains("not valid JSON Schema"),
        "{warnings:?}"
    );
    assert!(
        warnings[1].contains("revert rule for \"create_item\" is not used"),
        "{warnings:?}"
    );
    assert!(!c.tools().iter().any(|t| t.has_revert));

    // The runtime builds with what is left, and the rest works.
    let dir = tempfile::tempdir().unwrap();
    let store = codemode_sqlite::SqliteStore::open(dir.path().join("codemode.db")).unwrap();
    let executor = codemode_quickjs::QuickJsExecutor::new(Default::default());
    let runtime = Runtime::builder(Arc::new(store), Arc::new(executor))
        .connector_arc(c.clone())
        .build()
        .unwrap();
    let outcome = runtime
        .call("async () => await items.plain({})")
        .await
        .unwrap();
    match outcome {
        Outcome::Completed { result, .. } => assert_eq!(result, json!("just words")),
        other => panic!("{other:?}"),
    }
}
