//! The connector against a real rmcp server spawned as a process (test-server/main.rs).

mod support;

use codemode::policy::{ApprovalPolicy, RevertRule};
use codemode::Connector;
use codemode_mcp::McpConnector;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use support::{ctx, test_server};

#[tokio::test]
async fn tools_pages_and_approval_from_annotations() {
    // Three tools a page: listing must follow the cursor to the end.
    let c = McpConnector::connect(test_server(&["--page-size", "3"]))
        .await
        .unwrap();
    let tools = c.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "get_item",
            "list_items",
            "create_item",
            "delete_item",
            "fail",
            "crash",
            "slow",
            "plain",
            "mixed",
            "pid",
            "child_pid",
            "env"
        ]
    );
    let by = |n: &str| tools.iter().find(|t| t.name == n).unwrap().clone();
    assert!(by("get_item").read_only && !by("get_item").requires_approval);
    // readOnlyHint: false and no annotation at all both fail closed.
    assert!(by("create_item").requires_approval && !by("create_item").read_only);
    assert!(by("delete_item").requires_approval);
    assert_eq!(by("get_item").input_schema["required"], json!(["id"]));
    assert_eq!(by("get_item").description.as_deref(), Some("Get one item"));
    assert_eq!(c.instructions().as_deref(), Some("A test item store."));
    c.shutdown().await;

    let mut config = test_server(&[]);
    config.settings.approval = ApprovalPolicy {
        allow: vec!["create_*".into()],
        require: vec!["list_items".into()],
    };
    config.instructions = Some("Use me for items.".into());
    let c = McpConnector::connect(config).await.unwrap();
    let tools = c.tools();
    let by = |n: &str| tools.iter().find(|t| t.name == n).unwrap().clone();
    assert!(!by("create_item").requires_approval);
    assert!(by("list_items").requires_approval);
    assert!(by("delete_item").requires_approval);
    assert_eq!(c.instructions().as_deref(), Some("Use me for items."));
}

#[tokio::test]
async fn results_errors_and_content_shapes() {
    let c = McpConnector::connect(test_server(&[])).await.unwrap();
    let created = c
        .execute("create_item", json!({"name": "pen"}), ctx(0))
        .await
        .unwrap();
    assert_eq!(
        created,
        json!({"id": 1, "name": "pen"}),
        "JSON text is parsed"
    );
    let got = c
        .execute("get_item", json!({"id": 1}), ctx(1))
        .await
        .unwrap();
    assert_eq!(got, json!({"id": 1, "name": "pen"}), "structured content");
    let list = c.execute("list_items", json!({}), ctx(2)).await.unwrap();
    assert_eq!(list, json!([{"id": 1, "name": "pen"}]));
    assert_eq!(
        c.execute("plain", Value::Null, ctx(3)).await.unwrap(),
        json!("just words")
    );
    let mixed = c.execute("mixed", json!({}), ctx(4)).await.unwrap();
    assert_eq!(mixed[0]["text"], "a red dot");
    assert_eq!(mixed[1]["type"], "image");
    let err = c.execute("fail", json!({}), ctx(5)).await.unwrap_err();
    assert_eq!(err.0, "it failed on purpose");
    let err = c
        .execute("get_item", json!({"id": 9}), ctx(6))
        .await
        .unwrap_err();
    assert_eq!(err.0, "no item 9");
    let err = c.execute("nope", json!({}), ctx(7)).await.unwrap_err();
    assert!(err.0.contains("no method"), "{err}");
    let err = c.execute("get_item", json!([1]), ctx(8)).await.unwrap_err();
    assert!(err.0.contains("one object argument"), "{err}");
}

#[tokio::test]
async fn reverts_from_configuration() {
    let mut config = test_server(&[]);
    config.settings.reverts =
        vec![RevertRule::new("create_item", "delete_item", json!({"id": "${result.id}"})).unwrap()];
    let c = McpConnector::connect(config).await.unwrap();
    assert!(
        c.tools()
            .iter()
            .find(|t| t.name == "create_item")
            .unwrap()
            .has_revert
    );
    let args = json!({"name": "cup"});
    let result = c
        .execute("create_item", args.clone(), ctx(0))
        .await
        .unwrap();
    c.revert("create_item", args.clone(), result.clone(), ctx(0))
        .await
        .unwrap();
    assert_eq!(
        c.execute("list_items", json!({}), ctx(1)).await.unwrap(),
        json!([])
    );
    let err = c
        .revert("create_item", args, result, ctx(0))
        .await
        .unwrap_err();
    assert!(
        err.0
            .contains("revert of items.create_item by delete_item: no item 1"),
        "{err}"
    );

    let mut config = test_server(&[]);
    config.settings.reverts =
        vec![RevertRule::new("create_item", "remove_item", json!({})).unwrap()];
    let err = McpConnector::connect(config).await.unwrap_err().to_string();
    assert!(
        err.contains("`items`") && err.contains("remove_item"),
        "{err}"
    );
}

