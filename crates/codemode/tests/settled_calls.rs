//! Calls and the end of the code: a call that reaches the host after the code settled is
//! answered with the reference's message and never runs. Driven by a scripted executor that
//! keeps the host past its pass, as an engine whose calls travel by message could.

use async_trait::async_trait;
use codemode::{
    ExecuteRequest, ExecuteResult, Executor, Host, HostCall, HostReply, Outcome, PassEnd, Runtime,
    RustConnector, RustTool,
};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Returns at once, handing the host it was given to the test.
struct KeepsTheHost(Arc<Mutex<Option<Arc<dyn Host>>>>);

#[async_trait]
impl Executor for KeepsTheHost {
    async fn execute(&self, _request: ExecuteRequest, host: Arc<dyn Host>) -> ExecuteResult {
        *self.0.lock().unwrap() = Some(host);
        ExecuteResult {
            end: PassEnd::Returned(json!("done")),
            logs: Vec::new(),
        }
    }
}

#[tokio::test]
async fn a_call_that_reaches_the_host_after_the_code_settled_gets_the_reference_message() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(codemode_sqlite::SqliteStore::open(dir.path().join("c.db")).unwrap());
    let kept = Arc::new(Mutex::new(None));
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let notes = RustConnector::new("notes").tool(
        RustTool::new("add", move |args, _ctx| {
            counted.fetch_add(1, Ordering::SeqCst);
            async move { Ok(args) }
        })
        .requires_approval(false),
    );
    let runtime = Runtime::builder(store, Arc::new(KeepsTheHost(kept.clone())))
        .connector(notes)
        .build()
        .unwrap();
    let outcome = runtime.call("return 1").await.unwrap();
    let Outcome::Completed { result, logs, .. } = &outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(result, &json!("done"));
    assert!(logs.is_empty(), "no call was left unawaited: {logs:?}");

    let host = kept
        .lock()
        .unwrap()
        .take()
        .expect("the executor kept the host");
    for (namespace, method) in [("notes", "add"), ("codemode", "step"), ("nope", "x")] {
        let late = HostCall {
            namespace: namespace.into(),
            method: method.into(),
            args: json!({"text": "late"}),
        };
        assert_eq!(
            host.call(late).await,
            HostReply::Throw("the code execution finished before this tool call settled".into()),
            "{namespace}.{method}"
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0, "a late call never runs");
    let log = runtime
        .execution(outcome.execution_id())
        .await
        .unwrap()
        .unwrap()
        .log;
    assert!(log.is_empty(), "a late call is not recorded: {log:?}");
}
