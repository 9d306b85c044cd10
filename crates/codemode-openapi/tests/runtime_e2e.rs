//! End to end through the durable runtime: QuickJS sandbox, SQLite store, this connector, and
//! an API on loopback. Approval pauses the mutating call, approve resumes it, rollback reverts
//! it, and the credential appears nowhere in the outcome or the audit record.

mod support;

use codemode::policy::RevertRule;
use codemode::{Outcome, Runtime};
use codemode_openapi::{AuthConfig, OpenApiConfig, OpenApiConnector};
use serde_json::json;
use std::sync::Arc;

#[tokio::test]
async fn approve_run_and_roll_back_without_leaking_the_secret() {
    let server = support::start().await;
    let secret = "e2e-token-0c9f1d2b-very-secret";
    std::env::set_var("CODEMODE_E2E_TOKEN", secret);
    let mut config = OpenApiConfig::new("items", "inline");
    config.auth = Some(AuthConfig::Bearer {
        token_env: "CODEMODE_E2E_TOKEN".into(),
    });
    config.settings.reverts =
        vec![RevertRule::new("createItem", "deleteItem", json!({"id": "${result.id}"})).unwrap()];
    let spec = support::spec_for(&server.base).to_string();
    let connector = OpenApiConnector::from_bytes(config, spec.as_bytes()).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let store = codemode_sqlite::SqliteStore::open(dir.path().join("codemode.db")).unwrap();
    let executor = codemode_quickjs::QuickJsExecutor::new(Default::default());
    let runtime = Runtime::builder(Arc::new(store), Arc::new(executor))
        .connector(connector)
        .build()
        .unwrap();

    let code = r#"async () => {
        const before = await items.listItems({});
        const echo = await items.echo({q: "x"});
        let missing;
        try { await items.getItem({id: 99}); } catch (e) { missing = e.message; }
        const created = await items.createItem({body: {name: "pen"}});
        return {before, created, auth: echo.headers.authorization, missing};
    }"#;
    let outcome = runtime.call(code).await.unwrap();
    let Outcome::Paused {
        execution_id,
        pending,
    } = &outcome
    else {
        panic!("expected a pause for createItem: {outcome:?}");
    };
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].method, "createItem");
    assert!(
        server.api.items.lock().unwrap().is_empty(),
        "nothing created before approval"
    );

    let outcome = runtime.approve(execution_id).await.unwrap();
    let Outcome::Completed { result, .. } = &outcome else {
        panic!("expected completion: {outcome:?}");
    };
    assert_eq!(result["before"], json!([]));
    assert_eq!(result["created"], json!({"name": "pen", "id": 1}));
    assert_eq!(result["auth"], "Bearer [redacted]");
    assert!(
        result["missing"].as_str().unwrap().contains("404"),
        "{result}"
    );
    assert_eq!(server.api.items.lock().unwrap().len(), 1);

    let report = runtime.rollback(execution_id).await.unwrap();
    assert_eq!(report.reverted.len(), 1, "{report:?}");
    assert!(
        server.api.items.lock().unwrap().is_empty(),
        "rollback deleted the item"
    );

    let record = runtime.execution(execution_id).await.unwrap().unwrap();
    let audit = serde_json::to_string(&record).unwrap();
    let seen = serde_json::to_string(&outcome).unwrap();
    assert!(
        !audit.contains(secret),
        "secret in the audit record: {audit}"
    );
    assert!(!seen.contains(secret), "secret in the outcome: {seen}");
}
