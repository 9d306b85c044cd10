//! The library alone behaves: the control API's key routes and the MCP endpoint, served by
//! `router()` in process (`tower::ServiceExt::oneshot`), with no binary and no socket.

mod common;

use codemode_server::{router, ServerOptions};
use common::{error_of, runtime, Answer, Call};
use serde_json::{json, Value};

#[tokio::test]
async fn a_run_pauses_is_listed_shown_and_approved() {
    let dir = tempfile::tempdir().unwrap();
    let app = router(runtime(dir.path()), ServerOptions::default());

    let read = Call::new("POST", "/api/run")
        .json(
            json!({"code": "const n = await notes.list({}); console.log(n.length); return n[0];"}),
        )
        .send(&app)
        .await;
    assert_eq!(read.status, 200, "{:?}", read.body);
    assert_eq!(read.body["status"], "completed");
    assert_eq!(read.body["result"], "buy milk");
    assert_eq!(read.body["logs"], json!(["2"]));

    let write = Call::new("POST", "/api/run")
        .json(json!({"code": "return await notes.add({ text: 'water plants' })"}))
        .send(&app)
        .await;
    assert_eq!(write.body["status"], "paused", "{:?}", write.body);
    let id = write.body["executionId"].as_str().unwrap().to_string();
    assert_eq!(write.body["pending"][0]["method"], "add");

    let list = Call::new("GET", "/api/executions").send(&app).await;
    assert_eq!(list.status, 200);
    let statuses: Vec<(&str, &str)> = list
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["id"].as_str().unwrap(), e["status"].as_str().unwrap()))
        .collect();
    assert_eq!(statuses.len(), 2, "{statuses:?}");
    assert_eq!(statuses[0], (id.as_str(), "paused"), "newest first");
    assert_eq!(statuses[1].1, "completed");

    let shown = Call::new("GET", &format!("/api/executions/{id}"))
        .send(&app)
        .await;
    assert_eq!(shown.body["status"], "paused");
    assert_eq!(
        shown.body["log"][0]["args"],
        json!({"text": "water plants"})
    );

    let approved = Call::new("POST", &format!("/api/executions/{id}/approve"))
        .json(json!({}))
        .send(&app)
        .await;
    assert_eq!(approved.status, 200, "{:?}", approved.body);
    assert_eq!(approved.body["status"], "completed");
    assert_eq!(approved.body["result"], json!({"added": "water plants"}));

    let missing = Call::new("GET", "/api/executions/no-such-id")
        .send(&app)
        .await;
    assert_eq!(missing.status, 404);
    assert!(
        error_of(&missing).contains("no-such-id"),
        "{:?}",
        missing.body
    );
}

/// The JSON-RPC message of an MCP answer: the body itself, or the `data:` event that
/// carries a message with an id (a Streamable HTTP answer may be an event stream).
fn rpc(a: &Answer) -> Value {
    match &a.body {
        Value::String(events) => events
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m.get("id").is_some())
            .unwrap_or_else(|| panic!("no JSON-RPC answer in {events:?}")),
        v => v.clone(),
    }
}

/// A POST of `message` to `/mcp` in `session` (none: the session starts here).
async fn mcp(app: &axum::Router, session: Option<&str>, message: Value) -> Answer {
    let mut call = Call::new("POST", "/mcp")
        .header("accept", "application/json, text/event-stream")
        .json(message);
    if let Some(s) = session {
        call = call
            .header("mcp-session-id", s)
            .header("mcp-protocol-version", "2025-06-18");
    }
    call.send(app).await
}

#[tokio::test]
async fn mcp_initializes_lists_the_one_tool_and_calls_it() {
    let dir = tempfile::tempdir().unwrap();
    let app = router(runtime(dir.path()), ServerOptions::default());

    let init = mcp(
        &app,
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "in-process", "version": "1"}}}),
    )
    .await;
    assert_eq!(init.status, 200, "{:?}", init.body);
    let session = init.headers["mcp-session-id"].to_str().unwrap().to_string();
    let info = rpc(&init);
    assert_eq!(info["result"]["serverInfo"]["name"], "codemode", "{info}");
    assert!(
        info["result"]["capabilities"]["tools"].is_object(),
        "{info}"
    );
    let initialized = mcp(
        &app,
        Some(&session),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    assert!(initialized.status.is_success(), "{:?}", initialized.status);

    let listed = rpc(&mcp(
        &app,
        Some(&session),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    )
    .await);
    let tools = listed["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1, "{listed}");
    assert_eq!(tools[0]["name"], "codemode");
    let description = tools[0]["description"].as_str().unwrap();
    assert!(description.contains("notes"), "{description}");

    let called = rpc(&mcp(
        &app,
        Some(&session),
        json!({"jsonrpc": "2.0", "id": 3,
        "method": "tools/call", "params": {"name": "codemode",
        "arguments": {"code": "return (await notes.list({})).length"}}}),
    )
    .await);
    let result = &called["result"];
    assert!(!result["isError"].as_bool().unwrap_or(false), "{called}");
    assert_eq!(
        result["structuredContent"]["status"], "completed",
        "{called}"
    );
    assert_eq!(result["structuredContent"]["result"], 2, "{called}");

    // An error reaches the model with its stable code and whether a retry may help, in the
    // structured content and in the text.
    let failed = rpc(&mcp(
        &app,
        Some(&session),
        json!({"jsonrpc": "2.0", "id": 5,
        "method": "tools/call", "params": {"name": "codemode",
        "arguments": {"code": "return await notes.lst({})"}}}),
    )
    .await);
    let result = &failed["result"];
    assert_eq!(result["isError"], true, "{failed}");
    assert_eq!(result["structuredContent"]["code"], "NOT_FOUND", "{failed}");
    assert_eq!(result["structuredContent"]["retryable"], false, "{failed}");
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("\"code\":\"NOT_FOUND\""), "{text}");
    assert!(text.contains("Did you mean notes.list?"), "{text}");

    // The runs are the runtime's like any other: the control API lists them.
    let list = Call::new("GET", "/api/executions").send(&app).await;
    assert_eq!(
        list.body.as_array().map(Vec::len),
        Some(2),
        "{:?}",
        list.body
    );

    let unknown = rpc(&mcp(
        &app,
        Some(&session),
        json!({"jsonrpc": "2.0", "id": 4,
        "method": "tools/call", "params": {"name": "other", "arguments": {}}}),
    )
    .await);
    let message = unknown["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("the only tool is \"codemode\""),
        "{unknown}"
    );
}
