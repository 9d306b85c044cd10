//! `transform_result` reshapes what the model sees: it may be async; one that fails (an
//! error or a panic) leaves the model the untransformed result cut to the result budget, with
//! a log line saying why; the stored execution keeps the original either way.

use codemode::{Outcome, Runtime, RuntimeBuilder};
use serde_json::{json, Value};
use std::sync::Arc;

fn builder(dir: &tempfile::TempDir) -> RuntimeBuilder {
    let store = codemode_sqlite::SqliteStore::open(dir.path().join("t.db")).unwrap();
    let executor = codemode_quickjs::QuickJsExecutor::new(Default::default());
    Runtime::builder(Arc::new(store), Arc::new(executor))
}

async fn completed(rt: &Runtime, code: &str) -> (Value, Vec<String>, String) {
    match rt.call(code).await.unwrap() {
        Outcome::Completed {
            result,
            logs,
            execution_id,
        } => (result, logs, execution_id),
        other => panic!("{other:?}"),
    }
}

const BIG: &str =
    "async () => Array.from({ length: 5000 }, (_, i) => ({ id: i, name: 'item ' + i }))";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_transform_reshapes_the_result_and_the_store_keeps_the_original() {
    let dir = tempfile::tempdir().unwrap();
    let rt = builder(&dir)
        .transform_result_async(|v| async move {
            tokio::task::yield_now().await;
            Ok(json!({ "count": v.as_array().map_or(0, Vec::len) }))
        })
        .build()
        .unwrap();
    let (result, logs, id) = completed(&rt, "async () => [1, 2, 3]").await;
    assert_eq!(result, json!({"count": 3}));
    assert!(logs.is_empty(), "{logs:?}");
    let stored = rt.execution(&id).await.unwrap().unwrap();
    assert_eq!(stored.result, Some(json!([1, 2, 3])));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_transform_gives_the_untransformed_result_cut_to_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let rt = builder(&dir)
        .transform_result_async(|_| async { Err("the summariser is down".to_string()) })
        .build()
        .unwrap();
    let (result, logs, id) = completed(&rt, BIG).await;
    let whole = rt.execution(&id).await.unwrap().unwrap().result.unwrap();
    assert!(
        result.to_string().len() < whole.to_string().len() / 2,
        "cut to the budget"
    );
    assert_eq!(result[0], whole[0], "the untransformed value, not another");
    let last = logs.last().unwrap();
    assert!(
        last.contains("transform failed (the summariser is down)"),
        "{last}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_transform_is_a_failed_one_and_the_runtime_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let rt = builder(&dir)
        .transform_result(|v: Value| {
            if v == json!("boom") {
                panic!("a host bug");
            }
            v
        })
        .build()
        .unwrap();
    let (result, logs, _) = completed(&rt, "async () => 'boom'").await;
    assert_eq!(result, json!("boom"));
    assert!(logs.last().unwrap().contains("it panicked"), "{logs:?}");
    let (result, logs, _) = completed(&rt, "async () => 'fine'").await;
    assert_eq!((result, logs.len()), (json!("fine"), 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stateless_tool_applies_an_async_transform_too() {
    let executor = codemode_quickjs::QuickJsExecutor::new(Default::default());
    let tool = codemode::CodeTool::builder(Arc::new(executor))
        .transform_result_async(|v| async move { Ok(json!({ "wrapped": v })) })
        .build()
        .unwrap();
    match tool.call("async () => 7").await {
        codemode::CodeOutcome::Completed { result, .. } => {
            assert_eq!(result, json!({"wrapped": 7}))
        }
        other => panic!("{other:?}"),
    }
}
