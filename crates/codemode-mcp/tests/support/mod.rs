//! Helpers: the test server's path, call contexts, process checks, fixtures.
#![allow(dead_code)]

use codemode::CallContext;
use codemode_mcp::{EnvValue, McpConfig, McpConnector, McpTransport};
use std::collections::BTreeMap;
use std::path::Path;
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

/// Starts each of `servers` (connector name, program in `fixtures/node_modules/.bin`, its
/// arguments, where `{root}` is `root`) over stdio, with its files kept in `root`; `None` when
/// the fixtures are not installed (outside CI: `npm_bin` fails under CI).
pub async fn start_npm_servers(
    servers: &[(&str, &str, &[&str])],
    root: &Path,
) -> Option<Vec<McpConnector>> {
    let mut programs = Vec::new();
    for (name, bin, args) in servers {
        programs.push((*name, codemode_testkit::npm_bin(bin)?, *args));
    }
    let mut connectors = Vec::new();
    for (name, program, args) in programs {
        connectors.push(start_npm_server(name, &program, args, root).await);
    }
    Some(connectors)
}

/// Starts one server over stdio, with its files kept in `root`.
async fn start_npm_server(name: &str, program: &Path, args: &[&str], root: &Path) -> McpConnector {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.replace("{root}", &root.to_string_lossy()))
        .collect();
    let mut env = BTreeMap::new();
    env.insert(
        "MEMORY_FILE_PATH".to_string(),
        EnvValue::Literal(root.join("memory.jsonl").to_string_lossy().into_owned()),
    );
    let transport = McpTransport::Stdio {
        command: program.to_string_lossy().into_owned(),
        args,
        env,
        cwd: Some(root.to_path_buf()),
    };
    McpConnector::connect(McpConfig::new(name, transport))
        .await
        .unwrap_or_else(|e| panic!("{name} starts and lists its tools: {e}"))
}