#[tokio::test]
async fn a_crash_mid_call_fails_that_call_and_the_server_comes_back() {
    let c = McpConnector::connect(test_server(&[])).await.unwrap();
    let first = c.execute("pid", json!({}), ctx(0)).await.unwrap();
    let err = c.execute("crash", json!({}), ctx(1)).await.unwrap_err();
    assert!(
        err.0
            .contains("MCP server `items` stopped during the call to crash"),
        "{err}"
    );
    assert!(
        err.0.contains("crashing on purpose"),
        "stderr is quoted: {err}"
    );
    // The next call runs on a restarted server.
    let second = c.execute("pid", json!({}), ctx(2)).await.unwrap();
    assert_ne!(first, second);
    assert!(c.restarts() >= 1);
    // The old process is gone.
    let old = first.as_u64().unwrap() as u32;
    assert!(support::gone_within(old, Duration::from_secs(5)).await);
}

#[tokio::test]
async fn a_dead_server_is_restarted_without_waiting_for_a_call() {
    let c = McpConnector::connect(test_server(&[])).await.unwrap();
    let pid = c.pid().await.unwrap();
    // Kill it from outside.
    std::process::Command::new("kill")
        .arg("-9")
        .arg(pid.to_string())
        .status()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.restarts() == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(c.restarts(), 1);
    let new_pid = c.pid().await.unwrap();
    assert_ne!(pid, new_pid);
    assert_eq!(
        c.execute("plain", json!({}), ctx(0)).await.unwrap(),
        json!("just words")
    );
}

#[tokio::test]
async fn slow_calls_time_out_and_others_go_on() {
    let mut config = test_server(&[]);
    // Wide margins: the machine running the tests may be busy.
    config.settings.timeout_ms = Some(1_500);
    let c = McpConnector::connect(config).await.unwrap();
    let started = Instant::now();
    let err = c
        .execute("slow", json!({"ms": 5000}), ctx(0))
        .await
        .unwrap_err();
    assert_eq!(err.0, "items.slow timed out after 1500 ms");
    assert!(started.elapsed() < Duration::from_secs(4));
    // Calls run concurrently: a slow one does not hold up a fast one.
    let timed = |method: &'static str, args: Value, seq: u64| {
        let c = &c;
        async move {
            let t = Instant::now();
            let v = c.execute(method, args, ctx(seq)).await;
            (v, t.elapsed())
        }
    };
    let (slow, fast) = tokio::join!(
        timed("slow", json!({"ms": 200}), 1),
        timed("plain", json!({}), 2)
    );
    assert_eq!(slow.0.unwrap(), json!("slept 200 ms"));
    assert_eq!(fast.0.unwrap(), json!("just words"));
    assert!(
        fast.1 < slow.1,
        "fast {:?} waited for slow {:?}",
        fast.1,
        slow.1
    );
}

#[tokio::test]
async fn shutdown_and_drop_leave_no_process_behind() {
    let c = McpConnector::connect(test_server(&["--spawn-child"]))
        .await
        .unwrap();
    let pid = c.pid().await.unwrap();
    let child: u32 = c
        .execute("child_pid", json!({}), ctx(0))
        .await
        .unwrap()
        .as_u64()
        .unwrap() as u32;
    assert!(support::alive(pid) && support::alive(child));
    c.shutdown().await;
    assert!(
        support::gone_within(pid, Duration::from_secs(5)).await,
        "server {pid} survived shutdown"
    );
    assert!(
        support::gone_within(child, Duration::from_secs(5)).await,
        "its child {child} survived"
    );
    let err = c.execute("plain", json!({}), ctx(1)).await.unwrap_err();
    assert!(err.0.contains("shut down"), "{err}");

    let c = McpConnector::connect(test_server(&["--spawn-child"]))
        .await
        .unwrap();
    let pid = c.pid().await.unwrap();
    let child: u32 = c
        .execute("child_pid", json!({}), ctx(0))
        .await
        .unwrap()
        .as_u64()
        .unwrap() as u32;
    drop(c);
    assert!(
        support::gone_within(pid, Duration::from_secs(5)).await,
        "server {pid} survived drop"
    );
    assert!(
        support::gone_within(child, Duration::from_secs(5)).await,
        "its child {child} survived drop"
    );
}
