//! End to end through the durable runtime: QuickJS sandbox, SQLite store, and the test MCP
//! server as a process. Approval from annotations, replay after approval, a catchable crash,
//! and rollback through a revert from configuration.

mod support;

use codemode::policy::{ApprovalPolicy, RevertRule};
use codemode::{Outcome, Runtime};
use codemode_mcp::McpConnector;
use serde_json::json;
use std::sync::Arc;

#[tokio::test]
async fn approve_replay_crash_and_roll_back() {
    let mut config = support::test_server(&[]);
    config.settings.reverts =
        vec![RevertRule::new("create_item", "delete_item", json!({"id": "${result.id}"})).unwrap()];
    config.settings.approval = ApprovalPolicy {
        allow: vec!["crash".into()],
        require: vec![],
    };
    let connector = Arc::new(McpConnector::connect(config).await.unwrap());

    let dir = tempfile::tempdir().unwrap();
    let store = codemode_sqlite::SqliteStore::open(dir.path().join("codemode.db")).unwrap();
    let executor = codemode_quickjs::QuickJsExecutor::new(Default::default());
    let runtime = Runtime::builder(Arc::new(store), Arc::new(executor))
        .connector_arc(connector.clone())
        .build()
        .unwrap();

    let code = r#"async () => {
        const before = await items.list_items({});
        let crashed;
        try { await items.crash({}); } catch (e) { crashed = e.message; }
        const created = await items.create_item({name: "pen"});
        const after = await items.list_items({});
        return {before, crashed, created, after};
    }"#;
    let outcome = runtime.call(code).await.unwrap();
    let Outcome::Paused {
        execution_id,
        pending,
    } = &outcome
    else {
        panic!("expected a pause for create_item: {outcome:?}");
    };
    assert_eq!(pending[0].method, "create_item");

    let outcome = runtime.approve(execution_id).await.unwrap();
    let Outcome::Completed { result, .. } = &outcome else {
        panic!("expected completion: {outcome:?}");
    };
    assert_eq!(result["before"], json!([]));
    assert!(
        result["crashed"]
            .as_str()
            .unwrap()
            .contains("stopped during the call to crash"),
        "{result}"
    );
    // The crash restarted the server, so the store is fresh: ids start again at 1.
    assert_eq!(result["created"], json!({"id": 1, "name": "pen"}));
    assert_eq!(result["after"], json!([{"id": 1, "name": "pen"}]));

    let report = runtime.rollback(execution_id).await.unwrap();
    assert_eq!(report.reverted.len(), 1, "{report:?}");
    use codemode::Connector;
    let now = connector
        .execute("list_items", json!({}), support::ctx(0))
        .await
        .unwrap();
    assert_eq!(now, json!([]), "rollback deleted the item");
    connector.shutdown().await;
}
