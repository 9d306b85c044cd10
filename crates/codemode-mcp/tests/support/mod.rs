//! Helpers: the test server's path, call contexts, process checks, fixtures.
#![allow(dead_code)]

use codemode::CallContext;
use codemode_mcp::{McpConfig, McpTransport};
use std::time::{Duration, Instant};

/// The test server built from `test-server/main.rs`.
pub const TEST_SERVER: &str = env!("CARGO_BIN_EXE_codemode-mcp-test-server");

/// A config for the test server with `args`.
pub fn test_server(args: &[&str]) -> McpConfig {
    McpConfig::new(
        "items",
        McpTransport::stdio(TEST_SERVER, args.iter().copied()),
    )
}

/// A call context.
pub fn ctx(seq: u64) -> CallContext {
    CallContext {
        execution_id: "exec-1".into(),
        seq,
    }
}

/// Whether a process is alive (not gone, not a zombie).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

/// Waits up to `limit` for `pid` to be gone.
pub async fn gone_within(pid: u32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    !alive(pid)
}

/// `mcp-server-everything` from the fixtures, or `None` (after saying so) when not installed.
pub fn everything() -> Option<String> {
    codemode_testkit::npm_bin("mcp-server-everything").map(|b| b.to_string_lossy().into_owned())
}
