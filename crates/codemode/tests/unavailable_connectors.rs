//! A configured connector that failed to start is still a global: its calls throw why, the
//! tool description lists it as unavailable, and its name stays taken.

use codemode::{Outcome, Runtime, RuntimeError, RustConnector, RustTool};
use serde_json::json;
use std::sync::Arc;

fn runtime(dir: &std::path::Path, also: &[(&str, &str)]) -> Result<Runtime, RuntimeError> {
    let store = Arc::new(codemode_sqlite::SqliteStore::open(dir.join("c.db")).unwrap());
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::default());
    let probe = RustConnector::new("probe")
        .tool(RustTool::new("read", |args, _ctx| async move { Ok(args) }).read_only());
    let mut builder = Runtime::builder(store, executor).connector(probe);
    for (name, reason) in also {
        builder = builder.unavailable_connector(*name, *reason);
    }
    builder.build()
}

#[tokio::test(flavor = "current_thread")]
async fn an_unavailable_connector_is_a_global_whose_calls_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(dir.path(), &[("github", "cannot reach api.github.com")]).unwrap();
    let description = runtime.tool().description;
    assert!(
        description.contains(
            "- github: unavailable, it failed to start (cannot reach api.github.com); every call on it throws\n"
        ),
        "{description}"
    );
    let outcome = runtime
        .call("async () => { try { await github.list_repos() } catch (e) { return e.message } }")
        .await
        .unwrap();
    let Outcome::Completed { result, .. } = &outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(
        result,
        &json!("connector github failed to start: cannot reach api.github.com")
    );
    // Describing it says why too.
    let described = runtime.describe("github.list_repos").await.unwrap();
    assert_eq!(
        described.unwrap_err(),
        "connector github failed to start: cannot reach api.github.com"
    );
    // The connectors that did start work as ever.
    let outcome = runtime
        .call("async () => probe.read({ a: 1 })")
        .await
        .unwrap();
    assert!(matches!(outcome, Outcome::Completed { .. }), "{outcome:?}");
}

#[test]
fn an_unavailable_connector_keeps_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let Err(RuntimeError::InvalidConnector(message)) = runtime(dir.path(), &[("probe", "boom")])
    else {
        panic!("a second connector named probe was accepted");
    };
    assert!(message.contains("probe"), "{message}");
}
