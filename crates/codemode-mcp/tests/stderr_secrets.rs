//! A stdio server's stderr is scrubbed of the connector's secrets before it is logged or
//! shown: a server that echoes the token it was given (raw, base64, percent-encoded) leaves
//! `[redacted]` in the logs and in the error a person reads, never the token.
//!
//! One test in its own binary: it sets a variable of this process before any thread starts,
//! and installs the process's tracing subscriber.

use codemode_mcp::{EnvValue, McpConfig, McpConnector, McpTransport};
use std::io::Write;
use std::sync::{Arc, Mutex};

const SECRET: &str = "ghp-stderr-secret/9c1e+4f";

/// Everything logged, as text.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

#[test]
fn a_secret_the_server_echoes_on_stderr_is_scrubbed_from_logs_and_errors() {
    std::env::set_var("CODEMODE_TEST_STDERR_TOKEN", SECRET);
    let captured = Captured::default();
    let writer = captured.clone();
    tracing::subscriber::set_global_default(
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish(),
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // Prints the token on stderr in three forms, then never speaks MCP: the handshake times
    // out, with the stderr lines in its error.
    let script = r#"echo "token=$TOKEN" >&2
echo "b64=$(printf %s "$TOKEN" | base64)" >&2
echo "url=$(printf %s "$TOKEN" | sed 's|/|%2F|g; s|+|%2B|g')" >&2
echo "done" >&2
exec sleep 30"#;
    let mut config = McpConfig::new("leaky", McpTransport::stdio("sh", ["-c", script]));
    let McpTransport::Stdio { env, .. } = &mut config.transport else {
        unreachable!("stdio")
    };
    env.insert(
        "TOKEN".into(),
        EnvValue::FromEnv("CODEMODE_TEST_STDERR_TOKEN".into()),
    );
    config.startup_timeout_ms = 3_000;
    let err = rt
        .block_on(McpConnector::connect(config))
        .expect_err("a server that never answers fails the handshake")
        .to_string();
    let percent = SECRET.replace('/', "%2F").replace('+', "%2B");
    let base64 = "Z2hwLXN0ZGVyci1zZWNyZXQvOWMxZSs0Zg==";
    assert!(
        err.contains("token=[redacted]") && err.contains("done"),
        "the stderr lines are in the error, scrubbed: {err}"
    );
    let logs = captured.text();
    assert!(
        logs.contains("server stderr: token=[redacted]") && logs.contains("server stderr: done"),
        "the stderr lines are logged, scrubbed: {logs}"
    );
    for (what, text) in [("the error", &err), ("the logs", &logs)] {
        for form in [SECRET, base64, percent.as_str()] {
            assert!(!text.contains(form), "{what} hold {form}: {text}");
        }
    }
}
