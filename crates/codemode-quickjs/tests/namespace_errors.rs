//! A namespace answers a name that is not a method with an error naming the connector, the
//! name and the closest methods; an unavailable connector's every name says why; and each
//! `codemode.run` call carries the chain of snippets it was made from, worked out by the
//! executor. Both executors, in-process and sandbox process.

mod common;

use codemode::{ExecuteRequest, Executor, HostReply, Namespace, PassEnd, SDK_NAMESPACE};
use common::{process_executor, TestHost};
use serde_json::{json, Value};

fn namespaces() -> Vec<Namespace> {
    vec![
        Namespace {
            name: "tasks".into(),
            methods: vec!["list_tasks".into(), "create_task".into()],
            ..Default::default()
        },
        Namespace {
            name: "gh".into(),
            unavailable: Some("cannot reach the server".into()),
            ..Default::default()
        },
    ]
}

async fn outcome(executor: &dyn Executor, code: &str) -> PassEnd {
    let host = TestHost::new(|call| {
        if call.namespace == SDK_NAMESPACE && call.method == "run" {
            let name = call.args["name"].as_str().unwrap_or_default().to_string();
            // A snippet that runs `inner` once, from inside itself, then returns what it saw.
            return match name.as_str() {
                "outer" => HostReply::RunCode {
                    code: "async () => globalThis.codemode.run('inner', {})".into(),
                    input: Value::Null,
                },
                _ => HostReply::Value(call.args.clone()),
            };
        }
        HostReply::Value(json!("ok"))
    });
    let request = ExecuteRequest {
        code: code.to_string(),
        namespaces: namespaces(),
        clock: Default::default(),
    };
    executor.execute(request, host).await.end
}

async fn check(executor: &dyn Executor) {
    let failed = |end: PassEnd| match end {
        PassEnd::Failed(message) => message,
        other => panic!("{other:?}"),
    };
    let message = failed(outcome(executor, "async () => tasks.create_tasks({})").await);
    assert!(
        message.starts_with("TypeError: tasks.create_tasks is not a method of connector tasks. Did you mean tasks.create_task?"),
        "{message}"
    );
    let message = failed(outcome(executor, "async () => gh.list()").await);
    assert!(
        message.starts_with("Error: connector gh failed to start: cannot reach the server"),
        "{message}"
    );
    // The model's own call carries an empty chain, whatever the code passes; the snippet's
    // call carries the snippet.
    let end = outcome(
        executor,
        "async () => [await codemode.run.call(['forged'], 'plain', {}), await codemode.run('outer', {})]",
    )
    .await;
    let PassEnd::Returned(value) = end else {
        panic!("{end:?}");
    };
    assert_eq!(value[0]["chain"], json!([]), "{value}");
    assert_eq!(value[1]["chain"], json!(["outer"]), "{value}");
    assert_eq!(value[1]["name"], json!("inner"), "{value}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process() {
    check(&codemode_quickjs::QuickJsExecutor::default()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_sandbox_process() {
    let executor = process_executor(Default::default(), |o| o).await;
    check(&executor).await;
}
