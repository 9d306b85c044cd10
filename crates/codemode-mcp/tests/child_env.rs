//! A stdio server gets a minimal environment plus what its configuration names: codemode's own
//! secrets never reach it, so a tool that prints its environment cannot hand them to model code.
//!
//! One test in its own binary: it sets variables of this process before any thread starts.

mod support;

use codemode::Connector;
use codemode_mcp::{EnvValue, McpConfig, McpConnector, McpTransport};
use serde_json::{json, Value};
use support::{ctx, TEST_SERVER};

const SERVER_SECRET: &str = "server-bearer-7f3a";
const UNRELATED_SECRET: &str = "aws-key-91bc";
const GITHUB_SECRET: &str = "ghp-for-the-server-5d2e";

fn configure(transport: &mut McpTransport, cwd: Option<&std::path::Path>) {
    let McpTransport::Stdio { env, cwd: dir, .. } = transport else {
        unreachable!("stdio")
    };
    env.insert("MODE".into(), EnvValue::from("ro"));
    env.insert(
        "GITHUB_TOKEN".into(),
        EnvValue::FromEnv("CODEMODE_TEST_GH_TOKEN".into()),
    );
    *dir = cwd.map(Into::into);
}

fn assert_minimal(env: &Value, who: &str) {
    let env = env.as_object().unwrap_or_else(|| panic!("{who}: {env}"));
    assert!(!env.contains_key("CODEMODE_TOKEN"), "{who}: {env:?}");
    assert!(!env.contains_key("AWS_SECRET_ACCESS_KEY"), "{who}: {env:?}");
    let text = serde_json::to_string(env).unwrap();
    for secret in [SERVER_SECRET, UNRELATED_SECRET, GITHUB_SECRET] {
        assert!(!text.contains(secret), "{who} saw {secret}: {text}");
    }
    assert_eq!(env["MODE"], json!("ro"), "{who}: a literal is passed");
    // The referenced secret reaches the server, and is redacted from what the model sees.
    assert_eq!(env["GITHUB_TOKEN"], json!("[redacted]"), "{who}");
    assert!(env.contains_key("PATH"), "{who}: PATH is passed");
}

#[test]
fn secrets_of_the_host_do_not_reach_the_server() {
    std::env::set_var("CODEMODE_TOKEN", SERVER_SECRET);
    std::env::set_var("AWS_SECRET_ACCESS_KEY", UNRELATED_SECRET);
    std::env::set_var("CODEMODE_TEST_GH_TOKEN", GITHUB_SECRET);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let mut config = McpConfig::new(
            "items",
            McpTransport::stdio(TEST_SERVER, Vec::<String>::new()),
        );
        configure(&mut config.transport, Some(dir.path()));
        let c = McpConnector::connect(config).await.unwrap();
        let out = c.execute("env", json!({}), ctx(0)).await.unwrap();
        assert_minimal(&out["env"], "test server");
        let names: Vec<&String> = out["env"].as_object().unwrap().keys().collect();
        let allowed = codemode_mcp::INHERITED_ENV;
        assert!(
            names
                .iter()
                .all(|n| allowed.contains(&n.as_str()) || *n == "MODE" || *n == "GITHUB_TOKEN"),
            "only the minimal set and the configured variables: {names:?}"
        );
        let cwd = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(
            out["cwd"],
            json!(cwd.to_string_lossy()),
            "cwd is configured"
        );
        c.shutdown().await;

        if let Some(bin) = support::everything() {
            let mut config = McpConfig::new("everything", McpTransport::stdio(bin, ["stdio"]));
            configure(&mut config.transport, None);
            let c = McpConnector::connect(config).await.unwrap();
            let env = c.execute("get_env", json!({}), ctx(0)).await.unwrap();
            assert_minimal(&env, "server-everything");
            c.shutdown().await;
        }
    });
}
