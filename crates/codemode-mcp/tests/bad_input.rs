//! Servers that cannot be used: a clear error naming the connector and the cause.

mod support;

use codemode_mcp::{EnvValue, McpConfig, McpConnector, McpTransport};
use std::time::{Duration, Instant};
use support::test_server;

async fn error_of(config: McpConfig) -> String {
    McpConnector::connect(config).await.unwrap_err().to_string()
}

#[tokio::test]
async fn a_command_that_does_not_exist() {
    let err = error_of(McpConfig::new(
        "ghost",
        McpTransport::stdio("/nonexistent/mcp-server", ["--x"]),
    ))
    .await;
    assert!(
        err.starts_with("MCP connector `ghost`: cannot start `/nonexistent/mcp-server --x`"),
        "{err}"
    );
    assert!(err.contains("No such file"), "{err}");
}

#[tokio::test]
async fn a_server_that_exits_at_once() {
    let started = Instant::now();
    let err = error_of(test_server(&["--exit-now"])).await;
    assert!(
        err.contains("`items`") && err.contains("did not complete the MCP handshake"),
        "{err}"
    );
    assert!(
        err.contains("refusing to start: --exit-now"),
        "stderr is quoted: {err}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn a_server_that_speaks_garbage() {
    let mut config = test_server(&["--garbage"]);
    config.startup_timeout_ms = 1_500;
    let err = error_of(config).await;
    assert!(
        err.contains("`items`") && err.contains("did not complete the MCP handshake"),
        "{err}"
    );
}

#[tokio::test]
async fn a_url_that_refuses_connections() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut config = McpConfig::new(
        "remote",
        McpTransport::http(format!("http://127.0.0.1:{port}/mcp")),
    );
    config.startup_timeout_ms = 5_000;
    let err = error_of(config).await;
    assert!(
        err.contains("`remote`") && err.contains(&format!("127.0.0.1:{port}")),
        "{err}"
    );
}

#[tokio::test]
async fn a_missing_token_variable() {
    let config = McpConfig::new(
        "remote",
        McpTransport::Http {
            url: "http://127.0.0.1:9/mcp".into(),
            headers: Default::default(),
            bearer_token_env: Some("CODEMODE_TEST_NEVER_SET_MCP_TOKEN".into()),
        },
    );
    let err = error_of(config).await;
    assert_eq!(
        err,
        "MCP connector `remote`: environment variable CODEMODE_TEST_NEVER_SET_MCP_TOKEN (bearer token) is not set"
    );
}

#[tokio::test]
async fn an_unset_secret_reference_names_the_variable() {
    let mut config = test_server(&[]);
    if let McpTransport::Stdio { env, .. } = &mut config.transport {
        env.insert(
            "GITHUB_TOKEN".into(),
            EnvValue::FromEnv("CODEMODE_TEST_NEVER_SET_CHILD_TOKEN".into()),
        );
    }
    let err = error_of(config).await;
    assert_eq!(
        err,
        "MCP connector `items`: environment variable CODEMODE_TEST_NEVER_SET_CHILD_TOKEN (the server's GITHUB_TOKEN) is not set"
    );
}

#[tokio::test]
async fn a_working_directory_that_does_not_exist() {
    let mut config = test_server(&[]);
    if let McpTransport::Stdio { cwd, .. } = &mut config.transport {
        *cwd = Some("/nonexistent/mcp-dir".into());
    }
    let err = error_of(config).await;
    assert!(
        err.starts_with("MCP connector `items`: cannot start `")
            && err.contains("the working directory /nonexistent/mcp-dir does not exist"),
        "{err}"
    );
}

#[tokio::test]
async fn a_rename_that_is_not_an_identifier() {
    let mut config = test_server(&[]);
    config.rename.insert("get_item".into(), "get-it".into());
    let err = error_of(config).await;
    assert!(
        err.starts_with("MCP connector `items`: rename: \"get-it\" (for tool \"get_item\")"),
        "{err}"
    );
}

#[tokio::test]
async fn a_bad_connector_name() {
    let err = error_of(McpConfig::new(
        "codemode",
        McpTransport::stdio(support::TEST_SERVER, Vec::<String>::new()),
    ))
    .await;
    assert!(err.contains("platform SDK"), "{err}");
}

#[tokio::test]
async fn other_connectors_keep_working() {
    let bad = McpConnector::connect(test_server(&["--exit-now"]));
    let dead = McpConnector::connect(McpConfig::new(
        "ghost",
        McpTransport::stdio("/nonexistent/mcp-server", Vec::<String>::new()),
    ));
    let good = McpConnector::connect(test_server(&[]));
    let (bad, dead, good) = tokio::join!(bad, dead, good);
    assert!(bad.is_err());
    let dead = dead.unwrap_err().to_string();
    assert!(dead.contains("/nonexistent/mcp-server"), "{dead}");
    use codemode::Connector;
    let good = good.unwrap();
    let v = good
        .execute("plain", serde_json::json!({}), support::ctx(0))
        .await
        .unwrap();
    assert_eq!(v, serde_json::json!("just words"));
}

#[test]
fn config_is_strict() {
    let err = serde_json::from_value::<McpConfig>(serde_json::json!({
        "name": "x", "command": "y", "argv": []
    }))
    .unwrap_err();
    assert!(err.to_string().contains("argv"), "{err}");
    let ok: McpConfig = serde_json::from_value(serde_json::json!({
        "name": "x", "url": "http://h/mcp", "bearer_token_env": "T",
        "approval": {"allow": ["a*"]},
        "reverts": [{"tool": "a", "revert": "b", "args": {"id": "${result.id}"}}]
    }))
    .unwrap();
    assert_eq!(ok.settings.reverts.len(), 1);
    let stdio: McpConfig = serde_json::from_value(serde_json::json!({
        "name": "x", "command": "y", "cwd": "/srv",
        "env": {"MODE": "ro", "GITHUB_TOKEN": {"env": "MY_GH_TOKEN"}},
        "rename": {"old-name": "new_name"}
    }))
    .unwrap();
    let McpTransport::Stdio { env, .. } = &stdio.transport else {
        panic!("stdio")
    };
    assert_eq!(env["MODE"], EnvValue::Literal("ro".into()));
    assert_eq!(env["GITHUB_TOKEN"], EnvValue::FromEnv("MY_GH_TOKEN".into()));
    assert_eq!(stdio.rename["old-name"], "new_name");
}
