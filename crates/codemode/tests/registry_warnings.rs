//! A tool whose input schema does not compile is left out with a warning instead of failing
//! the runtime; connector warnings reach the host through `Connector::warnings`.

use async_trait::async_trait;
use codemode::{
    CallContext, Connector, Outcome, Runtime, RuntimeError, RustConnector, RustTool, ToolError,
    ToolSpec,
};
use codemode_quickjs::QuickJsExecutor;
use serde_json::{json, Value};
use std::sync::Arc;

/// A connector with one good tool, one whose schema does not compile, and a warning of its own.
struct Mixed;

#[async_trait]
impl Connector for Mixed {
    fn name(&self) -> &str {
        "mixed"
    }

    fn tools(&self) -> Vec<ToolSpec> {
        let mut good = ToolSpec::new("good");
        good.requires_approval = false;
        good.read_only = true;
        let mut bad = ToolSpec::new("bad");
        bad.input_schema = json!({"type": "object", "properties": {"n": {"type": 12}}});
        bad.requires_approval = false;
        vec![bad, good]
    }

    fn warnings(&self) -> Vec<String> {
        vec!["mixed: a tool was renamed".into()]
    }

    async fn execute(&self, method: &str, _: Value, _: CallContext) -> Result<Value, ToolError> {
        Ok(json!({ "ran": method }))
    }
}

fn builder(dir: &tempfile::TempDir) -> codemode::RuntimeBuilder {
    let store = codemode_sqlite::SqliteStore::open(dir.path().join("codemode.db")).unwrap();
    Runtime::builder(Arc::new(store), Arc::new(QuickJsExecutor::default()))
}

#[tokio::test]
async fn a_tool_with_a_bad_schema_is_left_out_and_the_rest_runs() {
    let dir = tempfile::tempdir().unwrap();
    let plain = RustConnector::new("plain")
        .tool(RustTool::new("ping", |_, _| async { Ok(json!("pong")) }).read_only());
    let runtime = builder(&dir)
        .connector(Mixed)
        .connector(plain)
        .build()
        .unwrap();
    let warnings = runtime.warnings();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert_eq!(warnings[0], "mixed: a tool was renamed");
    assert!(
        warnings[1].starts_with("connector `mixed`: tool `bad` is left out")
            && warnings[1].contains("not valid JSON Schema"),
        "{warnings:?}"
    );
    // The left-out tool is no method (`in` probes; reading it throws naming the methods).
    let code = "async () => [await mixed.good({}), await plain.ping({}), 'bad' in mixed]";
    match runtime.call(code).await.unwrap() {
        Outcome::Completed { result, .. } => {
            assert_eq!(result, json!([{"ran": "good"}, "pong", false]))
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn connector_warnings_default_to_none() {
    let plain: Arc<dyn Connector> = Arc::new(
        RustConnector::new("plain")
            .tool(RustTool::new("ping", |_, _| async { Ok(json!("pong")) }).read_only()),
    );
    assert!(plain.warnings().is_empty());
    let dir = tempfile::tempdir().unwrap();
    let runtime = builder(&dir).connector_arc(plain).build().unwrap();
    assert!(runtime.warnings().is_empty());
}

#[tokio::test]
async fn reexecute_with_approval_is_still_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let gated = RustConnector::new("gated").tool(
        RustTool::new("write", |_, _| async { Ok(json!(null)) })
            .requires_approval(true)
            .reexecute(),
    );
    let err = match builder(&dir).connector(gated).build() {
        Err(e) => e,
        Ok(_) => panic!("a reexecute tool that requires approval must be refused"),
    };
    assert!(matches!(err, RuntimeError::InvalidConnector(_)), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("gated.write") && text.contains("requires_approval = false"),
        "{text}"
    );
}

/// A schema the load-time check passes but that does not compile (a `$ref` the validator
/// cannot fetch) is compiled at the tool's first call, which fails with an error naming it;
/// nothing runs, and the other tools are unaffected.
#[tokio::test]
async fn a_schema_that_fails_to_compile_at_the_first_call_names_the_tool() {
    let dir = tempfile::tempdir().unwrap();
    let mut remote = RustTool::new("remote", |_, _| async { Ok(json!("ran")) }).read_only();
    remote = remote.input_schema(json!({"$ref": "https://schemas.invalid/input.json"}));
    let plain = RustConnector::new("plain")
        .tool(remote)
        .tool(RustTool::new("ping", |_, _| async { Ok(json!("pong")) }).read_only());
    let runtime = builder(&dir).connector(plain).build().unwrap();
    assert!(runtime.warnings().is_empty(), "{:?}", runtime.warnings());
    let outcome = runtime
        .call("async () => { try { return await plain.remote({}) } catch (e) { return [String(e), await plain.ping({})] } }")
        .await
        .unwrap();
    let Outcome::Completed { result, .. } = outcome else {
        panic!("{outcome:?}")
    };
    let message = result[0].as_str().unwrap();
    assert!(
        message.contains("plain.remote") && message.contains("does not compile"),
        "{message}"
    );
    assert_eq!(result[1], "pong");
}
