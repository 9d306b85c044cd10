//! The connector against `@modelcontextprotocol/server-everything` (the reference server of
//! the MCP project), over stdio and over Streamable HTTP.

mod support;

use codemode::Connector;
use codemode_mcp::{McpConfig, McpConnector, McpTransport};
use serde_json::json;
use std::time::{Duration, Instant};
use support::ctx;

async fn exercise(c: &McpConnector) {
    let tools = c.tools();
    let by = |n: &str| {
        tools
            .iter()
            .find(|t| t.name == n)
            .unwrap_or_else(|| {
                panic!(
                    "no {n} in {:?}",
                    tools.iter().map(|t| &t.name).collect::<Vec<_>>()
                )
            })
            .clone()
    };
    // Names are sanitised; approval follows readOnlyHint and fails closed otherwise.
    assert!(!by("echo").requires_approval && by("echo").read_only);
    assert!(!by("get_sum").requires_approval);
    assert!(by("toggle_simulated_logging").requires_approval);
    assert!(by("gzip_file_as_resource").requires_approval);
    assert!(by("get_structured_content").output_schema.is_some());

    let echo = c
        .execute("echo", json!({"message": "hi"}), ctx(0))
        .await
        .unwrap();
    assert_eq!(echo, json!("Echo: hi"));
    let sum = c
        .execute("get_sum", json!({"a": 2, "b": 3}), ctx(1))
        .await
        .unwrap();
    assert!(sum.as_str().unwrap().contains('5'), "{sum}");
    let weather = c
        .execute(
            "get_structured_content",
            json!({"location": "Chicago"}),
            ctx(2),
        )
        .await
        .unwrap();
    assert_eq!(
        weather["temperature"], 36,
        "structuredContent first: {weather}"
    );
    let image = c
        .execute("get_tiny_image", json!({}), ctx(3))
        .await
        .unwrap();
    let parts = image.as_array().expect("mixed content keeps its parts");
    assert!(parts.iter().any(|p| p["type"] == "image"), "{image}");
    // Bad arguments: the server's complaint comes back as a catchable error.
    let err = c
        .execute("get_sum", json!({"a": "x"}), ctx(4))
        .await
        .unwrap_err();
    assert!(!err.0.is_empty());
}

#[tokio::test]
async fn over_stdio() {
    let Some(bin) = support::everything() else {
        return;
    };
    let c = McpConnector::connect(McpConfig::new(
        "everything",
        McpTransport::stdio(bin, ["stdio"]),
    ))
    .await
    .unwrap();
    exercise(&c).await;
    let pid = c.pid().await.unwrap();
    c.shutdown().await;
    assert!(support::gone_within(pid, Duration::from_secs(5)).await);
}

/// Kills the HTTP server when the test ends, however it ends.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn over_streamable_http() {
    let Some(bin) = support::everything() else {
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _server = Killed(
        std::process::Command::new(&bin)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "server-everything did not listen on {port}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut transport = McpTransport::http(format!("http://127.0.0.1:{port}/mcp"));
    if let McpTransport::Http { headers, .. } = &mut transport {
        headers.insert("X-Client".into(), "codemode-test".into());
    }
    let c = McpConnector::connect(McpConfig::new("everything", transport))
        .await
        .unwrap();
    exercise(&c).await;
    c.shutdown().await;
}
